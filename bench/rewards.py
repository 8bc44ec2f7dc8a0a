"""A reward for benchmarks only: every completion gets its own score, so every sample carries gradient.

On the untrained tiny model the task's own rewards are 0 for every completion: every advantage is 0
and an RL step would learn nothing (ngrpo-ray would even skip the learner's work). Comparing steps of
different systems needs the same, full amount of learning work on both sides.
"""

from __future__ import annotations

import hashlib


def text_hash_reward(prompts, completions, **columns) -> list[float]:
    """A deterministic pseudo-random score in [0, 1) per completion text."""
    return [int.from_bytes(hashlib.sha256(str(c).encode()).digest()[:4], "big") / 2**32 for c in completions]


text_hash_reward.reward_range = (0.0, 1.0)

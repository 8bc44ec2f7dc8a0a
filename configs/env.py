"""Multi-turn agent episodes: the policy acts in the task's environment, turn by turn."""

from __future__ import annotations

from pydantic import Field

from configs.base import Section


class EnvConfig(Section):
    """Agent episodes instead of single completions (the task must have an environment, `tasks.env`)."""

    enabled: bool = False
    """Train on episodes: each sample is a whole episode (policy turns, tool observations), its reward
    the environment's trajectory score. Off: single-turn completions, as the task's rows ask."""
    max_turns: int = Field(6, ge=1, le=32)
    """Policy turns per episode; an episode still going after them is counted as truncated."""
    max_context: int = Field(768, ge=64)
    """Tokens an episode may fill (first messages, turns, observations); the episode is truncated when
    its next turn would not fit. Must leave rollout.max_tokens free below rollout.max_model_len."""

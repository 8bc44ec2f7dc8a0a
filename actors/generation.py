"""Sampling across a group of rollout workers, and the held-out eval built on it.

`generate` splits rendered prompts evenly over the workers (in order, so results come back in prompt
order) and flattens their answers; `evaluate` is THE eval of a policy on held-out rows: greedy (or
`temperature`) answers scored by the task's eval table. The coordinator (before and after RL) and
`evaluate.py` (any base model or adapter) both call it, so their tables are the same measurement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster.actor_group import ActorGroup
from contracts.types import Completion, Rollout
from tasks.base import Task


@dataclass
class Generation:
    """The answers to one generate call, in prompt order: groups[i] holds the completions of prompt i."""

    prompt_ids: list[list[int]]
    groups: list[list[Completion]]
    versions: list[int]  # the policy version each worker served

    @classmethod
    def of(cls, rollouts: list[Rollout]) -> Generation:
        """The workers' answers, in worker order, as one generation in prompt order."""
        return cls(prompt_ids=[p for r in rollouts for p in r.prompt_token_ids],
                   groups=[g for r in rollouts for g in r.groups],
                   versions=[r.policy_version for r in rollouts])


def split_evenly(items: list, k: int) -> dict[int, list]:
    """Worker index → its share of `items`, in order (workers with an empty share left out)."""
    shares = [items[i * len(items) // k : (i + 1) * len(items) // k] for i in range(k)]
    return {i: share for i, share in enumerate(shares) if share}


def generate(workers: ActorGroup, prompts: list[str], **sampling: Any) -> Generation:
    """n completions per prompt (`sampling` as `RolloutWorker.generate` takes it)."""
    shares = split_evenly(prompts, len(workers))
    refs = [workers.backend.call(workers.actors[i], "generate", share, **sampling)
            for i, share in shares.items()]
    return Generation.of(workers.get(refs))


def evaluate(task: Task, generate_fn: Callable[..., Generation], tokenizer: Any, rows: list[dict],
             temperature: float = 0.0) -> dict:
    """The task's eval table of the served policy's answers to `rows` (one answer each), sampled with
    `generate_fn(prompts, **sampling)` (`generate` over a group, or the coordinator's roles)."""
    prompts = [task.render_prompt(tokenizer, r) for r in rows]
    gen = generate_fn(prompts, n=1, temperature=temperature, seed=0)
    return task.evaluate(rows, [g[0].text for g in gen.groups])

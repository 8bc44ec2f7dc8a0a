"""What one sampling call over the rollout workers gives back, and how the call is split over them.

`split_evenly` gives each worker its share of the prompts (or episode rows) in order, so that the
answers, joined in worker order (`Generation.of`), come back in prompt order.
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.types import Rollout, Sample


@dataclass
class Generation:
    """The answers to one call, in prompt order: groups[i] holds the samples of prompt (or row) i."""

    groups: list[list[Sample]]
    versions: list[int]  # the policy version each worker served
    peak_rss: int = 0  # the largest peak resident memory of the workers that answered, bytes

    @classmethod
    def of(cls, rollouts: list[Rollout]) -> Generation:
        """The workers' answers, in worker order, as one generation in prompt order."""
        return cls(groups=[g for r in rollouts for g in r.groups],
                   versions=[r.policy_version for r in rollouts],
                   peak_rss=max((r.peak_rss for r in rollouts), default=0))

    @property
    def samples(self) -> list[Sample]:
        """Every sample, flattened group by group."""
        return [s for g in self.groups for s in g]


def split_evenly(items: list, k: int) -> dict[int, list]:
    """Worker index → its share of `items`, in order (workers with an empty share left out)."""
    shares = [items[i * len(items) // k : (i + 1) * len(items) // k] for i in range(k)]
    return {i: share for i, share in enumerate(shares) if share}

"""Which reward functions score completions and how the reward pool runs them."""

from __future__ import annotations

from pydantic import Field

from configs.base import Section


class RewardFn(Section):
    """One reward function: a registry name (`rule`, `gt`) or `package.module:function`."""

    name: str
    """Registry name or import path."""
    weight: float = Field(1.0, ge=-1e6, le=1e6)
    """Weight in the weighted sum (finite)."""
    preflight: bool = True
    """Call it once on two rows with placeholder completions before anything starts (false for a
    reward that must not be called before the run, e.g. one that calls a paid service)."""


class RewardConfig(Section):
    """The RewardPool."""

    functions: list[RewardFn] = [RewardFn(name="gt")]
    """Reward functions; the total is their weighted sum (capped to [0, 1] by each function)."""
    num_actors: int = Field(2, ge=1, le=256)
    """Reward actors scoring shards of a batch concurrently."""
    timeout_s: float = Field(30.0, gt=0, le=86_400)
    """Per-call timeout; a shard that exceeds it scores 0 and is counted."""
    num_cpus: float = Field(0.25, ge=0)
    """CPUs reserved per reward actor."""

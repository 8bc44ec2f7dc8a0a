"""A RewardPool for tests, built the way `actors.driver.roles.Roles.start` builds the run's own.

The pool has no constructor of its own for a list of reward functions: the run makes its reward actors
through `Roles`, with the config's resources and environment. Tests need the same pool without a
config, so this starts it the same way (an ActorGroup of RewardActors without a placement group, the
pool over it, and a wait until every actor answers), and counts the replacements the pool makes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from actors.errors import RoleFailure
from actors.reward.pool import RewardActor, RewardPool
from cluster.actor_group import ActorGroup
from cluster.backend import Backend


class Recoveries:
    """The `recovering` of a test pool: it records each failure the pool recovers from, and lets the
    replacement go ahead (the run's own also counts it against `train.max_restarts`)."""

    def __init__(self) -> None:
        self.failures: list[RoleFailure] = []

    @contextmanager
    def __call__(self, failure: RoleFailure) -> Iterator[None]:
        self.failures.append(failure)
        yield


def start_pool(functions: list[tuple[str, float]], backend: Backend, num_actors: int = 2,
               timeout_s: float = 30.0, judge: str | None = None,
               recovering: Recoveries | None = None) -> RewardPool:
    """`num_actors` reward actors scoring with `functions` ((name, weight) pairs), ready to score."""
    group = ActorGroup(RewardActor, num_actors, name="reward", backend=backend,
                       resources={"num_cpus": 0.25, "num_gpus": 0},
                       args_for=lambda i: ((functions, timeout_s), {"index": i, "judge": judge}))
    pool = RewardPool(group, timeout_s, len(functions) + 1, recovering or Recoveries())
    pool.wait_ready()
    return pool

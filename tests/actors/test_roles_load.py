"""Roles.load when a worker is gone: replaced in place (a synchronous run's push), or raised as the step's
RoleFailure (`replace=False`, a streamed run's due point: a new worker would have no stream, which a CI
run of tests/faults/test_stream_faults.py met as "'RolloutWorker' object has no attribute 'stream'" when
the worker was killed while it waited at its due point)."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

from actors.driver.roles import Roles
from actors.errors import RoleFailure
from cluster.backend import LocalBackend
from configs.root import Config
from contracts.types import Served


class Worker:
    def load_adapter(self, update_ref, rollback: bool) -> Served:
        return Served(0, update_ref, "fp", 1)


class Group:
    """Two workers; the first answer of worker 1 is that its process is gone."""

    def __init__(self) -> None:
        self.actors, self.started_again, self.lost = [Worker(), Worker()], [], {1}

    def gather(self, refs: dict, timeout: float):
        answers = {i: LocalBackend().get(r) for i, r in refs.items() if i not in self.lost}
        failures = {i: "ActorDiedError: gone" for i in refs if i in self.lost}
        self.lost = set()
        return answers, failures

    def start_again(self, i: int, timeout_s: float) -> None:
        self.started_again.append(i)

    def node_ids(self) -> list[str]:
        return ["node-a", "node-b"]


def _roles() -> Roles:
    failures: list[RoleFailure] = []
    roles = Roles(Config(), LocalBackend(), {}, {}, "t", lambda f: failures.append(f) or nullcontext())
    roles.rollout, roles.failures = Group(), failures
    return roles


def test_a_lost_worker_is_replaced_and_loaded():
    roles = _roles()
    served = roles.load([0, 1], 3)
    assert [s.version for s in served] == [3, 3]
    assert roles.rollout.started_again == [1] and [f.index for f in roles.failures] == [1]


def test_without_replace_a_lost_worker_is_the_callers_failure():
    roles = _roles()
    with pytest.raises(RoleFailure) as e:
        roles.load([1], 3, replace=False)
    assert (e.value.role, e.value.index, e.value.node) == ("rollout", 1, "node-b")
    assert "ActorDiedError" in e.value.cause
    assert roles.rollout.started_again == [] and roles.failures == []

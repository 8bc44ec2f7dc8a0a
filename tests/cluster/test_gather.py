"""Gathering the answers of a group: an actor that is gone is a failure; a call that raised is the
caller's error, unless another actor of the same call is gone (a learner rank whose peer died raises
from its collective): then the lost actor is the failure that explains it, listed first."""

from __future__ import annotations

import os
import signal
import time

import pytest

from cluster.actor_group import ActorGroup
from cluster.backend import RayBackend

pytestmark = pytest.mark.ray


class Peer:
    def __init__(self, rank: int) -> None:
        self.rank = rank

    def pid(self) -> int:
        return os.getpid()

    def collective(self, wait_s: float) -> int:
        """Rank 0 waits for its peer and fails when it is gone, as a collective does."""
        time.sleep(wait_s)
        if self.rank == 0:
            raise RuntimeError("Connection closed by peer [127.0.0.1]:63657")
        return self.rank


def _group():
    return ActorGroup(Peer, 2, name="peer", backend=RayBackend(), args_for=lambda i: ((i,), {}),
                      resources={"num_cpus": 0.1})


def test_a_raise_caused_by_a_lost_peer_is_reported_as_the_peers_failure(ray_local):
    group = _group()
    pids = group.get(group.call("pid"))
    refs = dict(enumerate(group.call("collective", 3.0)))
    os.kill(pids[1], signal.SIGKILL)
    answers, failures = group.gather(refs, timeout=60)
    assert answers == {}
    assert list(failures) == [1, 0], failures  # the lost actor first: it explains the other
    assert failures[1].startswith("ActorDiedError") and "Connection closed by peer" in failures[0]
    group.shutdown()


def test_a_raise_with_every_actor_alive_is_the_callers_error(ray_local):
    group = _group()
    with pytest.raises(Exception, match="Connection closed by peer"):
        group.gather(dict(enumerate(group.call("collective", 0.0))), timeout=60)
    group.shutdown()

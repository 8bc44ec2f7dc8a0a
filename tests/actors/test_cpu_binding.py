"""The rollout worker's OpenMP binding for tensor parallelism on the CPU: each rank its own cores."""

from __future__ import annotations

import os

from actors.worker.cpu_binding import ENV, bind_value, rank_core_lists, set_thread_binding


def test_each_worker_splits_its_own_block_of_cores_over_its_ranks():
    cores = list(range(8))
    assert rank_core_lists(cores, 4, 2, 0) == [[0, 1], [2, 3]]
    assert rank_core_lists(cores, 4, 2, 1) == [[4, 5], [6, 7]]
    assert rank_core_lists(cores, 4, 2, 2) == [[0, 1], [2, 3]]  # more workers than blocks: wraps around
    assert bind_value(rank_core_lists(cores, 4, 2, 1)) == "4,5|6,7"


def test_fewer_cores_than_ranks_share_them():
    assert rank_core_lists([0, 1], 1, 2, 0) == [[0], [1]]  # one core reserved for two ranks: a core each
    assert rank_core_lists([0, 1], 2, 2, 1) == [[0], [1]]
    assert rank_core_lists([3], 2, 2, 0) == [[3], [3]]


def test_the_binding_is_set_for_tensor_parallelism_only_and_a_users_is_kept(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert set_thread_binding(1, 2, 0) is None and ENV not in os.environ
    value = set_thread_binding(2, 2, 0)
    assert value is not None and value.count("|") == 1 and os.environ[ENV] == value
    monkeypatch.setenv(ENV, "0|1")
    assert set_thread_binding(2, 2, 3) is None

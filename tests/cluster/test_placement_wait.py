"""Room on the cluster: a role that cannot be placed waits `cluster.node_wait_s`, then fails by name.

The whole path (a node lost, its bundles placed again on a node added later) runs in
tests/faults/test_lost_node.py; here the two waits themselves, on the session's local Ray."""

from __future__ import annotations

import time

import pytest

from cluster.actor_group import PlacementTimeout, _placement_group, _wait_placed

pytestmark = pytest.mark.ray


def test_a_group_without_room_fails_after_the_node_wait_naming_it(ray_local):
    t = time.monotonic()
    with pytest.raises(PlacementTimeout,
                       match=r"could not place 3 x \{'CPU': 5.0\} for learner .*node_wait_s"):
        _placement_group("learner", 3, {"num_cpus": 5.0}, "PACK", timeout_s=1.0)
    assert time.monotonic() - t < 30
    # and it left nothing behind: the same name can be placed once it fits
    from ray.util.placement_group import remove_placement_group

    pg = _placement_group("learner", 1, {"num_cpus": 1.0}, "PACK", timeout_s=30)
    remove_placement_group(pg)


def test_waiting_for_a_bundle_ends_when_it_is_placed_or_after_the_node_wait(ray_local):
    from ray.util.placement_group import placement_group, remove_placement_group

    fits = _placement_group("rollout", 1, {"num_cpus": 1.0}, "SPREAD", timeout_s=30)
    _wait_placed(fits, "rollout", 5.0)  # placed: returns at once
    remove_placement_group(fits)
    never = placement_group([{"CPU": 64.0}], strategy="SPREAD")  # pending for good on this cluster
    try:
        with pytest.raises(PlacementTimeout, match="rollout: .* within 1s .*PENDING"):
            _wait_placed(never, "rollout", 1.0)
    finally:
        remove_placement_group(never)

"""How `make test` splits the suite over two pytest-xdist workers (`-n 2 --dist loadgroup`).

A test module is one unit of work, sent whole to one worker, so its module fixtures (a run, a Ray
head, a cluster) are built once. Two exceptions: the fault tests of test_run_faults.py are a unit each
(they share one straight run across the workers, tests/faults/conftest.py), and the two coordinator
modules that read the session's agent run are one unit (it is built once). Units go longest first: a
worker that started the 3-minute lost-node test last would finish minutes after the other.

`COST` is each module's seconds in a serial run on a 2-core machine (`pytest --durations=0`), only
for ordering; a module not listed costs nothing and runs after the listed ones, in collection order.
Without xdist the order is the same and the groups do nothing.
"""

from __future__ import annotations

import pytest

# Runs started by tests that may run beside another run (one per worker): one thread per role. The
# presets give each role both cores (its phases take turns with the others'), so two runs side by side
# would spin four OpenMP threads on two cores, three times slower per step (docs/platform.md).
ONE_THREAD = ["rollout.num_threads=1", "learner.num_threads=1"]

COST = {
    "tests/faults/test_lost_node.py": 260,
    "tests/faults/test_agent_faults.py": 200,
    "tests/faults/test_full_disk.py": 190,  # with the straight run, when it asks first
    "tests/cluster/test_gpu_layout.py": 160,
    "tests/observe/test_prometheus.py": 150,
    "tests/cluster/test_job_submit.py": 120,
    "tests/faults/test_run_faults.py": 100,  # per test: each is a unit of its own
    "tests/actors/test_rollout_worker.py": 90,
    "tests/integration/test_train_run.py": 85,
    "tests/actors/test_agent_coordinator.py": 80,  # with test_coordinator.py: the session's agent run
    "tests/actors/test_coordinator.py": 80,
    "tests/learner/test_learner.py": 70,
    "tests/test_train_cli.py": 60,
    "tests/test_role_start_failure.py": 55,
    "tests/faults/test_push_and_reward_faults.py": 45,
    "tests/observe/test_tracking.py": 35,
}
ALONE = {"tests/faults/test_run_faults.py"}
TOGETHER = {"tests/actors/test_coordinator.py": "agent-run",
            "tests/actors/test_agent_coordinator.py": "agent-run"}


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def arrange(items: list[pytest.Item]) -> None:
    """Mark each item with its unit (xdist's `xdist_group`) and sort the units longest first, in place;
    a module's tests keep their order and stay together (module fixtures are built once)."""
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        module = module_of(item)
        first_seen.setdefault(module, i)
        if module not in ALONE:
            item.add_marker(pytest.mark.xdist_group(TOGETHER.get(module, module)))
    items.sort(key=lambda it: (-COST.get(module_of(it), 0), first_seen[module_of(it)]))

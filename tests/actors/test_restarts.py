"""train.max_restarts counts per role within train.restart_window steps."""

from __future__ import annotations

from actors.driver.restarts import RestartBudget


def test_failures_far_apart_never_exhaust_the_budget():
    budget = RestartBudget(limit=2, window=100)
    recent = [budget.spend("rollout", step) for step in range(0, 2000, 60)]  # 34 faults, 60 steps apart
    assert max(recent) == 2 and not any(budget.exhausted(r) for r in recent)


def test_a_crash_loop_of_one_role_exhausts_it_and_other_roles_count_apart():
    budget = RestartBudget(limit=2, window=100)
    assert [budget.spend("learner", 50) for _ in range(2)] == [1, 2]
    assert budget.spend("rollout", 50) == 1  # another role's failures are its own
    assert budget.exhausted(budget.spend("learner", 51))  # the third learner failure in the window

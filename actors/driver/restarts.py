"""How many replacements a run may make: `train.max_restarts` per role within `train.restart_window` steps.

A long run meets many independent faults (a preempted node today, a crashed worker next week) and
should survive them all; a crash loop (the same role failing again and again within a few steps) must
still stop. So failures are counted per role over the last `window` steps, not over the whole run.

>>> budget = RestartBudget(limit=1, window=10)
>>> budget.spend("rollout", step=3), budget.spend("rollout", step=20), budget.spend("learner", step=21)
(1, 1, 1)
>>> budget.spend("rollout", step=25)  # two in the last 10 steps: past the limit of one
2
"""

from __future__ import annotations


class RestartBudget:
    def __init__(self, limit: int, window: int) -> None:
        self.limit, self.window = limit, window
        self.failures: list[tuple[int, str]] = []  # (step, role), in the order they happened

    def spend(self, role: str, step: int) -> int:
        """Count a failure of `role` at `step`; returns its failures within the window, this one included
        (the run stops when that exceeds the limit: see `exhausted`)."""
        self.failures.append((step, role))
        return sum(1 for s, r in self.failures if r == role and s > step - self.window)

    def exhausted(self, recent: int) -> bool:
        return recent > self.limit

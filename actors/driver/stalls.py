"""Whether a run can still learn: steps in a row in which every completion's reward failed, and in
which no update moved the policy. Either one past its limit stops the run (`train.max_failed_steps`,
`train.max_idle_steps`) with a message that names the cause, instead of a run that exits 0 having
learned nothing. One bad step of a flaky reward service does not stop a run: only steps in a row count.

>>> s = Stalls()
>>> s.observe(all_failed=True, updated=False); s.observe(all_failed=True, updated=False); (s.failed, s.idle)
(2, 2)
>>> why = s.problem(max_failed=2, max_idle=50, first_error="reward 'f' raised KeyError")
>>> why.split("; ")[1]
"the first error: reward 'f' raised KeyError"
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class Stalls:
    failed: int = 0  # steps in a row in which every completion's reward failed
    idle: int = 0  # steps in a row without an update (nothing valid, every advantage 0, or skipped)
    why: str = ""  # why the newest idle step did not update

    def observe(self, all_failed: bool, updated: bool, why: str = "") -> None:
        self.failed = self.failed + 1 if all_failed else 0
        self.idle = 0 if updated else self.idle + 1
        self.why = "" if updated else why

    def observe_step(self, scored: Any, advantage_abs_mean: float, learn: dict | None,
                     kl_coef: float) -> str:
        """Count one step from its scores (`ScoreResult`), its mean |advantage| and the learner's answer
        (None: nothing was learned); returns why it did not update ("" when it did)."""
        n = len(scored.rewards)
        all_failed = n > 0 and scored.failures >= n
        # every advantage 0 and no KL term: the loss has no gradient, the policy stays as it was
        zero = advantage_abs_mean == 0.0 and kl_coef == 0
        updated = learn is not None and not learn["update_skipped"] and not zero
        why = ("" if updated else "every completion's reward failed" if all_failed
               else "no sample was left to train on" if learn is None
               else "the update was skipped" if learn["update_skipped"]
               else "every group's rewards had zero spread (every advantage 0)")
        self.observe(all_failed, updated, why)
        return why

    def problem(self, max_failed: int, max_idle: int, first_error: str = "") -> str | None:
        """Why the run must stop, or None (a limit of 0 never stops it)."""
        if max_failed and self.failed >= max_failed:
            return (f"every completion's reward failed in {self.failed} steps in a row "
                    f"(train.max_failed_steps={max_failed}); the first error: {first_error or 'none logged'}")
        if max_idle and self.idle >= max_idle:
            return (f"no update in {self.idle} steps in a row (train.max_idle_steps={max_idle}): {self.why}; "
                    "the rewards give the policy nothing to learn from")
        return None

    def state_dict(self) -> dict:
        return asdict(self)

    def load_state_dict(self, state: dict | None) -> None:
        state = state or {}
        self.failed, self.idle, self.why = state.get("failed", 0), state.get("idle", 0), state.get("why", "")

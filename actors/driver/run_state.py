"""The coordinator's state across processes and failures: what a checkpoint holds of it, writing and
restoring checkpoints, counting failed roles against the restart budget, and stopping with a message
that names the checkpoint to resume from.

A mixin of `actors.driver.coordinator.Coordinator`, which owns the step loop; this part knows the fields the
loop keeps (step, policy version, prompt order, NGRPO switch, eval tables, the pipeline's state)
and the roles, store and run log it was built with, not how a step is made.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from contextlib import contextmanager
from pathlib import Path

from actors.errors import RoleFailure, RunStopped, root_cause

log = logging.getLogger(__name__)


class RunState:
    def state_dict(self) -> dict:
        """The coordinator's part of a checkpoint: what decides the rest of the run, and the metrics
        position (the step: rows after it are written again on resume)."""
        return {"step": self.step, "policy_version": self.version, "prompts": self.prompts.state_dict(),
                "ngrpo_switch": self.switch.state_dict(), "eval_tables": dict(self.eval_tables),
                "kept_rows": self.kept_rows, "skipped_in_a_row": self.skipped_in_a_row,
                "stalls": self.stalls.state_dict(),
                "no_signal": self.no_signal.state_dict(), "pipeline": self.pipeline.state_dict()}

    def checkpoint(self, state: dict | None = None) -> Path:
        """An atomic, complete checkpoint of the state after the current step (or of `state`, with the
        learner as it is). One that cannot be written (a full disk) stops the run: the previous
        checkpoint stays the newest complete one."""
        state = state or self.state_dict()
        tmp = self.store.begin(state["step"])
        try:
            self.roles.save(str(tmp))
            (tmp / "coordinator.json").write_text(json.dumps(state), encoding="utf-8")
            path = self.store.commit(tmp, state["step"])
        except RoleFailure:
            raise
        except Exception as e:  # noqa: BLE001 - OSError here, or one raised by a learner rank
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._stop(f"could not write the checkpoint of step {self.step}: {root_cause(e)}") from None
        self.run.event("checkpoint", step=state["step"], path=str(path), version=state["policy_version"])
        return path

    def _restore(self, path: Path | None, why: str) -> None:
        """Go to the checkpoint at `path`: learner state, coordinator state, metrics position, and the
        checkpoint's policy on every worker."""
        if path is None:
            raise self._stop("no complete checkpoint to go back to")
        state = json.loads((path / "coordinator.json").read_text(encoding="utf-8"))
        version = self.roles.restore(str(path))
        if state["kept_rows"] is not None and self.kept_rows is None:
            self._keep_rows(state["kept_rows"])
        self.step, self.version = state["step"], state["policy_version"]
        self.prompts.load_state_dict(state["prompts"] if "prompts" in state else state["stream"])  # (older)
        self.switch.load_state_dict(state["ngrpo_switch"])
        self.eval_tables, self.skipped_in_a_row = state["eval_tables"], state["skipped_in_a_row"]
        self.stalls.load_state_dict(state.get("stalls"))  # (a checkpoint from before it has none)
        self.no_signal.load_state_dict(state.get("no_signal"))
        self.pipeline.load_state_dict(state["pipeline"] if "pipeline" in state else state.get("next"))
        kept = self.run.truncate_metrics(self.step)
        if version > 0:
            self.roles.push(rollback=True)
        elif why == "rollback":  # the checkpoint of step 0 is the base model; the workers served a later one
            self.roles.serve_base()
        else:  # resumed: fresh engines serve the base model already
            self.roles.update_ref = None
        self.run.event(why, step=self.step, path=str(path), version=self.version, metrics_rows=kept)

    def _on_failure(self, failure: RoleFailure) -> None:
        """Count a failed role; each is an event and a Ray metric. Past train.max_restarts of that role
        within train.restart_window steps, stop."""
        self.restarts += 1
        recent = self.budget.spend(failure.role, self.step)
        self.record_recovery(failure, self.restarts)
        t = self.cfg.train
        log.warning("recovering from %s (%s restart %d of %d within %d steps)", failure, failure.role, recent,
                    t.max_restarts, t.restart_window)
        if self.budget.exhausted(recent):
            # inside a step whose update has not happened: the learner is still as it was before the step
            if failure.role != "learner" and getattr(self, "_updates_before", None) == self.roles.updates:
                self.checkpoint(self._before_step)  # the last completed step, with the learner as it was then
            raise self._stop(f"{failure} — more than train.max_restarts={t.max_restarts} failures of "
                             f"{failure.role} within train.restart_window={t.restart_window} steps")

    @contextmanager
    def recovering(self, failure: RoleFailure):
        """Around the replacement of a failed role: counts the failure first (it may stop the run), then
        records how long the role took to serve again and where its new processes run (a lost node's
        roles move): `recovered`, the faults summary's source. The role started again may not be the one
        that failed (the learner group, rebuilt after a failure that reached the step): the body says which
        in the dict it is given (`where["moved"]`)."""
        self._on_failure(failure)
        t0, before, where = time.perf_counter(), self.step, {"moved": failure.role}
        yield where
        moved = where["moved"]
        self.run.event("recovered", step=self.step, role=failure.role, index=failure.index,
                       seconds=round(time.perf_counter() - t0, 3), redone=before - self.step, moved=moved,
                       placed=self.roles.placed(moved, failure.index))

    def record_recovery(self, failure: RoleFailure, restarts: int, seconds: float | None = None,
                        redone: int = 0) -> None:
        """A replaced role as an event and a Ray metric; the driver calls it too, for the coordinator it
        started again after losing a process outside a step (see train.py), with the `seconds` from the
        loss to the new coordinator's set-up and the steps it will make again (`redone`)."""
        self.run.event("recovery", step=self.step, role=failure.role, index=failure.index, node=failure.node,
                       cause=failure.cause, restarts=restarts)
        if seconds is not None:
            self.run.event("recovered", step=self.step, role=failure.role, index=failure.index,
                           seconds=round(seconds, 3), redone=redone, placed=[])
        if self.ray_metrics:
            self.ray_metrics.recovery(failure.role)

    def _stop(self, why: str) -> RunStopped:
        newest = self.store.latest()
        where = f"the newest complete checkpoint is {newest}" if newest else "there is no complete checkpoint"
        self.run.event("stopped", step=self.step, reason=why)
        return RunStopped(f"run stopped at step {self.step}: {why}; {where}")

    def get_step(self) -> int:
        return self.step


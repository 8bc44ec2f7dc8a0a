"""A run survives what kills runs: each fault injected for real into a running `train.py`.

Every faulted run is compared with a straight run of the same configuration: it must end with the same
metrics rows (value for value, times aside: nothing lost, nothing written twice) and the same final
adapter, or stop with its stated message and a usable checkpoint.
"""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from observe.faults import fault_summary, format_faults
from tests.faults.chaos import Chaos, adapter_digest, format_log
from tests.faults.harness import CANARY, STEPS, adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]


def test_a_second_job_on_a_live_run_is_refused_and_the_run_goes_on(straight):
    second = straight.second
    assert second.returncode == 2 and "in use by pid" in second.stderr, second.stdout + second.stderr
    assert [r["step"] for r in straight.rows()] == list(range(1, STEPS + 1))  # nothing removed or redone


def test_a_secret_reaches_the_roles_and_no_file_or_log_of_the_run(straight):
    assert straight.worker_env.get("NGRPO_TEST_SECRET") == CANARY
    leaks = [str(f) for f in straight.run_dir.rglob("*") if f.is_file() and CANARY.encode() in f.read_bytes()]
    assert not leaks  # metrics, events, eval tables, report, TensorBoard files, checkpoints, adapter
    assert (straight.run_dir / "report").is_dir() and list(straight.run_dir.glob("tensorboard/*"))
    assert CANARY not in straight.output()  # the driver's output, with what Ray forwarded from the roles


def _recovers(runs, straight, name: str, role: str, sig: int, after_rows: int):
    """Start run `name`, send `sig` to its `role` process after `after_rows` rows; the run must finish
    with the straight run's rows."""
    run = start(runs, name)
    run.wait_rows(after_rows)
    os.kill(run.pid(role), sig)
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())  # steps after a rollback ran again, rows not doubled
    return run


def test_a_killed_rollout_worker_is_replaced_and_its_share_regenerated(runs, straight):
    run = _recovers(runs, straight, "worker-kill9", "rollout", signal.SIGKILL, 2)
    rec = run.events("recovery")
    assert len(rec) == 1 and rec[0]["role"] == "rollout" and "ActorDiedError" in rec[0]["cause"]
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    assert "rollout-0 on node" in (run.run_dir / "report" / "report.md").read_text()  # a line in the report


def test_a_hung_rollout_worker_misses_its_deadline_and_is_replaced(runs, straight):
    run = _recovers(runs, straight, "worker-sigstop", "rollout", signal.SIGSTOP, 2)
    rec = run.events("recovery")
    assert len(rec) == 1 and rec[0]["role"] == "rollout" and "no answer within 15s" in rec[0]["cause"]


def test_a_killed_learner_rank_rebuilds_the_group_from_the_newest_checkpoint(runs, straight):
    """Killed during step 2, before its checkpoint: back to the checkpoint of step 0, whose policy is the
    base model, which the workers (serving step 1's) must serve again (`serve_base`)."""
    run = _recovers(runs, straight, "learner-kill9", "learner", signal.SIGKILL, 1)
    (lost,) = run.events("recovery")
    assert lost["role"] == "learner"
    back = run.events("rollback")
    assert len(back) == 1 and back[0]["step"] in (0, 2)
    (done,) = run.events("recovered")
    assert (done["moved"], done["redone"]) == ("learner", lost["step"] - back[0]["step"])
    assert done["seconds"] > 0
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)


def test_sigterm_to_the_driver_stops_cleanly_and_the_run_resumes(runs, straight):
    run = start(runs, "sigterm")
    run.wait_rows(3)
    os.kill(run.proc.pid, signal.SIGTERM)  # what `ray job stop` sends first
    code = run.finish(timeout=120)
    out = run.output()
    assert code == 128 + signal.SIGTERM, out
    assert "stopped by SIGTERM" in out and "resume with: python train.py" in out and "Traceback" not in out
    newest = (run.run_dir / "checkpoints" / "latest").read_text().strip()
    assert (run.run_dir / "checkpoints" / newest / "COMPLETE").exists()
    again = start(runs, "sigterm")
    assert again.finish() == 0, again.output()
    same_rows(straight.rows(), again.rows())
    assert adapter_fingerprint(again.run_dir) == adapter_fingerprint(straight.run_dir)


def test_kill9_of_the_driver_then_resume_gives_the_straight_run(runs, straight):
    run = start(runs, "driver-kill9")
    run.wait_rows(3)
    run.kill_driver()
    again = start(runs, "driver-kill9")
    assert again.finish() == 0, again.output()
    assert "resuming from" in again.output()
    same_rows(straight.rows(), again.rows())
    assert adapter_fingerprint(again.run_dir) == adapter_fingerprint(straight.run_dir)


def test_too_many_failures_stop_the_run_with_one_message(runs):
    run = start(runs, "no-restarts", "train.max_restarts=0")
    run.wait_rows(2)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    code = run.finish()
    out = run.output()
    assert code == 1, out
    assert "rollout-0 on node" in out and "max_restarts=0" in out and "resume with:" in out
    assert "Traceback" not in out.split("error: run stopped")[-1]
    # The final checkpoint holds the last completed step: resuming it (more restarts allowed) finishes.
    stopped = [e for e in run.events("stopped")][-1]["step"]
    assert (run.run_dir / "checkpoints" / f"step_{stopped - 1:05d}" / "COMPLETE").exists()


def _kill_when_up(run, marker: str, timeout: float = 300) -> int:
    """kill -9 of the run's first process whose command line holds `marker` (Ray names a worker process
    after the actor's class), as soon as it exists; returns its pid."""
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        assert run.proc.poll() is None, run.output()
        for p in psutil.Process(run.proc.pid).children(recursive=True):
            try:
                if marker in " ".join(p.cmdline()):
                    p.kill()
                    return p.pid
            except psutil.Error:
                continue
        time.sleep(0.05)
    raise AssertionError(f"no {marker} process within {timeout}s")


def test_kill9_of_the_learner_during_set_up_is_survived(runs, straight):
    """Lost before the first checkpoint: the driver starts a new coordinator on a fresh run. (A loss
    during a resumed run's set-up, or of the coordinator itself, is in the chaos test below.)"""
    run = start(runs, "setup-kill9")
    _kill_when_up(run, "Learner")
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    assert "starting the coordinator again from the start" in run.output()
    assert [e["role"] for e in run.events("recovery")] == ["coordinator"]


def test_chaos_of_kills_at_the_worst_moments_ends_as_the_straight_run(runs, straight):
    """A short `make chaos`: kill -9 of the learner, then of its replacement while it recovers, of the
    coordinator (set up again from a checkpoint), then, as far as the six steps go, of a process writing
    a checkpoint, of one doing a push and of a worker; the run ends with the straight run's rows and
    adapter bytes. (How many of the last three fit depends on timing; `make chaos` runs 40 steps.)"""
    chaos = Chaos(runs, "chaos", STEPS, kills=6, seed=0, pause=(0.0, 0.5),
                  kinds=["learner", "recovery", "coordinator", "checkpoint", "push", "rollout"])
    run = chaos.play()
    print(format_log(chaos.log))
    same_rows(straight.rows(), run.rows())
    assert adapter_digest(run.run_dir) == adapter_digest(straight.run_dir)
    done = [e for e in chaos.log if e["role"] != "missed"]
    assert [(e["kind"], e["role"]) for e in done[:3]] == [
        ("learner", "learner"), ("recovery", "learner"), ("coordinator", "coordinator"),
    ], format_log(chaos.log)
    # Each kill is a fault the run survived, summed per role at its end (with the time each took); a
    # kill made during a recovery is part of that recovery (the replacement is started again).
    summary = fault_summary(run.events())
    assert sum(f.faults for f in summary if f.role != "resumed") >= sum(e["kind"] != "recovery" for e in done)
    assert {"learner", "coordinator"} <= {f.role for f in summary if f.seconds > 0}, summary
    assert format_faults(summary) in run.output()

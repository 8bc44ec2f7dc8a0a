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


def test_a_learner_lost_in_set_up_and_in_a_step_a_killed_worker_and_a_hung_worker_are_each_survived(
        runs, straight):
    """One run, four faults in turn, and it ends with the straight run's rows and adapter:
    1. kill -9 of the learner as soon as its process exists, during set-up, before the first checkpoint:
       the driver starts a new coordinator on a fresh run (a loss during a resumed run's set-up, or of
       the coordinator itself, is in the chaos test below);
    2. kill -9 of the learner during step 2, before its checkpoint: the group is rebuilt from the newest
       checkpoint, step 0's, whose policy is the base model, which the worker (serving step 1's) must
       serve again (`serve_base`);
    3. kill -9 of the rollout worker after step 3: it is replaced and its share generated again;
    4. SIGSTOP of that replacement after step 5: it misses its deadline (6 s in this run) and is replaced.
    Each fault is its own recovery event with its own cause (what `make chaos` runs at random)."""
    run = start(runs, "role-faults", "rollout.call_timeout_s=6")
    _kill_when_up(run, "Learner")
    run.wait_rows(1)
    os.kill(run.pid("learner"), signal.SIGKILL)
    run.wait_rows(3)
    first = run.pid("rollout")
    os.kill(first, signal.SIGKILL)
    run.wait_rows(5)
    assert run.pid("rollout") != first  # the replacement is the one stopped
    os.kill(run.pid("rollout"), signal.SIGSTOP)
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())  # steps after the rollback ran again, rows not doubled
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    assert "starting the coordinator again from the start" in run.output()
    lost = [(e["role"], e["step"], e["cause"]) for e in run.events("recovery")]
    assert [r for r, _, _ in lost] == ["coordinator", "learner", "rollout", "rollout"], lost
    assert "ActorDiedError" in lost[2][2] and "no answer within 6s" in lost[3][2], lost
    (back,) = run.events("rollback")  # only the learner's loss in a step goes back to a checkpoint
    assert back["step"] in (0, 2)
    done = [e for e in run.events("recovered") if e["role"] != "coordinator"]
    assert [e["moved"] for e in done] == ["learner", "rollout", "rollout"], done
    assert done[0]["redone"] == lost[1][1] - back["step"]
    assert all(e["seconds"] > 0 for e in done)
    assert "rollout-0 on node" in (run.run_dir / "report" / "report.md").read_text()  # a line in the report


def test_too_many_failures_sigterm_and_kill9_of_the_driver_each_stop_the_run_and_each_resume_goes_on(
        runs, straight):
    """One run directory, three stops, each resumed, ending with the rows and adapter of the straight run:
    1. too many failures: with `train.max_restarts=0`, kill -9 of the rollout worker after step 2 stops
       the run with one message naming the worker and the setting, and a final checkpoint of the last
       completed step; the resume may allow more restarts (it does: the default);
    2. SIGTERM to the driver after the resumed run's first step (what `ray job stop` sends first): it
       stops with its message and a complete checkpoint;
    3. SIGKILL of the driver after step 5 (between the checkpoints of steps 4 and 6: step 5 is done
       again), and a last resume to the end."""
    run = start(runs, "driver-faults", "train.max_restarts=0")
    run.wait_rows(2)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    code = run.finish()
    out = run.output()
    assert code == 1, out
    assert "rollout-0 on node" in out and "max_restarts=0" in out and "resume with:" in out
    assert "Traceback" not in out.split("error: run stopped")[-1]
    stopped = [e for e in run.events("stopped")][-1]["step"]  # the final checkpoint: the last completed step
    assert (run.run_dir / "checkpoints" / f"step_{stopped - 1:05d}" / "COMPLETE").exists()

    term = start(runs, "driver-faults")
    term.wait_rows(len(run.rows()) + 1)
    os.kill(term.proc.pid, signal.SIGTERM)
    code = term.finish(timeout=120)
    out = term.output()
    assert code == 128 + signal.SIGTERM, out
    assert f"resuming from {run.run_dir / 'checkpoints' / f'step_{stopped - 1:05d}'}" in out
    assert "stopped by SIGTERM" in out and "resume with: python train.py" in out and "Traceback" not in out
    newest = (run.run_dir / "checkpoints" / "latest").read_text().strip()
    assert (run.run_dir / "checkpoints" / newest / "COMPLETE").exists()

    again = start(runs, "driver-faults")
    again.wait_rows(5)
    assert f"resuming from {run.run_dir / 'checkpoints' / newest}" in again.output()
    again.kill_driver()
    last = start(runs, "driver-faults")
    assert last.finish() == 0, last.output()
    assert "resuming from" in last.output()
    same_rows(straight.rows(), last.rows())
    assert adapter_fingerprint(last.run_dir) == adapter_fingerprint(straight.run_dir)


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

"""A run survives what kills runs: each fault injected for real into a running `train.py`.

Every faulted run is compared with a straight run of the same configuration: it must end with the same
metrics rows (value for value, times aside: nothing lost, nothing written twice) and the same final
adapter, or stop with its stated message and a usable checkpoint.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.faults.harness import STEPS, adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="module")
def straight(runs):
    run = start(runs, "straight")
    assert run.finish() == 0, run.output()
    assert len(run.rows()) == STEPS
    return run


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
    run = _recovers(runs, straight, "learner-kill9", "learner", signal.SIGKILL, 3)
    assert [e["role"] for e in run.events("recovery")] == ["learner"]
    back = run.events("rollback")
    assert len(back) == 1 and back[0]["step"] in (2, 4)
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

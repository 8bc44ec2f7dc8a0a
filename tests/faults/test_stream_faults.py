"""A streamed run (train.pipeline stream, k = 2) survives the faults a synchronous one does, and stays
bit-reproducible through them: kill -9 of the driver (then resumed), of a rollout worker and of the learner
— each run ends with the rows and the adapter of a straight streamed run. Its checkpoints are taken at
each worker's cut (docs/algorithm.md#the-streamed-pipeline), so the steps done again after a rollback or
a resume sample what the straight run sampled."""

from __future__ import annotations

import os
import signal

import pytest

from tests.faults.harness import STEPS, adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]

STREAM = ("train.pipeline=stream", "train.max_staleness=2", "rollout.max_in_flight=8")


@pytest.fixture(scope="module")
def streamed(runs):
    run = start(runs, "stream-straight", *STREAM)
    assert run.finish() == 0, run.output()
    rows = run.rows()
    assert len(rows) == STEPS and [r["version_lag_max"] for r in rows] == [0, 1, 2, 2, 2, 2]
    return run


def test_kill9_of_a_streamed_driver_then_resume_gives_the_straight_run(runs, streamed):
    run = start(runs, "stream-driver-kill9", *STREAM)
    run.wait_rows(3)  # between the checkpoints of steps 2 and 4
    run.kill_driver()
    again = start(runs, "stream-driver-kill9", *STREAM)
    assert again.finish() == 0, again.output()
    assert "resuming from" in again.output()
    same_rows(streamed.rows(), again.rows())
    assert adapter_fingerprint(again.run_dir) == adapter_fingerprint(streamed.run_dir)


def test_a_streamed_run_survives_kill9_of_a_worker_then_of_the_learner(runs, streamed):
    """Worker killed mid-stream: replaced, and the run goes back to its checkpoint; then the learner: its
    group is rebuilt from the checkpoint. Both replays sample what the straight run sampled."""
    run = start(runs, "stream-role-kill9", *STREAM)
    run.wait_rows(1)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    run.wait_rows(4)
    os.kill(run.pid("learner"), signal.SIGKILL)
    assert run.finish() == 0, run.output()
    same_rows(streamed.rows(), run.rows())
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(streamed.run_dir)
    recovered = [e["role"] for e in run.events("recovered")]
    assert recovered == ["rollout", "learner"], recovered

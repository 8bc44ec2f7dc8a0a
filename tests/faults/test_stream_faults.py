"""A streamed run (train.pipeline stream, k = 2) survives the faults a synchronous one does, and stays
bit-reproducible through them: kill -9 of a rollout worker, of the learner and of the driver (then
resumed), one after the other in one run, which ends with the rows and the adapter of a straight
streamed run. Its checkpoints are taken at each worker's cut (docs/algorithm.md#the-streamed-pipeline),
so the steps done again after a rollback or a resume sample what the straight run sampled."""

from __future__ import annotations

import os
import signal

import pytest

from tests.faults.harness import STEPS, adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]

STREAM = ("train.pipeline=stream", "train.pipeline.max_staleness=2", "train.pipeline.max_in_flight=8")


@pytest.fixture(scope="module")
def streamed(runs):
    run = start(runs, "stream-straight", *STREAM)
    assert run.finish() == 0, run.output()
    rows = run.rows()
    assert len(rows) == STEPS and [r["version_lag_max"] for r in rows] == [0, 1, 2, 2, 2, 2]
    return run


def test_a_streamed_run_survives_kill9_of_a_worker_of_the_learner_and_of_the_driver(runs, streamed):
    """Worker killed mid-stream: replaced, and the run goes back to its checkpoint; then the learner: its
    group is rebuilt from the checkpoint; then the driver, between the checkpoints of steps 4 and 6, and
    the run resumed. Every replay samples what the straight run sampled."""
    run = start(runs, "stream-kill9", *STREAM)
    run.wait_rows(1)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    run.wait_rows(4)
    os.kill(run.pid("learner"), signal.SIGKILL)
    run.wait_rows(5)
    run.kill_driver()
    recovered = [e["role"] for e in run.events("recovered")]
    assert recovered == ["rollout", "learner"], recovered
    again = start(runs, "stream-kill9", *STREAM)
    assert again.finish() == 0, again.output()
    assert "resuming from" in again.output()
    same_rows(streamed.rows(), again.rows())
    assert adapter_fingerprint(again.run_dir) == adapter_fingerprint(streamed.run_dir)

"""The straight run every fault test compares with, built once per session: the faulted runs of
test_run_faults.py and the full-disk run resume to the same configuration, and a straight run of it
takes a role set-up and six steps (about 45 s here) each time it is built."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

from tests.faults.harness import ROOT, STEPS, start


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def straight(runs):
    """The straight run; while it is live, a second job is started on its run directory, and the
    environment of its rollout worker is read (the secret must be there, and nowhere in its output)."""
    run = start(runs, "straight")
    run.wait_rows(1)
    run.second = subprocess.run([sys.executable, "train.py", "--set", f"train.run_dir={runs}", "--set",
                                 "train.run_name=straight"], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
    run.worker_env = psutil.Process(run.pid("rollout")).environ()
    assert run.finish() == 0, run.output()
    assert len(run.rows()) == STEPS
    return run

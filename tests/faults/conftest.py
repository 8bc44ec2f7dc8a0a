"""The straight run every fault test compares with, built once per test session: the faulted runs of
test_run_faults.py and the full-disk run resume to the same configuration, and a straight run of it
takes a role set-up and six steps (about 45 s here) each time it is built.

Under pytest-xdist the fault tests are spread over both workers (tests/scheduling.py), so the straight
run lives in a folder the workers share: the first worker to ask builds it while holding a file lock,
the other waits on the lock and then reads the same files. A test asks for it only once its own
faulted run is over (`request.getfixturevalue`), so a worker rarely waits."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from tests.faults.harness import ROOT, STEPS, Finished, start


@pytest.fixture(scope="session")
def runs(tmp_path_factory):
    return tmp_path_factory.mktemp("runs")


def _shared(tmp_path_factory) -> Path:
    """A folder of this test session that every xdist worker sees (each has its own base folder,
    side by side); without xdist, the session's base folder."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def straight(tmp_path_factory):
    """The straight run; while it is live, a second job is started on its run directory, and the
    environment of its rollout worker is read (the secret must be there, and nowhere in its output)."""
    where = _shared(tmp_path_factory) / "faults-straight"
    where.mkdir(exist_ok=True)
    facts = where / "facts.json"  # beside the run, not in it: it holds the secret the run must not
    with open(where / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not facts.exists():
            _build(where, facts)
    known = json.loads(facts.read_text(encoding="utf-8"))
    run = Finished(where / "straight", Path(known["log"]))
    assert known["code"] == 0, run.output()
    assert len(run.rows()) == STEPS
    run.second = SimpleNamespace(**known["second"])
    run.worker_env = {"NGRPO_TEST_SECRET": known["secret"]}
    return run


def _build(where: Path, facts: Path) -> None:
    run = start(where, "straight")
    run.wait_rows(1)
    second = subprocess.run([sys.executable, "train.py", "--set", f"train.run_dir={where}", "--set",
                             "train.run_name=straight"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    secret = psutil.Process(run.pid("rollout")).environ().get("NGRPO_TEST_SECRET")
    code = run.finish()
    facts.write_text(json.dumps({
        "code": code, "log": str(run.log), "secret": secret,
        "second": {"returncode": second.returncode, "stdout": second.stdout, "stderr": second.stderr},
    }), encoding="utf-8")

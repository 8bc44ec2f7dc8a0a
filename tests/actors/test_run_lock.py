"""One job per run directory: a live job's lock refuses a second one; a dead job leaves no lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from actors.driver.run_lock import RunInUse, RunLock, new_run_name

ROOT = Path(__file__).resolve().parents[2]
_HOLD = ("import sys, time; from actors.driver.run_lock import RunLock; RunLock(sys.argv[1]).acquire(); "
         "print('held', flush=True); time.sleep(600)")


def _holder(run_dir: Path) -> subprocess.Popen:
    """Another process holding the run's lock, as a live job's driver does."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(run_dir)], cwd=ROOT, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_held_lock_refuses_a_second_holder_and_dies_with_its_process(tmp_path):
    run = tmp_path / "run"
    proc = _holder(run)
    try:
        with pytest.raises(RunInUse, match=f"pid {proc.pid} on "):
            RunLock(run).acquire()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    lock = RunLock(run)
    lock.acquire()  # kill -9 left no stale lock: a restart gets the run at once
    lock.release()


def test_train_py_refuses_a_run_directory_in_use_and_leaves_it_untouched(tmp_path):
    run = tmp_path / "live"
    run.mkdir()
    files = {"config.json": "{}", "metrics.jsonl": json.dumps({"step": 1}) + "\n", "events.jsonl": ""}
    for name, text in files.items():  # a live run without a checkpoint yet: a second job would start it over
        (run / name).write_text(text)
    proc = _holder(run)
    try:
        p = subprocess.run([sys.executable, "train.py", "--set", f"train.run_dir={tmp_path}",
                            "--set", "train.run_name=live"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("error:") == 1 and "in use by pid" in p.stderr and "train.run_name" in p.stderr
    assert "Traceback" not in p.stderr
    assert {f.name: f.read_text() for f in run.iterdir() if f.name != ".lock"} == files


def test_default_run_names_never_collide(tmp_path):
    t = time.time()
    names = [new_run_name(tmp_path, "tiny-cpu") for _ in range(200)]  # all within a second or two
    assert time.time() - t < 30
    assert len(set(names)) == 200 and all((tmp_path / n).is_dir() for n in names)
    assert all(n.endswith("-tiny-cpu") for n in names)

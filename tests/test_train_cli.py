"""train.py and evaluate.py refuse bad input with one clear message and no traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_bad_config_value_is_one_message():
    p = _run("train.py", "--set", "rollout.temperature=-1")
    assert p.returncode == 2
    assert "rollout.temperature" in p.stderr and "Traceback" not in p.stderr


def test_unknown_key_and_missing_file():
    p = _run("train.py", "--set", "train.stepz=3")
    assert p.returncode == 2 and "train.stepz" in p.stderr and "steps" in p.stderr
    p = _run("train.py", "--config", "nope/missing.yaml")
    assert p.returncode == 2 and "missing.yaml" in p.stderr and "Traceback" not in p.stderr


def test_evaluate_rejects_missing_adapter():
    p = _run("evaluate.py", "--adapter", "/nonexistent/adapter")
    assert p.returncode == 2 and "/nonexistent/adapter" in p.stderr and "Traceback" not in p.stderr

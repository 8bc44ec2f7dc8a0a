"""`train.adaptive_by` names a column of row kinds: each value becomes a metric, a TensorBoard tag and a
Prometheus label, so a free-text column is refused before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.driver.prompts import MAX_ADAPTIVE_VALUES, adaptive_values

ROOT = Path(__file__).resolve().parents[2]


def test_a_column_of_kinds_is_taken_and_a_free_text_one_is_refused():
    assert adaptive_values([{"kind": k} for k in "abcab"], "kind") == ["a", "b", "c"]
    rows = [{"prompt": f"question {i}"} for i in range(MAX_ADAPTIVE_VALUES + 1)]
    with pytest.raises(ValueError, match="65 distinct values, at most 64"):
        adaptive_values(rows, "prompt")
    assert len(adaptive_values(rows[:MAX_ADAPTIVE_VALUES], "prompt")) == MAX_ADAPTIVE_VALUES


def test_train_py_refuses_adaptive_sampling_by_the_prompt_before_ray(tmp_path):
    p = subprocess.run([sys.executable, "train.py", "--set", f"train.run_dir={tmp_path}", "--set",
                        "train.sampling=adaptive", "--set", "train.adaptive_by=prompt"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "train.adaptive_by='prompt'" in p.stderr and "at most 64" in p.stderr
    assert "Started a local Ray" not in p.stdout + p.stderr

"""`python -m tasks.fund_assistant generate|audit`, run as a user would (a subprocess in the repo root)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tasks.fund_assistant import CATEGORIES, load_jsonl

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tasks.fund_assistant", *args],
        cwd=ROOT,
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )


def test_generate_writes_splits_meta_and_prints_counts(tmp_path):
    out = tmp_path / "data"
    p = cli("generate", "--out", str(out), "--seed", "3")
    assert p.returncode == 0, p.stderr
    train, eval_ = load_jsonl(out / "train.jsonl"), load_jsonl(out / "eval.jsonl")
    meta = json.loads((out / "meta.json").read_text(encoding="utf-8"))
    assert meta["seed"] == 3
    assert meta["rows"] == {"train": len(train), "eval": len(eval_)}
    assert len(train) + len(eval_) == 454 + 823
    for cat in CATEGORIES:
        assert meta["counts"]["eval"][cat] == sum(r["category"] == cat for r in eval_) > 0
        assert cat in p.stdout
    assert "total" in p.stdout and str(len(train) + len(eval_)) in p.stdout

    a = cli("audit", "--n", "20", "--data", str(out), "--seed", "1")
    assert a.returncode == 0, a.stderr
    for cat in CATEGORIES:
        assert f"=== {cat} (" in a.stdout
    assert a.stdout.count("  label   : ") == 20


def test_audit_without_data_generates_in_memory():
    p = cli("audit", "--n", "10", "--seed", "4")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("  request : ") == 10


def test_bad_arguments_and_bad_files_give_a_message_not_a_traceback(tmp_path):
    for args in (
        ["audit", "--n", "zero"],
        ["generate"],
        ["frobnicate"],
        ["generate", "--out", "x", "--eval-fraction", "2"],
    ):
        p = cli(*args)
        assert p.returncode == 2, args
        assert "Traceback" not in p.stderr and "usage:" in p.stderr

    p = cli("audit", "--data", str(tmp_path / "missing"))
    assert p.returncode == 1 and p.stderr.startswith("error:") and "Traceback" not in p.stderr

    (tmp_path / "train.jsonl").write_text('{"prompt": 1}\n', encoding="utf-8")
    (tmp_path / "eval.jsonl").write_text("", encoding="utf-8")
    p = cli("audit", "--data", str(tmp_path))
    assert p.returncode == 1 and "train.jsonl:1:" in p.stderr and "Traceback" not in p.stderr

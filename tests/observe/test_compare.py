"""observe.compare draws several runs in one PNG; bench.compare_runs shares its loading."""

from __future__ import annotations

import json
import subprocess
import sys

from bench import compare_runs
from observe import compare
from observe.series import series

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_two_runs_into_one_png(make_run, tmp_path, capsys):
    a, b = make_run("grpo", switches=False), make_run("ngrpo")
    out = tmp_path / "figs" / "cmp.png"
    rc = compare.main([str(a), str(b), "--out", str(out), "--metric", "frac_reward_zero_std",
                       "--metric", "accuracy", "--smooth", "3", "--shade"])
    assert rc == 0
    assert out.read_bytes().startswith(PNG_MAGIC) and out.stat().st_size > 10_000
    assert str(out) in capsys.readouterr().out
    assert list(out.parent.iterdir()) == [out]


def test_an_old_run_compares_with_a_new_one_on_accuracy(make_run, tmp_path):
    """metrics.jsonl of a run from before the rename has tool_accuracy: it reads as accuracy."""
    old, new = make_run("old"), make_run("new")
    rows = [json.loads(x) for x in (old / "metrics.jsonl").read_text().splitlines()]
    rows = [{k.replace("accuracy", "tool_accuracy", 1) if k.startswith("accuracy") else k: v
             for k, v in r.items()} for r in rows]
    assert "tool_accuracy/combo" in rows[0] and "accuracy" not in rows[0]
    (old / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = compare.load_runs([old, new])
    assert series(runs[0].rows, "accuracy") == series(runs[1].rows, "accuracy")
    assert series(runs[0].rows, "accuracy/combo")[1] == [0.5] * 12
    out = tmp_path / "cmp.png"
    assert compare.main([str(old), str(new), "--out", str(out)]) == 0  # the default metrics: accuracy too
    assert out.read_bytes().startswith(PNG_MAGIC)
    # the old name on the command line (docs/experiments.md's commands) draws the new key
    assert compare.main([str(old), str(new), "--out", str(out), "--metric", "tool_accuracy/combo"]) == 0


def test_missing_run_dir_is_an_error(make_run, tmp_path, capsys):
    a = make_run("a")
    rc = compare.main([str(a), str(tmp_path / "nope"), "--out", str(tmp_path / "x.png")])
    assert rc == 2
    assert "nope is not a run directory (no metrics.jsonl)" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_unknown_metric_is_an_error_naming_it(make_run, tmp_path, capsys):
    a, b = make_run("a"), make_run("b")
    rc = compare.main([str(a), str(b), "--out", str(tmp_path / "x.png"), "--metric", "reward_meen"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "unknown metric 'reward_meen'" in err and "reward_mean" in err  # the known ones are listed
    assert not (tmp_path / "x.png").exists()


def test_module_entry_point_exits_non_zero_on_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "observe.compare", str(tmp_path / "a"), str(tmp_path / "b"),
                           "--out", str(tmp_path / "x.png")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "is not a run directory" in proc.stderr


def test_bench_compare_runs_still_reads_runs(make_run, capsys):
    a, b = make_run("grpo", switches=False), make_run("ngrpo")
    assert compare_runs.main([str(a), str(b), "--every", "6"]) == 0
    text = capsys.readouterr().out
    assert "- ngrpo: NGRPO switch events: step 5 on (0.34), step 9 off (0.18)" in text
    assert "- grpo: NGRPO switch events: none" in text
    assert "| 1–6 |" in text and "| 7–12 |" in text
    assert "| tool accuracy | 40.0% | 52.0% | 40.0% | 52.0% |" in text

"""observe.compare draws several runs in one PNG; bench.compare_runs shares its loading."""

from __future__ import annotations

import subprocess
import sys

from bench import compare_runs
from observe import compare

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_two_runs_into_one_png(make_run, tmp_path, capsys):
    a, b = make_run("grpo", switches=False), make_run("ngrpo")
    out = tmp_path / "figs" / "cmp.png"
    rc = compare.main([str(a), str(b), "--out", str(out), "--metric", "frac_reward_zero_std",
                       "--metric", "tool_accuracy", "--smooth", "3", "--shade"])
    assert rc == 0
    assert out.read_bytes().startswith(PNG_MAGIC) and out.stat().st_size > 10_000
    assert str(out) in capsys.readouterr().out
    assert list(out.parent.iterdir()) == [out]


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

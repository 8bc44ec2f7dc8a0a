"""write_report: plots and report.md from a run directory, including runs that stopped half-way."""

from __future__ import annotations

import json

import pytest

from observe import report as report_mod
from observe.report import render_report, write_report
from observe.runs import load_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALL_PLOTS = {"reward.png", "zero_std.png", "tool_accuracy.png", "eval.png", "time.png"}


def pngs(folder) -> set[str]:
    return {p.name for p in folder.glob("*.png")}


def test_full_run_gets_every_plot_and_a_report_with_switches_and_eval(run_dir):
    path = write_report(run_dir)

    assert path == run_dir / "report" / "report.md"
    assert pngs(path.parent) == ALL_PLOTS
    for name in ALL_PLOTS:
        data = (path.parent / name).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000, name
    md = path.read_text()
    assert "# Run report: run-a" in md
    assert "NGRPO mode: dynamic (on above 0.3, off below 0.2, window 3)" in md
    assert "learning rate: 0.002" in md and "12 recorded of 12 configured" in md
    assert "step 5: switched on (window frac_reward_zero_std 0.340)" in md
    assert "step 9: switched off (window frac_reward_zero_std 0.180)" in md
    assert "NGRPO was on for 4 of 12 steps: 5–8." in md
    # eval.json without eval_table.md: the table is built from eval.json
    assert "| tool accuracy | 40.0% | 52.0% |" in md and "| combo | 25.0% | 75.0% |" in md
    for name in ALL_PLOTS:
        assert f"]({name})" in md
    # final reward_mean is 0.2 + 0.05 * 12
    assert "| reward_mean | 0.25 |" in md and "| 0.8 |" in md


def test_eval_table_md_is_reused_when_present(run_dir):
    table = "| metric | before | after |\n|---|---|---|\n| tool accuracy | 1.0% | 99.0% |\n"
    (run_dir / "eval_table.md").write_text(table)
    md = render_report(load_run(run_dir), images={})  # the pure half of write_report: no plots drawn
    assert "| tool accuracy | 1.0% | 99.0% |" in md
    assert "40.0%" not in md


def test_run_without_eval_or_switches(make_run):
    run_dir = make_run("no-eval", eval_json=False, switches=False)
    path = write_report(run_dir)
    md = path.read_text()
    assert "No eval yet" in md and "No switch events." in md
    assert pngs(path.parent) == ALL_PLOTS - {"eval.png"}
    assert "eval.png" not in md


def test_run_with_no_steps_says_so(make_run):
    run_dir = make_run("empty", steps=0, eval_json=False, switches=False)
    path = write_report(run_dir)
    md = path.read_text()
    assert "No training steps recorded" in md and "0 recorded of 12 configured" in md
    assert pngs(path.parent) == set() and "## Plots" not in md


def test_bare_directory_and_crash_leftovers(tmp_path):
    """Nothing but a cut-off metrics line and a half-written config: still a report."""
    run_dir = tmp_path / "crashed"
    run_dir.mkdir()
    (run_dir / "metrics.jsonl").write_text('{"step": 1, "reward_mean": 0.5}\n{"step": 2, "rew')
    (run_dir / "config.json").write_text('{"model": ')
    md = write_report(run_dir).read_text()
    assert "- no config.json" in md and "| reward_mean | 0.5 |" in md
    assert pngs(run_dir / "report") == {"reward.png"}  # no std, no time, no accuracy: only the reward


def test_stale_plots_are_removed_on_rewrite(run_dir):
    (run_dir / "metrics.jsonl").write_text('{"step": 1, "reward_mean": 0.5}\n')  # two plots: quick
    write_report(run_dir)
    assert pngs(run_dir / "report") == {"reward.png", "eval.png"}
    (run_dir / "eval.json").unlink()
    write_report(run_dir)
    assert pngs(run_dir / "report") == {"reward.png"}


def test_switches_fall_back_to_the_final_json(make_run):
    run_dir = make_run("finished", switches=False)
    saved = [{"step": 3, "active": True, "window_value": 0.5}]
    (run_dir / "ngrpo_switch_events.json").write_text(json.dumps(saved))
    assert load_run(run_dir).switches == saved
    assert "step 3: switched on" in render_report(load_run(run_dir), images={})


def test_cli_writes_report_and_rejects_missing_dir(make_run, tmp_path, capsys):
    run_dir = make_run("short", steps=0)
    assert report_mod.main([str(run_dir), "--out", str(tmp_path / "elsewhere")]) == 0
    assert (tmp_path / "elsewhere" / "report.md").exists()
    assert "wrote" in capsys.readouterr().out
    assert report_mod.main([str(tmp_path / "nope")]) == 2
    assert "no run directory" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError):
        write_report(tmp_path / "nope")

"""write_report: plots and report.md from a run directory, including runs that stopped half-way."""

from __future__ import annotations

import json

import pytest
from matplotlib.patches import Rectangle

from observe import plots
from observe import report as report_mod
from observe.report import render_report, write_report
from observe.runs import load_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALL_PLOTS = {"reward.png", "zero_std.png", "accuracy.png", "eval.png", "time.png"}


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


def test_a_generic_tasks_eval_shows_its_own_keys_accuracy_first(run_dir, monkeypatch):
    tables = {"before": {"reward_mean": 0.41, "accuracy": 0.25, "reward/gt": 0.3, "reward_failures": 0,
                         "per_category": {"x": 0.5}, "n": 8, "policy_version": 0, "seconds": 1.5},
              "after": {"reward_mean": 0.83, "accuracy": 0.75, "reward/gt": 0.7, "reward_failures": 1,
                        "per_category": {"x": 1.0}, "n": 8, "policy_version": 12, "seconds": 1.5}}
    (run_dir / "eval.json").write_text(json.dumps(tables))
    md = render_report(load_run(run_dir), images={})
    eval_md = md.split("## Eval (held-out)", 1)[1].split("##", 1)[0]
    labels = [line.split(" | ")[0].lstrip("| ") for line in eval_md.splitlines() if line.startswith("| ")]
    assert labels == ["metric", "accuracy", "reward mean", "reward/gt", "x"]  # no bookkeeping rows
    assert "| accuracy | 25.0% | 75.0% |" in eval_md and "| reward mean | 0.41 | 0.83 |" in eval_md
    assert "tool accuracy" not in md
    # the plot: the table's rates (accuracy; a *_mean or reward/ score is no rate), then per category
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, out: figures.append(fig) or out)
    assert plots.plot_eval(load_run(run_dir), run_dir / "eval.png") is not None
    (ax,) = figures[0].axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["accuracy", "x"]


def test_the_fund_assistants_eval_plot_shows_its_own_keys(run_dir, monkeypatch):
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, out: figures.append(fig) or out)
    assert plots.plot_eval(load_run(run_dir), run_dir / "eval.png") is not None
    (ax,) = figures[0].axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["average_score", "tool_accuracy", "reasoning_score", "balance", "combo"]


def test_an_old_runs_tool_accuracy_rows_read_as_accuracy(run_dir):
    rows = [{"step": s, "reward_mean": 0.5, "tool_accuracy": s / 4, "tool_accuracy/combo": 0.5}
            for s in (1, 2, 3, 4)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = load_run(run_dir)
    assert run.rows[0] == {"step": 1, "reward_mean": 0.5, "accuracy": 0.25, "accuracy/combo": 0.5}
    (run_dir / "report").mkdir()
    (run_dir / "report" / "tool_accuracy.png").write_bytes(PNG_MAGIC)  # the old report's name of the plot
    md = write_report(run_dir).read_text()
    assert "| accuracy | 0.25 |" in md and "](accuracy.png)" in md
    assert "accuracy.png" in pngs(run_dir / "report") and "tool_accuracy.png" not in pngs(run_dir / "report")


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


# ---- time: every second counted once --------------------------------------------------------------
# A synchronous step: generate, reward, learn and sync one after the other, 0.1 s of bookkeeping
# between them; time/step is the step's wall time, the total of all that, not one more phase.
SYNC_TIMES = {"time/generate": 1.0, "time/reward": 0.25, "time/learn": 2.0, "time/sync": 0.15,
              "time/step": 3.5}
# One-step-off, as the coordinator records it: step 1 generates its own batch; from step 2 on a step's
# batch was launched just before the previous step's learn and collected after it, so its time/generate
# (counted launch → collection) lies inside the previous step's wall time. Batch 3 took 0.5 s longer
# than learn 2: step 2 waited for it (3.0 s instead of 2.5 s).
ONE_STEP_OFF_TIMES = [
    {"time/generate": 1.5, "time/step": 4.0},
    {"time/generate": 2.0, "time/step": 3.0},
    {"time/generate": 2.5, "time/step": 2.5},
    {"time/generate": 2.0, "time/step": 2.5},
]


def with_times(run_dir, times: list[dict]):
    rows = [{"step": s, "reward_mean": 0.5, "time/reward": 0.25, "time/learn": 2.0, "time/sync": 0.15, **t}
            for s, t in enumerate(times, 1)]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_dir


def time_line(run_dir) -> str:
    md = render_report(load_run(run_dir), images={})
    (line,) = [x for x in md.splitlines() if x.startswith("Time in RL steps")]
    return line


def shares(line: str) -> dict[str, int]:
    """"… (the sum of time/step): generate 29%, learn 57%; …" → {"generate": 29, "learn": 57}"""
    listed = line.split("time/step): ", 1)[1].split(";", 1)[0]
    return {name: int(pct.rstrip("%")) for name, pct in (item.split() for item in listed.split(", "))}


def test_time_line_of_a_synchronous_run_is_the_sum_of_the_step_wall_times(run_dir):
    line = time_line(with_times(run_dir, [SYNC_TIMES] * 12))
    # 12 × 3.5 s; summing time/step with its phases said 83 s
    assert line.startswith("Time in RL steps: 42 s")
    # the total is not a share of itself: the phases and the 0.1 s a step between them, 100% together
    assert shares(line) == {"generate": 29, "reward": 7, "learn": 57, "sync": 4, "other": 3}
    assert "one-step-off" not in render_report(load_run(run_dir), images={})


def test_time_lines_of_a_one_step_off_run_give_the_wall_time_and_the_overlap(run_dir):
    md = render_report(load_run(with_times(run_dir, ONE_STEP_OFF_TIMES)), images={})
    line = time_line(run_dir)
    assert line.startswith("Time in RL steps: 12 s")  # 4 + 3 + 2.5 + 2.5, not 29.6 s of every time/* key
    assert shares(line)["learn"] == 67  # 8 s of learning in 12 s of wall time
    (overlap,) = [x for x in md.splitlines() if "one-step-off" in x]
    # steps 2-4 generated 6.5 s ahead: 6 s behind the previous step's learn, 0.5 s waited for
    assert "6.5 s" in overlap and "6.0 s hidden behind learning" in overlap and "0.5 s" in overlap


def plotted_time(run_dir, monkeypatch):
    """plot_time's axes, caught before they are saved."""
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, out: figures.append(fig) or out)
    assert plots.plot_time(load_run(run_dir), run_dir / "time.png") is not None
    return figures[0].axes


def filled_tops(ax) -> dict[int, float]:
    """The top of the filled areas (bars or stacked areas) at each step."""
    tops: dict[int, float] = {}
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_height() > 0:
            s = round(p.get_x() + p.get_width() / 2)
            tops[s] = max(tops.get(s, 0.0), p.get_y() + p.get_height())
    for c in ax.collections:
        for path in c.get_paths():
            for x, y in path.vertices:
                if abs(x - round(x)) < 1e-9:
                    tops[round(x)] = max(tops.get(round(x), 0.0), y)
    return tops


def test_time_plot_of_a_synchronous_run_stacks_the_phases_under_the_step_time(run_dir, monkeypatch):
    (ax,) = plotted_time(with_times(run_dir, [SYNC_TIMES] * 12), monkeypatch)
    tops = filled_tops(ax)
    assert sorted(tops) == list(range(1, 13))
    assert all(top == pytest.approx(3.4) for top in tops.values())  # the phases; 0.1 s unmeasured, ≤ 3.5 s
    (wall,) = [ln for ln in ax.get_lines() if "time/step" in ln.get_label()]
    assert list(wall.get_ydata()) == [3.5] * 12


def test_time_plot_of_a_one_step_off_run_draws_the_overlapped_generation_apart(run_dir, monkeypatch):
    axes = plotted_time(with_times(run_dir, ONE_STEP_OFF_TIMES), monkeypatch)
    walls = {s: t["time/step"] for s, t in enumerate(ONE_STEP_OFF_TIMES, 1)}
    tops = filled_tops(axes[0])  # the first panel: each step's own seconds
    assert all(tops[s] <= walls[s] + 1e-9 for s in walls)
    assert tops[1] == pytest.approx(3.9) and tops[2] == pytest.approx(2.4)  # step 1 generated inside itself
    # a second panel: the batches generated ahead, beside the learn of the step they ran during
    assert len(axes) == 2 and "one-step-off" in axes[1].get_title()
    assert filled_tops(axes[1]) == {2: 2.0, 3: 2.5, 4: 2.0}
    (learn,) = axes[1].get_lines()
    assert list(learn.get_xdata()) == [2, 3, 4] and list(learn.get_ydata()) == [2.0] * 3

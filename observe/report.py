"""The report of one run: `<run_dir>/report/` with PNG plots and report.md that links them.

    python -m observe.report runs/<run>        # (re)writes runs/<run>/report/

Works on whatever the run left behind: a run that died before its first step or before the eval gets
a report that says what is missing. `render_report` is pure (a `Run` and the plot files → Markdown).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from observe import plots
from observe.completions_view import completions_section
from observe.faults import fault_summary, faults_markdown, learning_line
from observe.runs import Run, load_run
from observe.schema import lookup
from observe.series import active_spans, hidden_generation, numeric, series, step_times, summary
from observe.tables import eval_scalar_keys, format_eval_tables

# (file stem, plot function, caption); a plot with nothing to draw is left out.
PLOTS = [
    ("reward", plots.plot_reward, "Reward per step (± std within the step), NGRPO-on steps shaded"),
    ("zero_std", plots.plot_zero_std, "Groups with zero reward std, the switch's window mean, NGRPO on"),
    ("accuracy", plots.plot_accuracy, "Accuracy per category (the task's judge) during training (smoothed)"),
    ("eval", plots.plot_eval, "Held-out eval: the task's rates, then accuracy per category, before / after"),
    ("time", plots.plot_time, ("Seconds of each step: its phases stacked under its wall time (line); "
                               "one-step-off, the generation that overlapped learning in a panel of "
                               "its own")),
]
OLD_PLOTS = ["tool_accuracy"]  # stems a report of an older version wrote (now "accuracy")
# Rows of the metrics table, in this order, when measured.
SUMMARY_KEYS = ["reward_mean", "reward_std", "frac_reward_zero_std", "ngrpo_active", "accuracy",
                "advantage_abs_mean", "completion_length", "frac_truncated", "entropy", "grad_norm",
                "approx_kl"]
SUMMARY_LAST = 10


def _fmt(v: Any) -> str:
    v = numeric(v)
    return "—" if v is None else f"{v:.4g}"


def _dig(d: Any, *path: str) -> Any:
    """d[path[0]][path[1]]…, or None where a level is missing (older or partial config.json)."""
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return d


def config_lines(cfg: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """The few settings that tell runs apart."""
    if not cfg:
        return ["- no config.json (missing or unreadable)"]
    ngrpo = _dig(cfg, "algorithm", "ngrpo") or {}
    mode = str(ngrpo.get("mode", "—"))
    if mode == "dynamic":
        on, off, window = (ngrpo.get(k) for k in ("on_above", "off_below", "window"))
        mode += f" (on above {on}, off below {off}, window {window})"
    warm = _dig(cfg, "train", "warmup") or {}
    warmup = f"{warm.get('steps')} steps" if warm.get("enabled") else "off"
    functions = _dig(cfg, "reward", "functions") or []
    rewards = ", ".join(str(f.get("name")) for f in functions if isinstance(f, dict))
    per_step = _dig(cfg, "train", "prompts_per_step")
    return [
        f"- model: `{_dig(cfg, 'model', 'name')}`",
        f"- steps: {len(rows)} recorded of {_dig(cfg, 'train', 'steps')} configured",
        f"- NGRPO mode: {mode}",
        f"- learning rate: {_dig(cfg, 'learner', 'lr')}",
        f"- prompts per step × completions: {per_step} × {_dig(cfg, 'rollout', 'n')}",
        f"- reward: {rewards or '—'}",
        f"- warm-up: {warmup}",
    ]


def metrics_lines(rows: list[dict[str, Any]]) -> list[str]:
    out = [f"| metric | first | mean | mean of last {SUMMARY_LAST} | final | meaning |",
           "|---|---|---|---|---|---|"]
    for key in SUMMARY_KEYS:
        if (s := summary(rows, key, SUMMARY_LAST)) is not None:
            cells = " | ".join(_fmt(s[c]) for c in ("first", "mean", "last_mean", "final"))
            out.append(f"| {key} | {cells} | {lookup(key).help} |")
    if lines := time_lines(rows):
        out += ["", *lines]
    failures = sum(series(rows, "reward_failures")[1])
    if failures:
        out += ["", f"Reward failures (completions scored 0 after a crash or timeout): {failures:.0f}."]
    return out


def time_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The RL loop's wall time (the sum of time/step) and each phase's share of it; one-step-off, the
    generation that ran alongside learning on a line of its own. time/step is the total of the other
    time/* keys, not a phase, and generation run ahead is not part of any step's wall time: adding
    either in would count the same seconds twice."""
    times = step_times(rows)
    wall = sum(t.wall for t in times)
    if wall <= 0:
        return []
    phases: dict[str, float] = {}
    for t in times:
        for name, s in t.phases.items():
            phases[name] = phases.get(name, 0.0) + s
    phases["other"] = sum(t.other for t in times)
    shares = ", ".join(f"{name} {s / wall:.0%}" for name, s in phases.items())
    out = [(f"Time in RL steps: {wall:.0f} s of wall time over {len(times)} steps (the sum of time/step): "
            f"{shares}; other is time between the phases (advantages, bookkeeping).")]
    ahead = [t for t in times if t.ahead]
    if ahead:
        hidden, waited = hidden_generation(times)
        out.append(f"The one-step-off pipeline generated {len(ahead)} of the {len(times)} batches during the "
                   f"previous step's update: {sum(t.ahead for t in ahead):.1f} s of time/generate, not in "
                   "the wall time or the shares above (generate there is the steps that generated their "
                   f"own); {hidden:.1f} s hidden behind learning, {waited:.1f} s waited for after it "
                   "(in other).")
    return out


def switch_lines(run: Run) -> list[str]:
    spans = active_spans(run.rows)
    on_steps = sum(hi - lo + 1 for lo, hi in spans)
    where = ", ".join(f"{lo}–{hi}" if lo != hi else f"{lo}" for lo, hi in spans)
    out = [f"NGRPO was on for {on_steps} of {len(run.rows)} steps" + (f": {where}." if where else ".")]
    if not run.switches:
        out.append("No switch events.")
    for sw in run.switches:
        wv = numeric(sw.get("window_value"))
        out.append(f"- step {sw.get('step')}: switched {'on' if sw.get('active') else 'off'}"
                   + (f" (window frac_reward_zero_std {wv:.3f})" if wv is not None else ""))
    return out


def reliability_lines(run: Run) -> list[str]:
    """Every recovery, rollback, resume, skipped update and stop of the run, in order."""
    lines = []
    for e in run.events:
        kind, step = e.get("event"), e.get("step")
        if kind == "recovery":
            lines.append(f"- step {step}: {e.get('role')}-{e.get('index')} on node "
                         f"{e.get('node') or 'local'} replaced ({e.get('cause')}); "
                         f"restart {e.get('restarts')}")
        elif kind in ("rollback", "resume"):
            lines.append(f"- {kind} to the checkpoint of step {step} ({e.get('path')})")
        elif kind == "update_skipped":
            lines.append(f"- step {step}: update skipped (non-finite loss "
                         f"or gradient; {e.get('in_a_row')} in a row)")
        elif kind == "stopped":
            lines.append(f"- step {step}: run stopped: {e.get('reason')}")
        elif kind == "no_signal":
            lines.append(f"- step {step}: {e.get('message')}")
    learning = learning_line(run.events)
    if learning:
        lines.append(f"- {learning}")
    return lines or ["No role failed, no reward failed, every step updated the policy."]


def eval_markdown(tables: dict[str, dict[str, Any]]) -> str:
    """eval.json as a Markdown table, for runs that died before writing eval_table.md: whatever scalar
    keys the task's tables have (`accuracy` first when present), then the accuracy per category."""
    return format_eval_tables(tables, eval_scalar_keys(tables))


def eval_section(run: Run) -> list[str]:
    table_md = run.path / "eval_table.md"
    if table_md.exists() and table_md.read_text(encoding="utf-8").strip():
        return [table_md.read_text(encoding="utf-8").strip()]
    if run.eval:
        return [eval_markdown(run.eval)]
    return ["No eval yet (no eval.json in the run directory)."]


def render_report(run: Run, images: dict[str, Path]) -> str:
    """report.md for `run`; `images` maps plot stems to the PNGs written next to it."""
    out = [f"# Run report: {run.name}", "", f"Run directory: `{run.path}`", "",
           "## Config", *config_lines(run.config, run.rows)]
    warm = next((e for e in run.events if e.get("event") == "warmup"), None)
    if warm and numeric(warm.get("warmup_loss_first")) is not None:
        first, last = _fmt(warm.get("warmup_loss_first")), _fmt(warm.get("warmup_loss_last"))
        out.append(f"- warm-up loss: {first} → {last}")
    out += ["", "## Training metrics"]
    if run.rows:
        out += metrics_lines(run.rows)
    else:
        out.append("No training steps recorded (metrics.jsonl is missing or empty).")
    out += ["", "## NGRPO switch", *switch_lines(run), "", "## Reliability",
            *faults_markdown(fault_summary(run.events)), "", *reliability_lines(run),
            "", "## Eval (held-out)", *eval_section(run),
            "", "## What the model said", *completions_section(run.path, list(run.eval))]
    if images:
        out += ["", "## Plots"]
        for stem, _, caption in PLOTS:
            if stem in images:
                out += ["", f"{caption}:", "", f"![{stem}]({images[stem].name})"]
    return "\n".join(out) + "\n"


def write_report(run_dir: str | Path, out_dir: str | Path | None = None) -> Path:
    """Write the plots and report.md into `out_dir` (default `<run_dir>/report/`); returns report.md's path.

    Raises FileNotFoundError only when `run_dir` does not exist; a partial run gets a partial report.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"no run directory at {run_dir}")
    out = Path(out_dir) if out_dir is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    run = load_run(run_dir)
    images: dict[str, Path] = {}
    for stem in OLD_PLOTS:
        (out / f"{stem}.png").unlink(missing_ok=True)
    for stem, plot, _ in PLOTS:
        path = out / f"{stem}.png"
        path.unlink(missing_ok=True)  # a plot that has no data now must not survive from an older report
        if plot(run, path) is not None:
            images[stem] = path
    report = out / "report.md"
    report.write_text(render_report(run, images), encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a run directory (metrics.jsonl, events.jsonl, eval.json, config.json)")
    p.add_argument("--out", help="where to write (default RUN_DIR/report)")
    args = p.parse_args(argv)
    try:
        path = write_report(args.run_dir, args.out)
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""PNG plots of one run: reward, zero-std groups with NGRPO shaded, accuracy (the task's judge), eval, time
per step.

Each function draws one figure from a `Run` and returns the file it wrote, or None when the run has
nothing to draw (a key never measured, no eval yet), so a report of a partial run just has fewer plots.
Figures are built with `matplotlib.figure.Figure`, not pyplot: no global state and no GUI backend, so
it runs in a headless Ray driver and in threads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from observe.runs import Run
from observe.series import active_spans, keys_with_prefix, moving_mean, numeric, series, step_times
from observe.tables import eval_scalar_keys, is_rate

NGRPO_COLOR = "tab:orange"
# One colour per phase in every run's time plot; a phase not listed gets the next default colour.
PHASE_COLORS = {"generate": "tab:blue", "reward": "tab:green", "learn": "tab:orange", "sync": "tab:purple"}


def shade_spans(ax: Axes, spans: list[tuple[int, int]], label: str | None = "NGRPO on",
                color: str = NGRPO_COLOR, alpha: float = 0.15) -> None:
    """Shade inclusive step ranges; half a step either side so a one-step span is visible."""
    for i, (lo, hi) in enumerate(spans):
        ax.axvspan(lo - 0.5, hi + 0.5, color=color, alpha=alpha, lw=0, label=label if i == 0 else None)


def _figure(width: float = 8, height: float = 4, ncols: int = 1) -> tuple[Figure, Any]:
    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(1, ncols)


def _save(fig: Figure, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out


def plot_reward(run: Run, out: Path) -> Path | None:
    """reward_mean over the steps with a ± reward_std band (the spread within a step's groups)."""
    steps, mean = series(run.rows, "reward_mean")
    if not steps:
        return None
    std_by_step = dict(zip(*series(run.rows, "reward_std")))
    fig, ax = _figure()
    shade_spans(ax, active_spans(run.rows))
    ax.plot(steps, mean, color="tab:blue", label="reward_mean")
    if std_by_step:
        lo = [m - std_by_step.get(s, 0.0) for s, m in zip(steps, mean)]
        hi = [m + std_by_step.get(s, 0.0) for s, m in zip(steps, mean)]
        ax.fill_between(steps, lo, hi, color="tab:blue", alpha=0.2, lw=0, label="± reward_std")
    ax.set(xlabel="step", ylabel="reward", title=f"{run.name}: reward")
    ax.legend(loc="best")
    return _save(fig, out)


def plot_zero_std(run: Run, out: Path) -> Path | None:
    """frac_reward_zero_std (groups with no learning signal under GRPO), the switch's window mean and
    thresholds, and the steps where NGRPO was on."""
    steps, frac = series(run.rows, "frac_reward_zero_std")
    if not steps:
        return None
    ngrpo = (run.config.get("algorithm") or {}).get("ngrpo") or {}
    window = int(numeric(ngrpo.get("window")) or 1)
    fig, ax = _figure()
    shade_spans(ax, active_spans(run.rows))
    ax.plot(steps, frac, color="tab:gray", lw=1, alpha=0.7, label="frac_reward_zero_std")
    if window > 1:
        ax.plot(steps, moving_mean(frac, window), color="black", label=f"window mean ({window} steps)")
    if ngrpo.get("mode") == "dynamic":
        for key, style in (("on_above", "--"), ("off_below", ":")):
            if (v := numeric(ngrpo.get(key))) is not None:
                ax.axhline(v, color=NGRPO_COLOR, ls=style, lw=1, label=f"{key} {v:g}")
    for sw in run.switches:
        if (s := numeric(sw.get("step"))) is not None:
            ax.axvline(s, color=NGRPO_COLOR, lw=1)
    ax.set(xlabel="step", ylabel="fraction of groups", ylim=(-0.02, 1.02),
           title=f"{run.name}: groups with zero reward std")
    ax.legend(loc="best", fontsize="small")
    return _save(fig, out)


def plot_accuracy(run: Run, out: Path, smooth: int = 5) -> Path | None:
    """Accuracy (the task's judge) per category over the steps, as a trailing mean: one step has only a
    few prompts of a category, so single-step values jump between 0 and 1."""
    cats = keys_with_prefix(run.rows, "accuracy/")
    steps, overall = series(run.rows, "accuracy")
    if not cats and not steps:
        return None
    fig, ax = _figure(9, 4.5)
    for key in cats:
        s, v = series(run.rows, key)
        ax.plot(s, moving_mean(v, smooth), lw=1, label=key.split("/", 1)[1])
    if steps:
        ax.plot(steps, moving_mean(overall, smooth), color="black", lw=2.5, label="all")
    ax.set(xlabel="step", ylabel="accuracy", ylim=(-0.02, 1.02),
           title=f"{run.name}: accuracy per category (the task's judge), trailing mean over {smooth} steps")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    return _save(fig, out)


def plot_eval(run: Run, out: Path) -> Path | None:
    """The held-out eval, one bar per eval (before / after): first the table's rates as the task names
    them (`accuracy` first when present: a generic task's `accuracy`, the fund assistant's
    `average_score`, `tool_accuracy`, `reasoning_score`, an agent run's `success_rate`, ...), then the
    accuracy per category (the task's judge; agent runs: episode success)."""
    tags = [t for t in ("before", "after") if t in run.eval] + sorted(set(run.eval) - {"before", "after"})
    if not tags:
        return None
    keys = [k for k in eval_scalar_keys({t: run.eval[t] for t in tags}) if is_rate(k)]
    cats = sorted({c for t in tags for c in (run.eval[t].get("per_category") or {})})
    labels = [*keys, *cats]
    if not labels:
        return None

    def value(tag: str, i: int) -> float:
        t = run.eval[tag]
        v = t.get(labels[i]) if i < len(keys) else (t.get("per_category") or {}).get(labels[i])
        return numeric(v) or 0.0

    fig, ax = _figure(max(6, 0.8 * len(labels) + 2), 4)
    width = 0.8 / len(tags)
    for i, tag in enumerate(tags):
        xs = [j + (i - (len(tags) - 1) / 2) * width for j in range(len(labels))]
        bars = ax.bar(xs, [value(tag, j) for j in range(len(labels))], width=width, label=tag)
        ax.bar_label(bars, fmt="{:.0%}", fontsize=6, padding=1)  # a 0% bar is otherwise invisible
    if keys and cats:  # the table's rates | per category
        ax.axvline(len(keys) - 0.5, color="tab:gray", lw=1, ls=":")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    # Headroom above 100% for the legend, so it never covers a bar.
    ax.set(ylabel="rate", ylim=(0, 1.2), yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
           title=f"{run.name}: held-out eval (the task's rates | accuracy per category)")
    ax.legend(loc="upper left", ncols=len(tags))
    return _save(fig, out)


def plot_time(run: Run, out: Path) -> Path | None:
    """Seconds of each step, every second counted once.

    Bars: the phases that ran one after the other inside the step (generate, reward, learn, sync),
    stacked. Black line: the step's wall time (time/step); it is the total, never stacked on its phases,
    and the gap above the bars is time no phase measured (advantages, bookkeeping; one-step-off also the
    wait for the next batch). In the one-step-off pipeline a step's batch was generated while the
    previous step learned (`series.step_times` tells from the rows): stacking it would count the seconds
    of the learn bar twice, so it gets a panel of its own below, at the step that trains on the batch,
    with the previous step's learn as a line: the part under the line was hidden behind learning, the
    part above it the loop waited for.
    """
    times = step_times(run.rows)
    if not times:
        return None
    steps = [t.step for t in times]
    names = list(dict.fromkeys(name for t in times for name in t.phases))
    ahead = [t for t in times if t.ahead]
    fig = Figure(figsize=(8, 6 if ahead else 4), layout="constrained")
    ax, *below = fig.subplots(2 if ahead else 1, 1, sharex=True, height_ratios=[2, 1] if ahead else None,
                              squeeze=False)[:, 0]
    bottom = [0.0] * len(times)
    for name in names:
        height = [t.phases.get(name, 0.0) for t in times]
        # not antialiased: hundreds of touching bars would otherwise show white seams between them
        ax.bar(steps, height, bottom=bottom, width=1.0, lw=0, antialiased=False, color=PHASE_COLORS.get(name),
               label=name)
        bottom = [b + h for b, h in zip(bottom, height)]
    ax.plot(steps, [t.wall for t in times], color="black", lw=1, label="step wall time (time/step)")
    top = max(t.wall for t in times)
    ax.set(ylabel="seconds", ylim=(0, 1.4 * top or 1.0),  # headroom for the legend
           title=f"{run.name}: seconds per step, phases stacked under the wall time")
    ax.legend(loc="upper left", ncols=3, fontsize="small")
    if ahead:
        (low,) = below
        learn = {t.step: t.phases.get("learn") for t in times}
        low.bar([t.step for t in ahead], [t.ahead for t in ahead], width=1.0, lw=0, antialiased=False,
                color=PHASE_COLORS["generate"], alpha=0.6, label="generate, run ahead (time/generate)")
        prev = [(t.step, v) for t in ahead if (v := learn.get(t.step - 1)) is not None]
        low.plot([s for s, _ in prev], [v for _, v in prev], color="black", lw=1,
                 label="the previous step's learn it overlapped")
        low.set(ylabel="seconds", ylim=(0, 1.5 * max(t.ahead for t in ahead)),
                title="one-step-off: batches generated during the previous step, not in the wall time above")
        low.legend(loc="upper left", ncols=2, fontsize="small")
    (below or [ax])[-1].set_xlabel("step")
    return _save(fig, out)

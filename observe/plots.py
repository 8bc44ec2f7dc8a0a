"""PNG plots of one run: reward, zero-std groups with NGRPO shaded, tool accuracy, eval, time per phase.

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
from observe.series import active_spans, keys_with_prefix, moving_mean, numeric, series

NGRPO_COLOR = "tab:orange"


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


def plot_tool_accuracy(run: Run, out: Path, smooth: int = 5) -> Path | None:
    """Tool accuracy per category over the steps, as a trailing mean: one step has only a few prompts
    of a category, so single-step values jump between 0 and 1."""
    cats = keys_with_prefix(run.rows, "tool_accuracy/")
    steps, overall = series(run.rows, "tool_accuracy")
    if not cats and not steps:
        return None
    fig, ax = _figure(9, 4.5)
    for key in cats:
        s, v = series(run.rows, key)
        ax.plot(s, moving_mean(v, smooth), lw=1, label=key.split("/", 1)[1])
    if steps:
        ax.plot(steps, moving_mean(overall, smooth), color="black", lw=2.5, label="all")
    ax.set(xlabel="step", ylabel="tool accuracy", ylim=(-0.02, 1.02),
           title=f"{run.name}: tool accuracy (trailing mean over {smooth} steps)")
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    return _save(fig, out)


def plot_eval(run: Run, out: Path) -> Path | None:
    """Held-out tool accuracy per category, one bar per eval (before / after), overall first."""
    tags = [t for t in ("before", "after") if t in run.eval] + sorted(set(run.eval) - {"before", "after"})
    if not tags:
        return None
    cats = sorted({c for t in tags for c in (run.eval[t].get("per_category") or {})})
    labels = ["all", *cats]

    def value(tag: str, label: str) -> float:
        t = run.eval[tag]
        v = t.get("tool_accuracy") if label == "all" else (t.get("per_category") or {}).get(label)
        return numeric(v) or 0.0

    fig, ax = _figure(max(6, 0.8 * len(labels) + 2), 4)
    width = 0.8 / len(tags)
    for i, tag in enumerate(tags):
        xs = [j + (i - (len(tags) - 1) / 2) * width for j in range(len(labels))]
        bars = ax.bar(xs, [value(tag, lab) for lab in labels], width=width, label=tag)
        ax.bar_label(bars, fmt="{:.0%}", fontsize=6, padding=1)  # a 0% bar is otherwise invisible
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    # Headroom above 100% for the legend, so it never covers a bar.
    ax.set(ylabel="tool accuracy", ylim=(0, 1.2), yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
           title=f"{run.name}: held-out eval")
    ax.legend(loc="upper left", ncols=len(tags))
    return _save(fig, out)


def plot_time(run: Run, out: Path) -> Path | None:
    """Seconds per phase of each step (time/*), stacked: the top edge is the step's wall time."""
    keys = keys_with_prefix(run.rows, "time/")
    if not keys:
        return None
    steps = [int(r.get("step", i)) for i, r in enumerate(run.rows, 1)]
    layers = [[numeric(r.get(k)) or 0.0 for r in run.rows] for k in keys]  # unmeasured phase: 0 s
    fig, ax = _figure()
    ax.stackplot(steps, layers, labels=[k.split("/", 1)[1] for k in keys], alpha=0.85)
    ax.set(xlabel="step", ylabel="seconds", title=f"{run.name}: time per phase")
    ax.legend(loc="upper left", fontsize="small")
    return _save(fig, out)

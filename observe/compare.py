"""Several runs in one figure: one subplot per metric, one line per run (labelled by its directory).

    python -m observe.compare runs/grpo runs/ngrpo --out cmp.png
    python -m observe.compare runs/a runs/b runs/c --out cmp.png --metric accuracy --smooth 5 --shade

`bench.compare_runs` prints the same comparison as a table. An older run's `tool_accuracy` rows read as
`accuracy` (`observe.runs.current_keys`), and `--metric tool_accuracy` draws `accuracy`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from matplotlib.figure import Figure

from observe.plots import shade_spans
from observe.runs import Run, current_key, load_run
from observe.series import active_spans, moving_mean, series

DEFAULT_METRICS = ["frac_reward_zero_std", "reward_mean", "accuracy"]


class CompareError(ValueError):
    """A run or metric that cannot be drawn; the message says which."""


def check_metrics(runs: list[Run], metrics: list[str]) -> None:
    """Every metric must be measured in at least one run; a typo should not give an empty subplot."""
    for m in metrics:
        if not any(series(r.rows, m)[0] for r in runs):
            known = sorted({k for r in runs for row in r.rows for k in row} - {"step"})
            hint = f"; known metrics: {', '.join(known)}" if known else ""
            raise CompareError(f"unknown metric {m!r}: not in any run's metrics.jsonl{hint}")


def plot_compare(runs: list[Run], metrics: list[str], out: str | Path, smooth: int = 1,
                 shade: bool = False) -> Path:
    """Draw `metrics` of `runs` into `out` (PNG); `smooth` > 1 draws a trailing mean over that many
    steps; `shade` marks each run's NGRPO-on steps in its own colour."""
    check_metrics(runs, metrics)
    fig = Figure(figsize=(9, 2.8 * len(metrics) + 0.6), layout="constrained")
    axes = fig.subplots(len(metrics), 1, sharex=True, squeeze=False)[:, 0]
    colors = [f"C{i % 10}" for i in range(len(runs))]
    for ax, metric in zip(axes, metrics):
        for run, color in zip(runs, colors):
            steps, values = series(run.rows, metric)
            if shade:
                shade_spans(ax, active_spans(run.rows), label=None, color=color, alpha=0.08)
            if steps:
                ax.plot(steps, moving_mean(values, smooth), color=color, label=run.name)
        ax.set_ylabel(metric + (f"\n(mean of {smooth})" if smooth > 1 else ""))
        ax.grid(alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    axes[-1].set_xlabel("step")
    fig.suptitle(" vs ".join(r.name for r in runs) + ("  (shaded: NGRPO on)" if shade else ""))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    return out


def load_runs(dirs: list[str | Path]) -> list[Run]:
    """The runs to compare; each directory must have a metrics.jsonl (else there is nothing to draw)."""
    runs = []
    for d in dirs:
        if not (Path(d) / "metrics.jsonl").is_file():
            raise CompareError(f"{d} is not a run directory (no metrics.jsonl)")
        runs.append(load_run(d))
    return runs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run directories (each with metrics.jsonl)")
    p.add_argument("--out", required=True, help="the PNG to write")
    p.add_argument("--metric", action="append", dest="metrics",
                   help=f"a metrics.jsonl key, repeatable (default: {' '.join(DEFAULT_METRICS)})")
    p.add_argument("--smooth", type=int, default=1, help="trailing mean over K steps (default 1: raw)")
    p.add_argument("--shade", action="store_true", help="shade each run's NGRPO-on steps")
    args = p.parse_args(argv)
    if args.smooth < 1:
        p.error("--smooth must be at least 1")
    try:
        runs = load_runs(args.runs)
        metrics = ([current_key(m) for m in args.metrics] if args.metrics  # an old name: its new key
                   else [m for m in DEFAULT_METRICS if any(series(r.rows, m)[0] for r in runs)])
        if not metrics:
            raise CompareError("none of the runs has any of the default metrics; name one with --metric")
        out = plot_compare(runs, metrics, args.out, args.smooth, args.shade)
    except CompareError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Compare run directories side by side: frac_reward_zero_std over the steps, NGRPO switch events,
reward, and the final eval table.

    python -m bench.compare_runs runs/grpo runs/ngrpo [--every 10]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from observe import runs as observe_runs
from observe.tables import eval_scalar_keys, is_rate


def load_run(path: Path) -> dict:
    """The run as the dict `report` reads; reading the directory is `observe.runs.load_run`'s job."""
    run = observe_runs.load_run(path)
    return {"name": run.name, "rows": run.rows, "eval": run.eval, "switches": run.switches}


def _window_mean(rows: list[dict], key: str, lo: int, hi: int) -> float | None:
    vals = [r[key] for r in rows if lo < r["step"] <= hi and r.get(key) is not None]
    return sum(vals) / len(vals) if vals else None


def report(runs: list[dict], every: int) -> str:
    out = []
    last = max((r["rows"][-1]["step"] for r in runs if r["rows"]), default=0)
    head = "| steps | " + " | ".join(f"{r['name']} zero-std | {r['name']} reward | {r['name']} NGRPO on"
                                      for r in runs) + " |"
    out += [head, "|---|" + "---|---|---|" * len(runs)]
    for lo in range(0, last, every):
        hi = min(lo + every, last)
        cells = []
        for r in runs:
            zs = _window_mean(r["rows"], "frac_reward_zero_std", lo, hi)
            rw = _window_mean(r["rows"], "reward_mean", lo, hi)
            on = _window_mean(r["rows"], "ngrpo_active", lo, hi)
            cells += [f"{zs:.2f}" if zs is not None else "—", f"{rw:.3f}" if rw is not None else "—",
                      f"{on:.0%}" if on is not None else "—"]
        out.append(f"| {lo + 1}–{hi} | " + " | ".join(cells) + " |")
    out.append("")
    for r in runs:
        sw = ", ".join(f"step {e['step']} {'on' if e['active'] else 'off'} ({e['window_value']:.2f})"
                       for e in r["switches"]) or "none"
        out.append(f"- {r['name']}: NGRPO switch events: {sw}")
    out.append("")
    out.append("| eval (held-out, greedy) | " + " | ".join(f"{r['name']} before | {r['name']} after"
                                                           for r in runs) + " |")
    out.append("|---|" + "---|---|" * len(runs))
    # The tasks' own eval keys (a generic task's accuracy, the fund assistant's average_score,
    # tool_accuracy, ...), accuracy first, then the accuracy per category.
    keys = eval_scalar_keys({f"{i} {tag}": t for i, r in enumerate(runs) for tag, t in r["eval"].items()})
    cats = sorted({c for r in runs for t in r["eval"].values() for c in t.get("per_category", {})})

    def cell(r, tag, getter, rate):
        t = r["eval"].get(tag)
        v = getter(t) if t else None
        return "—" if v is None else f"{100 * v:.1f}%" if rate else f"{v:.2f}"

    rows = [(k.replace("_", " "), lambda t, k=k: t.get(k), is_rate(k)) for k in keys]
    rows += [(c, lambda t, c=c: t.get("per_category", {}).get(c), True) for c in cats]
    for label, getter, rate in rows:
        out.append(f"| {label} | " + " | ".join(f"{cell(r, 'before', getter, rate)} | "
                                                 f"{cell(r, 'after', getter, rate)}" for r in runs) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", help="run directories (each with metrics.jsonl)")
    p.add_argument("--every", type=int, default=10, help="steps per row")
    args = p.parse_args(argv)
    runs = []
    for d in args.runs:
        path = Path(d)
        if not (path / "metrics.jsonl").exists():
            print(f"error: {d} has no metrics.jsonl", file=sys.stderr)
            return 2
        runs.append(load_run(path))
    print(report(runs, args.every))
    return 0


if __name__ == "__main__":
    sys.exit(main())

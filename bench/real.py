"""`make bench` on the real model: ngrpo-ray on SmolLM2-135M-Instruct against bare vLLM, TRL and the
machine's own matmul peak, as ratios measured in one invocation.

    python -m bench.real [--quick] [--rounds 3] [--out bench/results]

Every side runs bench/work.py's `real` profile (this sets `NGRPO_BENCH_WORK=real` for the processes it
starts) and the groups take turns as in `bench.run`. Writes `real.md` (the table the README quotes),
`real.json` (every unit measured) and, without `--quick`, `real_scaling.png`.

Rows:
- generation: a RolloutWorker (merged LoRA) vs bare `vllm.LLM`, completion tokens per second;
- the learner: its useful FLOP/s (bench/flops.py: counted from the model's shapes and the tokens it
  learned, padding and repeats left out) over the best fp32 matmul FLOP/s of the model's own layer
  shapes on the same threads, measured right after each step; whole sequences and `share_prompt`; the
  share of padded tokens each ran;
- the RL step: synchronous and one-step-off against TRL's GRPOTrainer (HF generate) on the same work,
  one-step-off against synchronous;
- the LoRA push as a share of a synchronous step, and the peak RSS of every role in that run;
- the OpenAI gateway (not with `--quick`): fund-assistant episodes through the gateway against the same
  episodes in the worker's own loop (bench/gateway.py's real-model work), and per call the time outside
  the engine;
- scaling (not with `--quick`): the learner's step against completions a step (16, 64, 256) and
  against completion length (32, 128, 512), with the seconds per token fitted through them.
`--quick` (23 minutes here, of which TRL's two steps, one its warm-up, take about 7) measures one
round of the generation, learner and synchronous-step rows only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

GROUPS = [("gen-ours", "gen-bare"), ("learner-ds", "learner-shared"), ("rl-sync", "rl-off", "trl"),
          ("gw-harness", "gw-free", "gw-worker")]
QUICK_GROUPS = [("gen-ours", "gen-bare"), ("learner-ds", "learner-shared"), ("rl-sync", "trl")]
COMPLETIONS = (16, 64, 256)  # a step's completions, at the profile's lengths
LENGTHS = (32, 128, 512)  # every completion this long, 64 completions
MEMORY_BUDGET_GB = 12.0


def scaling_sides() -> dict[str, list[str]]:
    """One learner side per point of the scaling table: `c<N>` N completions, `t<L>` L tokens each."""
    from bench.work import WORK

    sides = {f"scale-c{c}": ["learner-ds", "--prompts", str(c // WORK["n"])] for c in COMPLETIONS}
    sides.update({f"scale-t{t}": ["learner-ds", "--completion", str(t)] for t in LENGTHS})
    return sides


def learner_rate(units: list[dict]) -> tuple[float, float, float]:
    """(achieved FLOP/s, peak FLOP/s, padded share) over a learner side's units: the step's useful FLOPs
    over its seconds, each against the matmul peak measured right after it (medians)."""
    achieved = statistics.median(u["flops"] / u["seconds"] for u in units)
    peak = statistics.median(u["peak_flops"] for u in units)
    padded = sum(u["padded_tokens"] - u["real_tokens"] for u in units) / sum(
        u["padded_tokens"] for u in units)
    return achieved, peak, padded


def rows(m: dict) -> list[dict]:
    """The real-model table from the sides measured (`m`: name -> side with `.units`)."""
    from bench.run import _row, gateway_rows

    def med(name: str, key: str = "seconds") -> float:
        return m[name].median(key)

    def tps(name: str) -> float:
        return statistics.median(u["tokens"] / u["seconds"] for u in m[name].units)

    def n(*names: str) -> int:
        return min(len(m[k].units) for k in names)

    out = [_row("generation vs bare vLLM (text only)", "tokens/s", tps("gen-ours"), tps("gen-bare"),
                tps("gen-ours") / tps("gen-bare"), ">= 0.95", n("gen-ours", "gen-bare"))]
    for name, label in (("learner-ds", "whole sequences"), ("learner-shared", "share_prompt")):
        achieved, peak, padded = learner_rate(m[name].units)
        out.append(_row(f"learner FLOP/s / fp32 matmul peak ({label}; {padded:.0%} of its tokens padding)",
                        "FLOP/s", achieved, peak, achieved / peak, ">= 0.40", n(name)))
    whole, shared = med("learner-ds"), med("learner-shared")
    out.append(_row("learner step: share_prompt vs whole sequences", "s/step", shared, whole, whole / shared,
                    "", n("learner-ds", "learner-shared")))
    sync, trl = med("rl-sync"), med("trl")
    out.append(_row("RL step: synchronous vs TRL GRPOTrainer (HF generate)", "s/step", sync, trl, trl / sync,
                    ">= 2", n("rl-sync", "trl")))
    if "rl-off" in m:
        off = med("rl-off")
        out.append(_row("RL step: one-step-off vs TRL GRPOTrainer (HF generate)", "s/step", off, trl,
                        trl / off, ">= 2", n("rl-off", "trl")))
        out.append(_row("RL step: one-step-off vs synchronous", "s/step", off, sync, sync / off, ">= 1.2",
                        n("rl-off", "rl-sync")))
        # On two cores each role of a one-step-off step gets one thread: the step cannot be shorter than
        # its learner's update on one thread, so synchronous / that update is the most it can gain here.
        update = med("rl-off", "learn")
        out.append(_row("one-step-off vs synchronous, bound: sync step / one-step-off's update (1 thread)",
                        "s/step",
                        update, sync, sync / update, "", n("rl-off", "rl-sync")))
    push = med("rl-sync", "sync")
    out.append(_row("LoRA push / synchronous RL step", "s", push, sync, push / sync, "<= 0.02", n("rl-sync")))
    peak = {k: max(u.get(k, 0.0) for u in m["rl-sync"].units) for k in m["rl-sync"].units[0]
            if k.startswith("memory/")}
    total = sum(peak.values())
    out.append(_row("peak RSS, all roles of the synchronous run (" + ", ".join(
        f"{k.split('/')[1]} {v:.1f}" for k, v in sorted(peak.items())) + f") / {MEMORY_BUDGET_GB:g} GB",
        "GB", total, MEMORY_BUDGET_GB, total / MEMORY_BUDGET_GB, "<= 1", n("rl-sync")))
    if "gw-harness" in m:
        out += gateway_rows(m)
    return out


def fit_per_token(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (seconds per token, fixed seconds) through (tokens, seconds) points."""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return slope, my - slope * mx


def scaling(m: dict) -> tuple[str, dict]:
    """The scaling table (markdown) and its numbers: per point the learner's tokens and seconds a step,
    and per axis the fitted seconds per learned token."""
    table = ["| learner step | completions | tokens learned | seconds | tokens/s |", "|---|---|---|---|---|"]
    data: dict = {"points": {}, "fits": {}}
    for axis, points in (("completions", [(f"scale-c{c}", f"{c} completions") for c in COMPLETIONS]),
                         ("length", [(f"scale-t{t}", f"{t}-token completions") for t in LENGTHS])):
        pts = []
        for k, label in points:
            if k not in m:
                continue
            tokens, secs = m[k].median("real_tokens"), m[k].median()
            completions = int(m[k].median("learned"))
            table.append(f"| {label} | {completions} | {tokens:.0f} | {secs:.3g} | {tokens / secs:.3g} |")
            pts.append((tokens, secs))
            data["points"][k] = {"tokens": tokens, "seconds": secs}
        if len(pts) >= 2:
            slope, fixed = fit_per_token(pts)
            data["fits"][axis] = {"seconds_per_token": slope, "fixed_seconds": fixed}
            table.append(f"| fit over {axis}: {slope * 1000:.3g} ms a token + {fixed:.3g} s |  |  |  |  |")
    return "\n".join(table) + "\n", data


def plot(data: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for prefix, label in (("scale-c", "completions a step"), ("scale-t", "completion length")):
        pts = sorted((v["tokens"], v["seconds"]) for k, v in data["points"].items() if k.startswith(prefix))
        if pts:
            ax.plot(*zip(*pts), "o-", label=label)
    ax.set_xlabel("tokens learned a step")
    ax.set_ylabel("learner step, s")
    ax.set_title("SmolLM2-135M learner on this machine")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def write(out: Path, meta: dict, measured: dict) -> None:
    """real.md (the table, the gateway's and the scaling table), real.json and the scaling plot."""
    from bench.gateway import DESCRIPTION as GATEWAY_WORK
    from bench.run import gateway_table, markdown
    from bench.work import DESCRIPTION

    table = rows(measured)
    gateway = "gw-harness" in measured
    work = DESCRIPTION + (f"; gateway rows: {GATEWAY_WORK}" if gateway else "")
    text_scaling, data = scaling(measured)
    text_scaling = text_scaling if data["points"] else ""
    text = "\n".join(p for p in (markdown(table, meta, work), gateway_table(measured) if gateway else "",
                                  text_scaling) if p)
    out.mkdir(parents=True, exist_ok=True)
    stem = "real-quick" if meta["quick"] else "real"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": table, "scaling": data, "units": {
        k: s.units for k, s in measured.items()}}, indent=1))
    if data.get("points"):
        plot(data, out / "real_scaling.png")
    print(text)


def retable(out: Path, quick: bool) -> int:
    """The tables again from a run's recorded units (after a change to how rows are computed)."""
    recorded = json.loads((out / ("real-quick.json" if quick else "real.json")).read_text())
    from bench.run import Units

    write(out, recorded["meta"], {k: Units(u) for k, u in recorded["units"].items()})
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="one round, no one-step-off, no scaling (~23 min here)")
    p.add_argument("--rounds", type=int, default=None, help="rounds a group (default 3; --quick: 1)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--retable", action="store_true",
                   help="measure nothing: write the table again from the units in the out folder's JSON")
    args = p.parse_args(argv)
    os.environ["NGRPO_BENCH_WORK"] = "real"  # before bench.work is imported, here and in every side
    if args.retable:
        return retable(Path(args.out), args.quick)
    from bench.run import measure
    from bench.work import CONFIG, setup_paths

    setup_paths()  # a missing model stops here, with the command that installs it
    rounds = args.rounds or (1 if args.quick else 3)
    t0 = time.time()
    measured: dict = {}
    for group in QUICK_GROUPS if args.quick else GROUPS:
        print(f"bench.real: {', '.join(group)} ...", flush=True)
        measured.update(measure(group, rounds, units={"gw": 2}))
    if not args.quick:
        sides = scaling_sides()
        for name in sides:  # one point at a time: each holds a learner
            print(f"bench.real: {name} ...", flush=True)
            measured.update(measure((name,), 1, units={}, args=sides))
    import platform

    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "rounds": rounds, "seconds": round(time.time() - t0), "quick": args.quick, "config": CONFIG}
    write(Path(args.out), meta, measured)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`make bench`: ngrpo-ray against bare vLLM, TRL and itself, as ratios measured in one invocation.

    python -m bench.run [--rounds 3] [--out bench/results]

Each side (bench/side.py) runs in its own process, set up once; then the sides of a group take turns,
`--rounds` times, in alternating order, so that the drift of a shared machine hits both sides of a
ratio alike. Only the ratios mean something (absolute seconds move by up to 2x between hours here).
Writes `latest.md` (the table the README quotes) and `latest.json` (every unit measured).

Rows:
- generation: a RolloutWorker (merged LoRA) vs bare `vllm.LLM` (text only, and with the sampled
  tokens' logprobs as the worker returns them), completion tokens per second;
- push: the LoRA push (export, transfer, reload, probe) as a share of a synchronous RL step;
- the RL step: synchronous vs one-step-off, and each vs TRL's GRPOTrainer (HF generate) on the same work;
- the overlapped step vs max(generate, learn) measured alone at the same threads;
- the learner: DeepSpeed ZeRO-2 vs the same step code on plain PEFT + AdamW.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.work import DESCRIPTION

SIDES = {
    "gen-ours": ["gen-ours"], "gen-bare": ["gen-bare"], "gen-bare-lp": ["gen-bare-lp"],
    "rl-sync": ["rl", "--staleness", "0", "--threads", "2", "2"],
    "rl-sync-1x1": ["rl", "--staleness", "0", "--threads", "1", "1"],
    "rl-off": ["rl", "--staleness", "1", "--threads", "1", "1"],
    "trl": ["trl"],
    "learner-ds": ["learner-ds"], "learner-torch": ["learner-torch"],
}
GROUPS = [("gen-ours", "gen-bare", "gen-bare-lp"), ("rl-sync", "rl-off", "rl-sync-1x1", "trl"),
          ("learner-ds", "learner-torch")]
UNITS = {"gen": 3, "rl": 3, "trl": 2, "learner": 3}


class Side:
    def __init__(self, name: str) -> None:
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.side", *SIDES[name]],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.units: list[dict] = []

    def _read(self, tag: str) -> dict:
        for line in self.proc.stdout:
            if line.startswith(tag + " "):
                return json.loads(line[len(tag) + 1 :])
        raise RuntimeError(f"bench side {self.name} exited ({self.proc.wait()}) before {tag}")

    def ready(self) -> None:
        self._read("READY")

    def run(self, k: int) -> None:
        self.proc.stdin.write(f"RUN {k}\n")
        self.proc.stdin.flush()
        self.units += self._read("DONE")["units"]

    def close(self) -> None:
        try:
            self.proc.stdin.write("QUIT\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()

    def median(self, key: str = "seconds") -> float:
        return statistics.median(u[key] for u in self.units)


def measure(group: tuple[str, ...], rounds: int) -> dict[str, Side]:
    sides = {n: Side(n) for n in group}
    try:
        for s in sides.values():
            s.ready()
        for r in range(rounds):
            order = list(sides.values()) if r % 2 == 0 else list(sides.values())[::-1]
            for s in order:
                s.run(UNITS["trl" if s.name == "trl" else s.name.split("-")[0]])
    finally:
        for s in sides.values():
            s.close()
    return sides


def rows(m: dict[str, Side]) -> list[dict]:
    """The table: each row's measure, its work and n, the two values and their ratio."""
    def tps(s: Side) -> float:
        return statistics.median(u["tokens"] / u["seconds"] for u in s.units)

    ours, bare, bare_lp = (tps(m[k]) for k in ("gen-ours", "gen-bare", "gen-bare-lp"))
    sync, off, trl = m["rl-sync"].median(), m["rl-off"].median(), m["trl"].median()
    alone = max(m["rl-sync-1x1"].median("generate"), m["rl-sync-1x1"].median("learn"))
    push = m["rl-sync"].median("sync")
    ds, plain = m["learner-ds"].median(), m["learner-torch"].median()
    n = lambda *ks: min(len(m[k].units) for k in ks)  # noqa: E731
    return [
        _row("generation vs bare vLLM (text only)", "tokens/s", ours, bare, ours / bare, ">= 0.95",
             n("gen-ours", "gen-bare")),
        _row("generation vs bare vLLM with the same logprobs", "tokens/s", ours, bare_lp, ours / bare_lp, "",
             n("gen-ours", "gen-bare-lp")),
        _row("LoRA push / synchronous RL step", "s", push, sync, push / sync, "<= 0.02", n("rl-sync")),
        _row("RL step: synchronous vs TRL GRPOTrainer (HF generate)", "s/step", sync, trl, trl / sync,
             ">= 1.5",
             n("rl-sync", "trl")),
        _row("RL step: one-step-off vs TRL GRPOTrainer (HF generate)", "s/step", off, trl, trl / off, ">= 2",
             n("rl-off", "trl")),
        _row("RL step: one-step-off vs synchronous", "s/step", off, sync, sync / off, "",
             n("rl-off", "rl-sync")),
        _row("overlapped step / max(generate, learn) alone, 1+1 threads", "s", off, alone, off / alone,
             "<= 1.15",
             n("rl-off", "rl-sync-1x1")),
        _row("learner step: DeepSpeed ZeRO-2 vs plain PEFT + AdamW", "s/step", ds, plain, plain / ds, "",
             n("learner-ds", "learner-torch")),
    ]


def _row(measure: str, unit: str, ours: float, base: float, ratio: float, target: str, n: int) -> dict:
    ok = ""
    if target:
        op, bound = target.split()
        ok = "yes" if (ratio >= float(bound) if op == ">=" else ratio <= float(bound)) else "no"
    return {"measure": measure, "unit": unit, "ngrpo_ray": ours, "baseline": base, "ratio": ratio,
            "target": target, "met": ok, "n": n}


def markdown(table: list[dict], meta: dict) -> str:
    lines = [f"Measured {meta['date']} on {meta['machine']}; work: {DESCRIPTION}; medians of n units per "
             f"side, sides interleaved over {meta['rounds']} rounds.", "",
             "| measure | ngrpo-ray | baseline | ratio | target | met | n |", "|---|---|---|---|---|---|---|"]
    for r in table:
        lines.append(f"| {r['measure']} | {r['ngrpo_ray']:.3g} {r['unit']} | "
                     f"{r['baseline']:.3g} {r['unit']} | "
                     f"{r['ratio']:.3g} | {r['target']} | {r['met']} | {r['n']} |")  # 0.0219, not 0.02
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = p.parse_args(argv)
    t0 = time.time()
    measured: dict[str, Side] = {}
    for group in GROUPS:
        print(f"bench: {', '.join(group)} ...", flush=True)
        measured.update(measure(group, args.rounds))
    import os
    import platform

    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "rounds": args.rounds, "seconds": round(time.time() - t0)}
    table = rows(measured)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown(table, meta)
    (out / "latest.md").write_text(text)
    (out / "latest.json").write_text(json.dumps({"meta": meta, "rows": table,
                                                 "units": {k: s.units for k, s in measured.items()}},
                                                indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

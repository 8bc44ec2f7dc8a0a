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
- the learner: DeepSpeed ZeRO-2 vs the same step code on plain PEFT + AdamW;
- agent episodes (bench/agent.py): RL steps and episodes per second and the engine's occupancy for the
  `sync`, `one_step_off` and `stream` pipelines on the same work, stream and one-step-off vs sync;
- the OpenAI gateway (bench/gateway.py): fund-assistant episodes per second through the gateway against
  the same episodes played in the worker, and where the gateway's time goes.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.agent import DESCRIPTION as AGENT_WORK
from bench.gateway import DESCRIPTION as GATEWAY_WORK
from bench.work import DESCRIPTION

SIDES = {
    "gen-ours": ["gen-ours"], "gen-bare": ["gen-bare"], "gen-bare-lp": ["gen-bare-lp"],
    "rl-sync": ["rl", "--staleness", "0", "--threads", "2", "2"],
    "rl-sync-1x1": ["rl", "--staleness", "0", "--threads", "1", "1"],
    "rl-off": ["rl", "--staleness", "1", "--threads", "1", "1"],
    "trl": ["trl"],
    "learner-ds": ["learner-ds"], "learner-shared": ["learner-shared"], "learner-torch": ["learner-torch"],
    "agent-sync": ["agent", "--pipeline", "sync"], "agent-off": ["agent", "--pipeline", "one_step_off"],
    "agent-stream": ["agent", "--pipeline", "stream"],
    "gw-harness": ["gw-harness"], "gw-free": ["gw-free"], "gw-worker": ["gw-worker"],
}
GROUPS = [("gen-ours", "gen-bare", "gen-bare-lp"), ("rl-sync", "rl-off", "rl-sync-1x1", "trl"),
          ("learner-ds", "learner-torch"), ("agent-sync", "agent-off", "agent-stream"),
          ("gw-harness", "gw-free", "gw-worker")]
UNITS = {"gen": 3, "rl": 3, "trl": 2, "learner": 3, "agent": 3, "gw": 3}
AGENT = {"sync": "agent-sync", "one_step_off": "agent-off", "stream": "agent-stream"}


class Units:
    """A side's measured units and their medians (a running side's, or one read back from a JSON)."""

    def __init__(self, units: list[dict] | None = None) -> None:
        self.units: list[dict] = units or []

    def median(self, key: str = "seconds") -> float:
        return statistics.median(u[key] for u in self.units)


class Side(Units):
    def __init__(self, name: str, args: list[str] | None = None) -> None:
        super().__init__()
        self.name = name
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.side", *(args or SIDES[name])],
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

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



def measure(group: tuple[str, ...], rounds: int, units: dict[str, int] | None = None,
            args: dict[str, list[str]] | None = None) -> dict[str, Side]:
    """Start the sides of `group` (bench.side with `args[name]`, else SIDES[name]), then `rounds` times
    each runs its kind's `units` (by the name's first word, or the whole name), in alternating order."""
    units, args = UNITS if units is None else units, args or {}
    sides = {n: Side(n, args.get(n)) for n in group}
    try:
        for s in sides.values():
            s.ready()
        for r in range(rounds):
            order = list(sides.values()) if r % 2 == 0 else list(sides.values())[::-1]
            for s in order:
                s.run(units.get(s.name, units.get(s.name.split("-")[0], 1)))
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
        *agent_rows(m),
        *gateway_rows(m),
    ]


def per_second(s: Side, key: str | None = None) -> float:
    """Units (or their `key`, summed) per second over every unit the side ran: a pipelined step's
    seconds vary with what it overlapped, so the rate over all of them, not a median."""
    return sum(u[key] if key else 1 for u in s.units) / sum(u["seconds"] for u in s.units)


def agent_rows(m: dict[str, Side]) -> list[dict]:
    sync, off, stream = (m[AGENT[p]] for p in ("sync", "one_step_off", "stream"))
    rate = {k: 1 / per_second(s) for k, s in (("sync", sync), ("off", off), ("stream", stream))}
    occ = {k: statistics.mean(u["occupancy"] for u in s.units)
           for k, s in (("sync", sync), ("off", off), ("stream", stream))}
    learn1 = statistics.fmean(u["learn"] for u in stream.units)  # the update's seconds per step
    n = lambda *ks: min(len(m[k].units) for k in ks)  # noqa: E731
    return [
        _row("agent RL step: stream vs synchronous", "s/step", rate["stream"], rate["sync"],
             rate["sync"] / rate["stream"], ">= 1.25", n("agent-stream", "agent-sync")),
        _row("agent RL step: one-step-off vs synchronous", "s/step", rate["off"], rate["sync"],
             rate["sync"] / rate["off"], "", n("agent-off", "agent-sync")),
        _row("agent engine occupancy: stream vs synchronous", "", occ["stream"], occ["sync"],
             occ["stream"] / occ["sync"], "", n("agent-stream", "agent-sync")),
        # Why the first row moves between runs: a streamed step is its learner's update on the learner's
        # own cores (one thread here; generation hides behind it), so the first row cannot exceed
        # sync's step (both roles on both threads) over that update.
        _row("agent stream step / its learner's update", "s", rate["stream"], learn1,
             rate["stream"] / learn1, "", n("agent-stream")),
        _row("agent stream vs synchronous, bound: sync step / that update", "s/step", learn1, rate["sync"],
             rate["sync"] / learn1, "", n("agent-stream", "agent-sync")),
    ]


def gateway_rows(m: dict[str, Side]) -> list[dict]:
    """Episodes per second through the gateway (as a run plays them, and without lock step) against the
    same episodes in the worker, and per model call the milliseconds outside the engine's steps."""
    gw, free, inside = m["gw-harness"], m["gw-free"], m["gw-worker"]
    rate = {k: per_second(s, "samples") for k, s in (("gw", gw), ("free", free), ("in", inside))}

    def outside_ms(s: Side) -> float:  # per call, what is not an engine step
        return 1000 * sum(u["rest"] for u in s.units) / sum(u["calls"] for u in s.units)

    n = min(len(gw.units), len(free.units), len(inside.units))
    return [
        _row("agent episodes through the OpenAI gateway vs in the worker", "episodes/s", rate["gw"],
             rate["in"], rate["gw"] / rate["in"], ">= 0.8", n),
        _row("the same without lock step and per-request seeds vs in the worker", "episodes/s",
             rate["free"], rate["in"], rate["free"] / rate["in"], "", n),
        _row("per call outside the engine: gateway vs in the worker", "ms", outside_ms(gw),
             outside_ms(inside), outside_ms(gw) / outside_ms(inside), "", n),
    ]


def gateway_table(m: dict[str, Side]) -> str:
    """Per side: episodes, model calls and sampled tokens per second, success, the engine's share."""
    lines = ["| fund-assistant episodes | episodes/s | calls/s | tokens/s | success | engine share | n |",
             "|---|---|---|---|---|---|---|"]
    for name, label in (("gw-harness", "through the gateway (as a run)"), ("gw-free", "through the gateway, "
                        "no lock step"), ("gw-worker", "in the worker")):
        s = m[name]
        total = sum(u["seconds"] for u in s.units)
        success = sum(u["success"] for u in s.units) / sum(u["samples"] for u in s.units)
        engine = sum(u["engine"] for u in s.units) / total
        lines.append(f"| {label} | {per_second(s, 'samples'):.3g} | {per_second(s, 'calls'):.3g} | "
                     f"{per_second(s, 'tokens'):.3g} | {success:.2f} | {engine:.2f} | {len(s.units)} |")
    return "\n".join(lines) + "\n"


def agent_table(m: dict[str, Side]) -> str:
    """Per pipeline: RL steps and episodes per second, the engine's occupancy, n."""
    lines = ["| pipeline (agent episodes) | RL steps/s | episodes/s | engine occupancy | n |",
             "|---|---|---|---|---|"]
    for pipeline, name in AGENT.items():
        s = m[name]
        lines.append(f"| {pipeline} | {per_second(s):.3g} | {per_second(s, 'samples'):.3g} | "
                     f"{statistics.mean(u['occupancy'] for u in s.units):.3g} | {len(s.units)} |")
    return "\n".join(lines) + "\n"


def _row(measure: str, unit: str, ours: float, base: float, ratio: float, target: str, n: int) -> dict:
    ok = ""
    if target:
        op, bound = target.split()
        ok = "yes" if (ratio >= float(bound) if op == ">=" else ratio <= float(bound)) else "no"
    return {"measure": measure, "unit": unit, "ngrpo_ray": ours, "baseline": base, "ratio": ratio,
            "target": target, "met": ok, "n": n}


def markdown(table: list[dict], meta: dict, work: str | None = None) -> str:
    """The table under a line saying when, where and on what work it was measured (`work`: the real
    model's, bench.real; else the tiny model's, agent and gateway work)."""
    head = (f"work: {work}; medians of n units per side" if work else
            f"work: {DESCRIPTION}; agent rows: {AGENT_WORK}; gateway rows: {GATEWAY_WORK}; medians of n "
            f"units per side (agent and gateway: rates over all n)")
    lines = [f"Measured {meta['date']} on {meta['machine']}; {head}, sides interleaved over "
             f"{meta['rounds']} rounds.", "",
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
    p.add_argument("--gateway-only", action="store_true",
                   help="measure only the gateway's group; writes gateway.md and gateway.json")
    args = p.parse_args(argv)
    t0 = time.time()
    measured: dict[str, Side] = {}
    for group in GROUPS[-1:] if args.gateway_only else GROUPS:
        print(f"bench: {', '.join(group)} ...", flush=True)
        if group[0].startswith(("agent", "gw")):  # the sides start from one warmed-up policy, made once
            from bench.agent import warmed_policy
            from bench.gateway import PRESET

            warmed_policy(*([PRESET] if group[0].startswith("gw") else []))
        measured.update(measure(group, args.rounds))
    import os
    import platform

    meta = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "rounds": args.rounds, "seconds": round(time.time() - t0)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.gateway_only:
        table = gateway_rows(measured)
        text = markdown(table, meta) + "\n" + gateway_table(measured)
        (out / "gateway.md").write_text(text)
        (out / "gateway.json").write_text(json.dumps({"meta": meta, "rows": table, "units": {
            k: s.units for k, s in measured.items()}}, indent=1))
        print(text)
        return 0
    table = rows(measured)
    text = markdown(table, meta) + "\n" + agent_table(measured) + "\n" + gateway_table(measured)
    (out / "latest.md").write_text(text)
    (out / "latest.json").write_text(json.dumps({"meta": meta, "rows": table,
                                                 "units": {k: s.units for k, s in measured.items()}},
                                                indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

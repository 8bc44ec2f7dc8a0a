"""Chaos: a run under a seeded schedule of SIGKILLs ends bit-identical to the same run left alone.

    python -m tests.faults.chaos --steps 40 --kills 10 --seed 0      # `make chaos`

Runs the tiny preset (the fault harness's small steps) straight, then again while processes are killed
with SIGKILL: a random role (rollout worker, learner rank, reward actor, the coordinator, the driver —
which is started again with the same command, as a user would) at random moments, and on purpose
during a checkpoint write, during a weight push and during the recovery from the previous kill. It
prints the kill log and compares the two runs: every metrics row (times aside) and the final adapter's
bytes must be identical. Kills wait for the run to have made progress since the last one, so the run
always gets somewhere; the schedule (which role, which moment) depends only on the seed.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from observe.faults import fault_summary, format_faults
from tests.faults.harness import Run, same_rows, start

# A role's worker process is titled after its class (and method) by Ray.
MARKERS = {"rollout": "RolloutWorker", "learner": "Learner", "reward": "RewardActor",
           "coordinator": "Coordinator"}
# What is running while a weight push is under way.
PUSH_MARKERS = ("RolloutWorker.load_adapter", "Learner.export_lora")


def processes(run: Run, marker: str) -> list[psutil.Process]:
    """The run's live processes whose command line (Ray's title) holds `marker`."""
    out = []
    for p in psutil.Process(run.proc.pid).children(recursive=True) if run.proc.poll() is None else []:
        try:
            if p.status() != psutil.STATUS_ZOMBIE and marker in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            continue
    return out


@dataclass
class Chaos:
    parent: Path
    name: str
    steps: int
    kills: int
    seed: int
    settings: tuple[str, ...] = ("train.max_restarts=100",)
    kinds: list[str] | None = None  # a fixed schedule instead of the seeded one
    pause: tuple[float, float] = (0.5, 1.5)  # seconds after the run's progress before the next kill
    log: list[dict] = field(default_factory=list)
    config: str | None = None  # a preset instead of the default

    def schedule(self) -> list[str]:
        """Which kill comes when: random roles, with a checkpoint write, a push and a recovery among them
        (a recovery right after a role's kill, which it interrupts)."""
        if self.kinds:
            return list(self.kinds)
        rng = random.Random(self.seed)
        roles = ["rollout", "learner", "reward", "coordinator", "driver"]
        kinds = [rng.choice(roles) for _ in range(self.kills)]
        special = {1: "checkpoint", 3: "push", 5: "recovery"}
        for i, kind in special.items():
            if i < len(kinds):
                kinds[i] = kind
                if kind == "recovery" and kinds[i - 1] == "driver":
                    kinds[i - 1] = "learner"  # a recovery follows the kill of a role it replaces
        return kinds

    def play(self) -> Run:
        rng = random.Random(self.seed + 1)
        run, t0 = self._start(), time.monotonic()
        last = None
        for kind in self.schedule():
            if kind != "recovery":
                # Progress since the last kill, then a few seconds: the run always gets somewhere.
                if not self._wait(run, lambda r: len(r.rows()) > self._rows_at_last_kill(), 600):
                    break
                time.sleep(rng.uniform(*self.pause))
            if run.proc.poll() is not None or len(run.rows()) >= self.steps:
                break
            run, last = self._kill(run, kind, last, rng, t0)
        code = run.finish(timeout=1200)
        if code != 0:
            raise AssertionError(f"the chaos run exited {code}:\n{run.output()[-4000:]}")
        return run

    def _start(self) -> Run:
        return start(self.parent, self.name, *self.settings, steps=self.steps, config=self.config)

    def _rows_at_last_kill(self) -> int:
        return self.log[-1]["rows"] if self.log else 0

    @staticmethod
    def _wait(run: Run, ready, timeout: float) -> bool:
        t = time.monotonic()
        while not ready(run):
            if run.proc.poll() is not None or time.monotonic() - t > timeout:
                return False
            time.sleep(0.01)
        return True

    def _kill(self, run: Run, kind: str, last: dict | None, rng: random.Random, t0: float):
        """One kill of `kind`; returns the run (a new one after the driver's) and the kill's record."""
        target, title = None, ""
        if kind == "driver":
            rows = len(run.rows())
            run.kill_driver()
            self._record(kind, "driver", run.proc.pid, "train.py", rows, t0)
            return self._start(), self.log[-1]
        if kind == "checkpoint":  # while a checkpoint is being written, one of those writing it
            ckpt = run.run_dir / "checkpoints"
            writing = lambda r: ckpt.is_dir() and any(p.name.startswith(".tmp-step_") for p in ckpt.iterdir())  # noqa: E731
            if self._wait(run, writing, 120):
                role = rng.choice(["learner", "coordinator"])
                target = next(iter(processes(run, MARKERS[role])), None)
        elif kind == "push":
            found = []
            pushing = lambda r: bool(found.extend(p for m in PUSH_MARKERS for p in processes(r, m)) or found)  # noqa: E731
            self._wait(run, pushing, 120)
            target = found[0] if found else None
        elif kind == "recovery" and last is not None and last["role"] in MARKERS:
            old = set(last["pids"])
            fresh = []
            marker = MARKERS[last["role"]]
            self._wait(run, lambda r: bool(fresh.extend(p for p in processes(r, marker) if p.pid not in old)
                                          or fresh), 180)
            target = fresh[0] if fresh else None
        else:
            target = next(iter(processes(run, MARKERS.get(kind, "?"))), None)
        if target is None:
            self._record(kind, "missed", None, "", len(run.rows()), t0)
            return run, self.log[-1]
        try:
            title = " ".join(target.cmdline())
            target.kill()
        except psutil.Error:
            title = "(gone before the kill)"
        role = next((r for r, m in MARKERS.items() if m in title), kind)
        self._record(kind, role, target.pid, title, len(run.rows()), t0,
                     pids=[p.pid for p in processes(run, MARKERS.get(role, "?"))] + [target.pid])
        return run, self.log[-1]

    def _record(self, kind: str, role: str, pid: int | None, title: str, rows: int, t0: float,
                pids: list[int] | None = None) -> None:
        self.log.append({"n": len(self.log) + 1, "t": round(time.monotonic() - t0, 1), "kind": kind,
                         "role": role, "pid": pid, "title": title.strip()[:60], "rows": rows,
                         "pids": pids or [pid]})


def adapter_digest(run_dir: Path) -> str:
    return hashlib.sha256((run_dir / "adapter" / "adapter_model.safetensors").read_bytes()).hexdigest()[:16]


def format_log(log: list[dict]) -> str:
    lines = [f"{'#':>2} {'t (s)':>6} {'rows':>4}  {'kind':<11} {'killed':<12} process"]
    lines += [f"{e['n']:>2} {e['t']:>6} {e['rows']:>4}  {e['kind']:<11} {e['role']:<12} {e['title']}"
              for e in log]
    return "\n".join(lines)


def chaos_run(chaos: Chaos) -> tuple[Run, Run]:
    """The straight run and the chaos run; raises AssertionError when they differ."""
    straight = start(chaos.parent, "straight", *chaos.settings, steps=chaos.steps)
    if straight.finish(timeout=1200) != 0:
        raise AssertionError(f"the straight run failed:\n{straight.output()[-4000:]}")
    run = chaos.play()
    same_rows(straight.rows(), run.rows())
    if adapter_digest(run.run_dir) != adapter_digest(straight.run_dir):
        raise AssertionError("the final adapters differ")
    return straight, run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--kills", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dir", default=None, help="where the two runs go (default: a temporary folder)")
    args = p.parse_args(argv)
    chaos = Chaos(Path(args.dir or tempfile.mkdtemp(prefix="ngrpo-chaos-")), "chaos", args.steps, args.kills,
                  args.seed)
    t = time.monotonic()
    try:
        _, run = chaos_run(chaos)
    except AssertionError as e:
        print(format_log(chaos.log) + f"\n\nchaos: FAILED: {e}", file=sys.stderr)
        return 1
    done = sum(1 for e in chaos.log if e["role"] != "missed")
    print(format_log(chaos.log))
    print(f"\nchaos: {done} kills ({len(chaos.log) - done} missed) in a {args.steps}-step run, seed "
          f"{args.seed}: {len(run.rows())} rows identical to the straight run's, adapter "
          f"{adapter_digest(run.run_dir)} on both; {time.monotonic() - t:.0f} s in all "
          f"(runs in {chaos.parent})")
    print(format_faults(fault_summary(run.events())))
    return 0


if __name__ == "__main__":
    sys.exit(main())

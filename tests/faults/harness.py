"""Real faults against a real run: `train.py` as a subprocess (its own local Ray, vLLM, DeepSpeed), a
fault injected into the actual process of a role or of the driver, then the run's files compared with
those of a run that had no fault.

A short run of the tiny model: no warm-up, 4 prompts x 4 samples, 24 tokens, a checkpoint every 2
steps, deadlines of seconds. Runs are deterministic here, so "nothing lost" is checked strictly: the
faulted run's metrics rows equal the straight run's, value for value (times aside).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from observe.schema import reproducible

ROOT = Path(__file__).resolve().parents[2]
STEPS = 6
ROLES = ("rollout", "learner", "reward")
CANARY = "tok_CANARY_5e8d1b7a93"  # a secret in cluster.env_vars
SETTINGS = [
    "train.warmup.enabled=false", "train.prompts_per_step=4", "rollout.n=4", "rollout.max_tokens=24",
    "rollout.kv_cache_memory_bytes=67108864", "train.eval_limit=8", "train.checkpoint_every=2",
    "train.progress=false", "rollout.call_timeout_s=15", "rollout.start_timeout_s=120",
    "learner.call_timeout_s=60", "learner.lr=0.02", "algorithm.ngrpo.mode=dynamic",
    "task.options.n_single=200", "task.options.n_multistep_samples=100",
    f"cluster.env_vars.NGRPO_TEST_SECRET={CANARY}",  # reaches every role; must show up in no output
]


@dataclass
class Run:
    run_dir: Path
    proc: subprocess.Popen
    log: Path  # the driver's stdout and stderr (a file: a pipe would fill up and block it)
    tree: list[psutil.Process] = field(default_factory=list)  # the driver's processes (Ray's too)

    def rows(self) -> list[dict]:
        path = self.run_dir / "metrics.jsonl"
        if not path.exists():
            return []
        out = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a row being written right now
        return out

    def events(self, kind: str | None = None) -> list[dict]:
        path = self.run_dir / "events.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        events = [json.loads(x) for x in lines if x.strip()]
        return [e for e in events if kind is None or e["event"] == kind]

    def placement(self) -> dict[str, list[dict]]:
        """Where each actor of the run is now: the set-up's placement, with every later move applied
        (a replaced worker, a rebuilt learner group)."""
        where: dict[str, list[dict]] = {}
        for e in self.events():
            if e["event"] == "placement":
                where = {role: [dict(x) for x in e[role]] for role in ROLES if role in e}
            elif e["event"] == "recovered" and e.get("placed"):
                moved = e.get("moved", e["role"])  # the learner group is rebuilt after any failure in a step
                if moved == "learner":
                    where["learner"] = [dict(x) for x in e["placed"]]
                elif moved in where:
                    where[moved][e["index"]] = dict(e["placed"][0])
        return where

    def pid(self, role: str, index: int = 0) -> int:
        """The process of the role's `index`-th actor now (the replacement, once one was started)."""
        return self.placement()[role][index]["pid"]

    def wait_rows(self, n: int, timeout: float = 300) -> None:
        t = time.monotonic()
        while len(self.rows()) < n:
            if self.proc.poll() is not None:
                raise AssertionError(f"the run exited ({self.proc.returncode}) before {n} "
                                     f"rows:\n{self.output()}")
            if time.monotonic() - t > timeout:
                raise AssertionError(f"no {n} rows within {timeout}s")
            time.sleep(0.2)
        self.tree = self.tree or _tree(self.proc.pid)

    def finish(self, timeout: float = 600) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self.cleanup()

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace") if self.log.exists() else ""

    def kill_driver(self) -> None:
        """kill -9 of the driver, then of what it started (a local Ray outlives a killed driver)."""
        self.tree = self.tree or _tree(self.proc.pid)
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.cleanup()

    def cleanup(self) -> None:
        for p in self.tree:
            try:
                p.kill()
            except psutil.Error:
                pass


def _tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def start(parent: Path, name: str, *extra: str, steps: int = STEPS, config: str | None = None) -> Run:
    args = [sys.executable, "train.py", "--set", f"train.run_dir={parent}", "--set", f"train.run_name={name}",
            "--set", f"train.steps={steps}", *(["--config", config] if config else [])]
    for s in [*SETTINGS, *extra]:
        args += ["--set", s]
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    log = parent / f"{name}.{int(time.time() * 1000)}.log"
    parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    return Run(parent / name, proc, log)


def same_rows(a: list[dict], b: list[dict]) -> None:
    """Equal metrics rows, value for value, the phase times aside."""
    assert [r["step"] for r in a] == [r["step"] for r in b], ([r["step"] for r in a], [r["step"] for r in b])
    for x, y in zip(a, b):
        drop = reproducible
        assert drop(x) == drop(y), f"step {x['step']} differs"


def adapter_fingerprint(run_dir: Path) -> str:
    from contracts.lora import load_peft_adapter

    return load_peft_adapter(run_dir / "adapter").fingerprint

"""The agent rows' work: RL steps of multi-turn episodes on the agent preset, one side per pipeline.

Every side starts from the same warmed-up policy (the preset's warm-up, run once by `make bench` and
cached) — without it the tiny model runs every turn to the length limit and there is no slow episode to
wait for. Same data, seed and batch on every side: 8 rows x 8 episodes a step, up to 5 turns of at most
80 tokens. Each pipeline runs with the preset's `auto` threads, the split that suits it on two cores:
`sync` gives both threads to whichever role works (rollout 2, learner 2); `one_step_off` and `stream`
run both roles at once, one thread each (three threads on two cores spin against each other: a
streamed step took 3.8-4.5 s with the learner on two threads, 3.2-4.1 s with one). `stream` keeps 64
episodes in flight (the batch) with k = 2.

A unit is one RL step. Its engine occupancy is read from the engine itself (`RolloutWorker.engine_counts`,
the tap's count of steps and sequences per step) over the unit, divided by the 64 sequences each
pipeline can have in flight. A streamed side keeps sampling after its step returns (the next step's
work, done during this one's update): after each round's units the driver waits for the workers' calls
in flight and counts that wait in the round's last unit, so no side gets work done while another side
is measured.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

PRESET = "configs/tiny-cpu-agent.yaml"
ROWS, N = 8, 8
PIPELINES = {
    "sync": ["train.pipeline=sync"],
    "one_step_off": ["train.pipeline=one_step_off"],
    "stream": ["train.pipeline=stream", "train.pipeline.max_staleness=2",
               f"train.pipeline.max_in_flight={ROWS * N}"],
}
DESCRIPTION = (f"agent preset after its warm-up, {ROWS} rows x {N} episodes a step, up to 5 turns x 80 "
               "tokens; threads rollout+learner: sync 2+2, one_step_off and stream 1+1; stream k 2, 64 in "
               "flight")


def warmed_policy(preset: str = PRESET) -> tuple[str, str]:
    """(model dir, tokenizer dir) of an agent preset after its warm-up: made once by a zero-step run of
    the preset, kept in the cache under a key of the preset's text."""
    from models.tiny import cache_root

    root = Path(__file__).resolve().parent.parent
    key = hashlib.sha256((root / preset).read_bytes()).hexdigest()[:12]
    runs = cache_root() / f"bench-agent-{key}"
    model = runs / "warm" / "warmup_model"
    if not (model / "config.json").exists():
        print(f"bench: warming up the agent preset once (cached in {runs}) ...", flush=True)
        subprocess.run([sys.executable, str(root / "train.py"), "--config", str(root / preset),
                        "--set", "train.steps=0", "--set", "train.eval_before=false",
                        "--set", "train.eval_after=false", "--set", f"train.run_dir={runs}",
                        "--set", "train.run_name=warm", "--set", "train.progress=false"],
                       check=True, cwd=root, stdout=subprocess.DEVNULL)
    return str(model), _tokenizer_dir(preset)


def _tokenizer_dir(preset: str) -> str:
    """The preset's tokenizer, found as a run finds it (built on first use, then cached)."""
    from actors.driver.workloads import workload_for
    from configs.loader import load_config
    from models.resolve import resolve_model
    from tasks.base import load_task

    cfg = load_config(preset)
    work = workload_for(cfg, load_task(cfg.task))
    return str(resolve_model(cfg.model, *work.tokenizer_text()).tokenizer_dir)


def agent_config(pipeline: str, policy: tuple[str, str]):
    """The agent preset from the warmed-up policy with `pipeline`'s settings (no warm-up, no evals, no
    periodic checkpoints)."""
    from configs.loader import load_config

    model, tokenizer = policy
    return load_config(PRESET, [
        f"model.name={model}", f"model.tokenizer={tokenizer}", "train.warmup.enabled=false",
        "train.eval_before=false", "train.eval_after=false", "train.steps=1000", "train.checkpoint_every=0",
        f"train.prompts_per_step={ROWS}", f"rollout.n={N}", f"train.run_name=bench-agent-{pipeline}",
        "rollout.call_timeout_s=600", "learner.call_timeout_s=600", "train.progress=false",
        *PIPELINES[pipeline]])

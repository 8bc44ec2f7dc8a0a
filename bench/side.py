"""One side of a benchmark, in its own process, driven line by line by `bench.run`.

    python -m bench.side KIND [--staleness 0|1] [--threads R L] [--pipeline sync|one_step_off|stream]

Prints `READY {...}` once set up, then answers each `RUN k` line with `DONE {...}` after k units of
work, and exits on `QUIT`. Each side holds one engine (vLLM initialises torch.distributed per process,
and two Ray clusters or a TRL trainer cannot share a process); `bench.run` alternates between sides so
that the machine's drift hits both sides of a ratio alike.

Kinds: `gen-ours` (a RolloutWorker serving a LoRA, merged), `gen-bare` (a plain `vllm.LLM`, text only),
`gen-bare-lp` (plain, with the sampled tokens' logprobs too), `rl` (a training run on Ray: one unit is one
RL step), `agent` (the same on agent episodes, `--pipeline`: bench/agent.py), `trl` (TRL's GRPOTrainer
with HF generate: one unit is one optimizer step), `learner-ds` (the Learner on DeepSpeed ZeRO-2),
`learner-shared` (the same with `learner.share_prompt`), `learner-torch` (the same step code on plain
PEFT + AdamW), `gw-harness`, `gw-free` and `gw-worker` (fund-assistant episodes through the OpenAI
gateway, without its lock step, and in the worker: bench/gateway.py). The work is bench/work.py's
profile (`NGRPO_BENCH_WORK`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from bench.work import PROMPTS, WORK, bench_config, learner_batch, random_lora, setup_paths


def _emit(tag: str, payload: dict) -> None:
    sys.stdout.write(f"{tag} {json.dumps(payload)}\n")
    sys.stdout.flush()


class Generation:
    def __init__(self, kind: str) -> None:
        from cluster.runtime import apply_role_env

        apply_role_env()
        self.kind, self.task, self.paths, self.tok = kind, *setup_paths()
        self.prompts = [self.task.render_prompt(self.tok, r) for r in self.task.rows()[1][:PROMPTS]]
        if kind == "gen-ours":
            from actors.worker.rollout_worker import RolloutWorker
            from configs.model import LoraConfig

            cfg = bench_config([]).rollout
            self.worker = RolloutWorker(str(self.paths.model_dir), str(self.paths.tokenizer_dir), cfg,
                                        LoraConfig())
            self.worker.load_adapter(random_lora(str(self.paths.model_dir)))
        else:
            from vllm import LLM

            self.llm = LLM(model=str(self.paths.model_dir), tokenizer=str(self.paths.tokenizer_dir),
                           dtype="float32",
                           enforce_eager=True, kv_cache_memory_bytes=256 * 1024**2, max_model_len=512, seed=0)
        self.calls = 0

    def run(self) -> dict:
        self.calls += 1
        t = time.perf_counter()
        if self.kind == "gen-ours":
            out = self.worker.generate(self.prompts, n=WORK["n"], temperature=1.0,
                                       max_tokens=WORK["max_tokens"],
                                       seed=self.calls)
            tokens = sum(len(c.token_ids) for g in out.groups for c in g)
        else:
            from vllm import SamplingParams

            params = SamplingParams(n=WORK["n"], temperature=1.0, max_tokens=WORK["max_tokens"],
                                    logprobs=0 if self.kind == "gen-bare-lp" else None)
            outs = self.llm.generate(self.prompts, params, use_tqdm=False)
            tokens = sum(len(c.token_ids) for o in outs for c in o.outputs)
        return {"seconds": time.perf_counter() - t, "tokens": tokens}


class RL:
    """A training run on Ray, its coordinator in this process: one unit is one RL step."""

    def __init__(self, cfg) -> None:
        import tempfile

        from actors.driver.coordinator import Coordinator
        from cluster.runtime import connect

        connect(cfg.cluster)
        self.coord = Coordinator(cfg, tempfile.mkdtemp(prefix="ngrpo-bench-rl-"))
        self.coord.setup()
        self.samples = cfg.train.prompts_per_step * cfg.rollout.n  # completions or episodes a step
        self.capacity = self.coord.pipeline.slots()  # the stream's bound, or a share of the step's batch

    def settle(self) -> float:
        """After a run of units: a streamed worker samples on after its step, so the driver waits for its
        calls in flight (seconds returned, counted in the last unit) before another side is measured."""
        t = time.perf_counter()
        self.coord.pipeline.settle()
        return time.perf_counter() - t

    def _counts(self) -> list[tuple[int, int]]:
        roles = self.coord.roles
        return roles.backend.get([roles.backend.call(a, "engine_counts") for a in roles.rollout.actors])

    def run(self) -> dict:
        before = self._counts()
        t = time.perf_counter()
        row = self.coord.train_step()
        seconds = time.perf_counter() - t
        after = self._counts()
        steps = sum(a[0] - b[0] for a, b in zip(after, before) if a and b)
        running = sum(a[1] - b[1] for a, b in zip(after, before) if a and b)
        return {"seconds": seconds, "sync": row["time/sync"], "generate": row["time/generate"],
                "learn": row["time/learn"], "tokens": row["completion_length"],
                "samples": self.samples, **{k: v for k, v in row.items() if k.startswith("memory/")},
                "occupancy": running / max(1, steps) / self.capacity}


class TRL:
    """GRPOTrainer paused between optimizer steps by a callback that waits for the driver's next RUN."""

    def __init__(self) -> None:
        import threading

        self.task, self.paths, self.tok = setup_paths()
        self.go, self.done = threading.Semaphore(0), threading.Semaphore(0)
        self.times: list[float] = []
        self.thread = threading.Thread(target=self._train, daemon=True)
        self.thread.start()
        self.go.release()  # the first step warms up (compiles, allocates) before READY
        self.done.acquire()

    def _train(self) -> None:
        from bench.trl_side import trl_trainer

        trainer = trl_trainer(self.task, self.paths, self.tok, self)
        trainer.train()

    def run(self) -> dict:
        self.go.release()
        self.done.acquire()
        return {"seconds": self.times[-1]}


class LearnerSide:
    """The Learner's step on a fixed batch (bench/work.py). Each unit also counts the step's useful FLOPs
    and its padded tokens (bench/flops.py) and measures the plain matmul peak on the same threads, right
    after the step, so that the ratio of the two meets the same machine state."""

    def __init__(self, plain: bool, share_prompt: bool = False, prompts: int = PROMPTS,
                 completion: int | None = None) -> None:
        from bench.work import deepspeed_learner, plain_learner
        from models.memory import ModelShape

        self.task, self.paths, self.tok = setup_paths()
        self.learner = plain_learner(self.paths) if plain else deepspeed_learner(self.paths, share_prompt)
        self.batch = learner_batch(self.learner.pad_id, prompts=prompts, completion=completion)
        self.shape = ModelShape.of_folder(self.paths.model_dir)

    def run(self) -> dict:
        from bench.flops import batch_work, matmul_flops_per_s

        lora = self.learner.model_cfg.lora
        work = batch_work(self.batch, self.learner.plan_micro_batches(self.batch), self.learner.shares_prompt,
                          self.shape, lora.r, list(lora.target_modules))
        t = time.perf_counter()
        m = self.learner.train_step(self.batch)
        seconds = time.perf_counter() - t
        return {"seconds": seconds, "learned": m["learned_sequences"], **work,
                "completion_tokens": sum(len(c) for c in self.batch.completion_ids),
                "peak_flops": matmul_flops_per_s(self.shape), "memory": m["memory/learner"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind",
                   choices=["gen-ours", "gen-bare", "gen-bare-lp", "rl", "agent", "trl", "learner-ds",
                            "learner-shared", "learner-torch", "gw-harness", "gw-free", "gw-worker"])
    p.add_argument("--pipeline", choices=["sync", "one_step_off", "stream"], default="sync")
    p.add_argument("--staleness", type=int, default=0)
    p.add_argument("--threads", type=int, nargs=2, default=(2, 2), metavar=("ROLLOUT", "LEARNER"))
    p.add_argument("--prompts", type=int, default=PROMPTS, help="learner kinds: prompts in the batch (x n)")
    p.add_argument("--completion", type=int, default=None,
                   help="learner kinds: every completion this many tokens (default: the profile's lengths)")
    args = p.parse_args(argv)
    if args.kind.startswith("gen-"):
        side = Generation(args.kind)
    elif args.kind == "rl":
        (rollout, learner), k = args.threads, args.staleness
        side = RL(bench_config([f"train.pipeline={('sync', 'one_step_off')[k]}",
                                f"rollout.num_threads={rollout}", f"learner.num_threads={learner}",
                                f"train.run_name=bench-rl-{k}"]))
    elif args.kind == "agent":
        from bench.agent import agent_config, warmed_policy

        side = RL(agent_config(args.pipeline, warmed_policy()))
    elif args.kind == "trl":
        side = TRL()
    elif args.kind.startswith("gw-"):
        from bench.gateway import GatewaySide

        side = GatewaySide(args.kind)
    else:
        side = LearnerSide(plain=args.kind == "learner-torch", share_prompt=args.kind == "learner-shared",
                           prompts=args.prompts, completion=args.completion)
    side.run()  # a warm-up unit, not measured
    _emit("READY", {"kind": args.kind})
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "QUIT":
            break
        units = [side.run() for _ in range(int(cmd[1]))]
        if isinstance(side, RL):
            units[-1]["seconds"] += side.settle()
        _emit("DONE", {"units": units, "median_seconds": statistics.median(u["seconds"] for u in units)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

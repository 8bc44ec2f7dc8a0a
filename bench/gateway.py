"""The gateway row's work: fund-assistant episodes through the OpenAI gateway against the same episodes
played in the worker.

Both sides hold a RolloutWorker on the OpenAI-harness preset's warmed-up policy and play the same 8 rows
x 8 episodes a unit (up to 5 calls of at most 80 tokens, temperature 1, the unit's seed):

- `gw-harness`: `play_harness` with the fund harness (tasks/fund_assistant/harness.py): HTTP and JSON,
  vLLM's render and derender of every call, per-request seeds and lock step (chunked prefill off), as a
  run plays it;
- `gw-free`: the same without per-request seeds and lock step (the engine steps whenever it has work; the
  sessions are then not reproducible): what reproducibility costs;
- `gw-worker`: the same conversations in the worker's own agent loop (`run_episodes`: token ids in and
  out, no HTTP, no JSON, nothing rendered after the first prompt), its environment speaking the
  harness's format: the same system turn with the tool list, `<tool_call>` blocks, `<tool_response>`
  turns, the same account and score.

A unit reports its episodes, model calls, sampled tokens and seconds, and the seconds in engine steps:
the rest is per call what is not the engine (the gateway: vLLM's rendering of the request and the answer,
HTTP and JSON, the harness's code, waiting for harnesses in lock step; in the worker: the environment and
the ids of each observation), which on two cores takes CPU from the engine.

On the real model (`NGRPO_BENCH_WORK=real`, bench.real) the sides hold SmolLM2-135M-Instruct as packaged,
without a warm-up, with the chat template of the real-model agent preset (the tools template and one
worked episode, configs/smollm2-agent-tools.jinja) so that its turns are tool calls; a call's engine work
is then ~100 times the tiny model's, and 4 rows x 4 episodes make a unit.
"""

from __future__ import annotations

import time

from bench.agent import warmed_policy
from bench.work import REAL

PRESET = "configs/tiny-cpu-agent-openai.yaml"
REAL_MODEL = ["model.name=smollm2-135m-instruct", "model.dtype=float32", "rollout.max_model_len=1536",
              "env.chat_template=configs/smollm2-agent-tools.jinja"]
ROWS, N = (4, 4) if REAL else (8, 8)
DESCRIPTION = (f"SmolLM2-135M-Instruct (no warm-up, the agent preset's chat template), {ROWS} rows x {N} "
               "fund-assistant episodes a unit through the fund harness, up to 5 calls x 80 tokens, "
               "temperature 1" if REAL else
               f"OpenAI-harness preset after its warm-up, {ROWS} rows x {N} fund-assistant episodes a unit, "
               "up to 5 calls x 80 tokens, temperature 1")


class GatewaySide:
    """One side of the gateway row (`gw-harness` or `gw-worker`); a unit plays ROWS x N episodes."""

    def __init__(self, kind: str) -> None:
        from actors.driver.workloads import workload_for
        from actors.worker.rollout_worker import RolloutWorker
        from cluster.runtime import apply_role_env
        from configs.loader import load_config
        from models.tool_template import template_text
        from tasks.base import load_task

        apply_role_env()
        self.kind = kind
        self.cfg = load_config(PRESET, REAL_MODEL if REAL else None)
        self.work = workload_for(self.cfg, load_task(self.cfg.task))
        model, tokenizer = self._policy()
        self.rows = self.work.rows()[0][:ROWS]
        # (gw-free: neither per-request seeds nor lock step)
        self.worker = RolloutWorker(model, tokenizer, self.cfg.rollout, self.cfg.model.lora,
                                    request_seeds=kind == "gw-harness")
        template = template_text(self.cfg.env.chat_template)
        if template is not None:  # gw-worker renders its first prompts with the gateway's template
            self.worker.tokenizer.chat_template = template
        task = load_task(self.cfg.task)
        self.make_env = lambda: task.harness_environment(self.cfg.env.max_turns)
        self.units = 0

    def _policy(self) -> tuple[str, str]:
        """(model dir, tokenizer dir): the tiny preset's warmed-up policy, or the packaged real model."""
        if not REAL:
            return warmed_policy(PRESET)
        from models.resolve import resolve_model

        paths = resolve_model(self.cfg.model, *self.work.tokenizer_text())
        return str(paths.model_dir), str(paths.tokenizer_dir)

    def run(self) -> dict:
        self.units += 1
        w, seed = self.worker, 1000 + self.units
        t = time.perf_counter()
        if self.kind in ("gw-harness", "gw-free"):
            before = w.gateway.bridge.engine_s if w.gateway else 0.0
            samples = [s for g in w.play_harness(self.rows, **self.work.sampling(), n=N, temperature=1.0,
                                                 seed=seed).groups for s in g]
            seconds = time.perf_counter() - t
            engine = w.gateway.bridge.engine_s - before
            split = {"engine": engine, "rest": seconds - engine}
        else:
            from actors.worker.agent_loop import run_episodes

            params = w._sampling(1, 1.0, None, seed)
            engine_s = [0.0]

            def engine(sequences):
                t0 = time.perf_counter()
                outs, logprobs = w._run(sequences, params)
                engine_s[0] += time.perf_counter() - t0
                return [(list(o.outputs[0].token_ids), lps[0]) for o, lps in zip(outs, logprobs)]

            rows = [r for r in self.rows for _ in range(N)]
            samples = run_episodes(rows, self.make_env, w.tokenizer, engine,
                                   w._context(None, None), w.version)
            seconds = time.perf_counter() - t
            split = {"engine": engine_s[0], "rest": seconds - engine_s[0]}
        return {"seconds": seconds, "samples": len(samples), "tokens": sum(s.policy_tokens for s in samples),
                "calls": sum(s.episode.score.get("turns", 0.0) for s in samples),
                "success": sum(s.episode.score.get("success", 0.0) for s in samples), **split}

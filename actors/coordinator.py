"""Coordinator: owns the step loop, the prompt stream, the NGRPO switch, metrics and checkpoints.

One step: draw prompts → RolloutWorkers.generate → RewardPool.score → `algo.step.algo_step` (zero-std
statistics, NGRPO switch, advantages, token weights) → Learner.train_step → push the LoRA weights to
every worker (as one object reference, verified by fingerprint) → record the metrics row.

The roles are started through `cluster.actor_group.ActorGroup` on a backend: Ray actors in a run, or
plain objects in this process for unit tests (`roles` swaps a role's class). `train.py` drives the
coordinator one call at a time so the driver can show progress.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from actors.data_stream import PromptStream
from actors.generation import Generation, evaluate, generate
from actors.reward_pool import RewardActor, RewardPool
from actors.rollout_worker import PushError, RolloutWorker
from algo.ngrpo_switch import NGRPOSwitch
from algo.stats import accuracy_by, batch_stats, breakdown_means
from algo.step import StepResult, algo_step
from cluster.actor_group import ActorGroup
from cluster.backend import Backend, RayBackend
from cluster.runtime import role_env
from configs.root import Config
from contracts.types import ScoreRequest, ScoreResult, TrainBatch
from learner.learner import Learner
from models.tiny import resolve_model
from observe.ray_metrics import RayMetrics
from observe.run_log import RunLog
from observe.schema import merge_ranks
from tasks.base import load_task

log = logging.getLogger(__name__)
ROLES = {"rollout": RolloutWorker, "learner": Learner, "reward": RewardActor}


class Coordinator:
    def __init__(self, cfg: Config, run_dir: str, backend: Backend | None = None,
                 roles: dict[str, type] | None = None) -> None:
        self.cfg, self.backend = cfg, backend or RayBackend()
        self.roles = {**ROLES, **(roles or {})}
        self.task = load_task(cfg.task)
        self.run = RunLog(run_dir)
        self.run.write_json("config.json", cfg.model_dump(mode="json"))
        self.switch = NGRPOSwitch.from_config(cfg.algorithm.ngrpo)
        self.version = 0
        self.step = 0
        self.eval_tables: dict[str, dict] = {}
        self.info: dict[str, Any] = {"run_dir": str(Path(run_dir).resolve())}
        # Ray's metrics API (dashboard / Prometheus) exists only on the Ray backend.
        self.ray_metrics = RayMetrics(Path(run_dir).name) if self.backend.name == "ray" else None
        self.name_prefix = f"{Path(run_dir).name}/"  # actor names in the dashboard: "<run>/rollout-0"
        self.env = {"env_vars": role_env(cfg.cluster.env_vars)}

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"Coordinator({self.name_prefix.rstrip('/')})"

    # ---- set-up -----------------------------------------------------------------------------------
    def setup(self) -> dict:
        """Data, base model, optional warm-up, then the roles. Returns what was set up."""
        t0 = time.perf_counter()
        self.train_rows, self.eval_rows = self.task.rows()
        paths = resolve_model(self.cfg.model, self.task.corpus, self.task.vocabulary())
        self.base_model_dir, self.tokenizer_dir = str(paths.model_dir), str(paths.tokenizer_dir)
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir)
        if self.cfg.train.warmup.enabled:
            self.info.update(self._warmup())
        self._start_roles()
        if self.cfg.algorithm.difficulty.enabled:
            self.info.update(self._filter_by_difficulty())
        self.stream = PromptStream(self.train_rows, self.cfg.train, self.cfg.train.seed, self.task.group_column)
        self.info.update(
            train_rows=len(self.train_rows), eval_rows=len(self.eval_rows), setup_seconds=time.perf_counter() - t0,
            base_model=self.base_model_dir,
        )
        self.run.event("setup", **{k: v for k, v in self.info.items() if not isinstance(v, dict)})
        return self.info

    def _warmup(self) -> dict:
        from learner.warmup import sft_warmup

        w, rows = self.cfg.train.warmup, self.task.warmup_rows(self.train_rows)
        examples = [(self.task.render_prompt(self.tokenizer, r), r["solution"]) for r in rows]
        groups = [r[self.task.group_column] for r in rows] if w.balanced else None
        out = str(self.run.dir / "warmup_model")
        ref = self.backend.task(sft_warmup, (self.base_model_dir, self.tokenizer_dir, examples, out), dict(
            steps=w.steps, lr=w.lr, batch_size=w.batch_size, seed=self.cfg.train.seed, groups=groups,
        ), {"num_cpus": self.cfg.learner.num_cpus, "runtime_env": self.env})
        stats = self.backend.get(ref)
        self.base_model_dir = out
        self.run.event("warmup", **stats)
        return stats

    def _start_roles(self) -> None:
        c, world = self.cfg, self.cfg.learner.world_size
        common = dict(backend=self.backend, runtime_env=self.env, name_prefix=self.name_prefix)
        self.learners = ActorGroup(
            self.roles["learner"], world, name="learner", strategy=c.learner.placement_strategy,
            resources={"num_cpus": c.learner.num_cpus, "num_gpus": c.learner.num_gpus}, **common,
            args_for=lambda i: ((self.base_model_dir, self.tokenizer_dir, c.model, c.learner, c.algorithm),
                                {"rank": i, "world_size": world, "seed": c.train.seed, "rl_steps": c.train.steps}),
        )
        self.rollout = ActorGroup(
            self.roles["rollout"], c.rollout.num_workers, name="rollout", strategy=c.rollout.placement_strategy,
            resources={"num_cpus": c.rollout.num_cpus, "num_gpus": c.rollout.num_gpus}, **common,
            args_for=lambda i: ((self.base_model_dir, self.tokenizer_dir, c.rollout, c.model.lora),
                                {"dtype": c.model.dtype, "worker_index": i, "seed": c.train.seed}),
        )
        addr, port = self.learners.get(self.backend.call(self.learners.actors[0], "rendezvous"))
        trainable = self.learners.get(self.learners.call("setup", addr, port))
        self.rollout.get(self.rollout.call("ready"))
        reward_group = ActorGroup(
            self.roles["reward"], c.reward.num_actors, name="reward", resources={"num_cpus": c.reward.num_cpus},
            args_for=lambda i: (([(f.name, f.weight) for f in c.reward.functions], c.reward.timeout_s),
                                {"index": i, "judge": self.task.judge}), **common,
        )
        self.pool = RewardPool(reward_group, c.reward.timeout_s, len(c.reward.functions) + 1)
        self.pool.wait_ready()
        self.info["trainable_params"] = trainable[0]
        # Where each role landed (placement groups: learner ranks packed, rollout workers spread).
        self.info["placement"] = placement = {
            "learner": self.learners.node_ids(), "rollout": self.rollout.node_ids(), "reward": self.pool.node_ids(),
        }
        self.run.event("placement", **placement)

    def _filter_by_difficulty(self) -> dict:
        """Sample every training prompt with the current policy; keep the easy/medium/hard mix."""
        from algo.difficulty import difficulty_filter

        d = self.cfg.algorithm.difficulty
        gen = self._generate(self.train_rows, n=d.num_samples)
        correct = self._correct(self._score(self.train_rows, gen.groups), len(gen.groups))
        rates = [sum(row) / len(row) for row in correct]
        keep = difficulty_filter(rates, easy_min=d.easy_min, hard_max=d.hard_max, mix=d.mix, seed=self.cfg.train.seed)
        if not keep:
            raise RuntimeError("difficulty filter kept no prompt: every prompt is all-right or all-wrong "
                               "under the current policy; disable algorithm.difficulty or warm up differently")
        stats = {"difficulty_kept": len(keep), "difficulty_from": len(self.train_rows)}
        self.train_rows = [self.train_rows[i] for i in keep]
        self.run.event("difficulty_filter", **stats)
        return stats

    # ---- one RL step ------------------------------------------------------------------------------
    def train_step(self) -> dict[str, Any]:
        """draw → generate → score → algo step → learn → push → record; returns the metrics row."""
        c, times = self.cfg, {}
        self.step += 1
        rows = self.stream.next_rows()
        with _timed(times, "generate"):
            gen = self._generate(rows, seed=c.train.seed * 100_003 + self.step, offsets=c.algorithm.loss.dart)
            self._check_versions(gen)
        with _timed(times, "reward"):
            scored = self._score(rows, gen.groups)
        correct = self._correct(scored, len(rows))
        stats = self._batch_stats(rows, gen, scored, correct)
        out = self._algo(gen, scored)
        with _timed(times, "learn"):
            learn = self._learn(gen, out)
        with _timed(times, "sync"):
            sync = self._push()
        row = {"step": self.step, **sync, "reward_failures": scored.failures, **out.metrics, **stats, **learn,
               **{f"time/{k}": v for k, v in times.items()}}
        return self._record(row)

    def _generate(self, rows: list[dict], **sampling: Any) -> Generation:
        prompts = [self.task.render_prompt(self.tokenizer, r) for r in rows]
        return generate(self.rollout, prompts, **sampling)

    def _check_versions(self, gen: Generation) -> None:
        for worker, v in enumerate(gen.versions):
            if v != self.version:
                raise PushError(f"worker {worker} generated with version {v}, expected {self.version}")

    def _score(self, rows: list[dict], groups: list[list]) -> ScoreResult:
        flat_rows = [row for row, g in zip(rows, groups) for _ in g]
        scored = self.pool.score(ScoreRequest(
            prompts=[row["prompt"] for row in flat_rows],
            completions=[comp.text for g in groups for comp in g],
            columns=self.task.columns(flat_rows),
        ))
        for line in scored.failure_log:
            self.run.event("reward_failure", step=self.step, detail=line)
        return scored

    def _correct(self, scored: ScoreResult, num_groups: int) -> list[list[float]]:
        """(G, n) the task judge's verdict per sample, from the breakdown the pool computed."""
        key, n = self.task.correct_key, len(scored.breakdowns) // max(1, num_groups)
        flat = [float(b.get(key, 0.0)) for b in scored.breakdowns]
        return [flat[i : i + n] for i in range(0, len(flat), n)]

    def _batch_stats(self, rows: list[dict], gen: Generation, scored: ScoreResult, correct) -> dict[str, float]:
        n = self.cfg.rollout.n
        values = [r[self.task.group_column] for r in rows]
        stats = batch_stats(
            values, correct=correct, rewards=[scored.rewards[i : i + n] for i in range(0, len(scored.rewards), n)],
            lengths=[[len(c.token_ids) for c in g] for g in gen.groups],
            truncated=[[c.finish_reason == "length" for c in g] for g in gen.groups],
            lags=[[self.version - c.policy_version for c in g] for g in gen.groups],
        )
        if self.stream.accuracy is not None:  # adaptive sampling follows the accuracy per row kind
            by_value = accuracy_by([r[self.cfg.train.adaptive_by] for r in rows], correct)
            stats.update({f"sampling_weight/{k}": v for k, v in self.stream.observe(by_value).items()})
        stats.update(breakdown_means(scored.breakdowns))
        return stats

    def _algo(self, gen: Generation, scored: ScoreResult) -> StepResult:
        comps = [c for g in gen.groups for c in g]
        rewards = torch.tensor(scored.rewards, dtype=torch.float64).view(len(gen.groups), -1)  # (G, n)
        out = algo_step(
            rewards, step=self.step, switch=self.switch, algo=self.cfg.algorithm,
            lengths=[[len(c.token_ids) for c in g] for g in gen.groups], max_len=self.cfg.rollout.max_tokens,
            texts=[c.text for c in comps], offsets=[c.offsets for c in comps],
        )
        if out.event is not None:
            ev = out.event
            self.run.event("ngrpo_switch", step=ev.step, active=ev.active, window_value=ev.window_value)
            if self.ray_metrics:
                self.ray_metrics.switch_event(ev.active)
            log.info("step %d: NGRPO %s (window frac_reward_zero_std %.3f)", ev.step,
                     "ON" if ev.active else "OFF", ev.window_value)
        return out

    def _learn(self, gen: Generation, out: StepResult) -> dict[str, float]:
        """Every learner rank gets the whole batch (one object reference) and trains on its shard."""
        batch = TrainBatch(
            prompt_ids=[p for p, g in zip(gen.prompt_ids, gen.groups) for _ in g],
            completion_ids=[c.token_ids for g in gen.groups for c in g],
            rollout_logprobs=[c.logprobs for g in gen.groups for c in g],
            advantages=[float(a) for a in out.advantages.flatten()],
            token_weights=out.token_weights,
        )
        ref = self.backend.put(batch)
        return merge_ranks(self.learners.get(self.learners.call("train_step", ref)))

    def _push(self) -> dict[str, Any]:
        """Export the learner's LoRA and load it on every worker, as one object reference; every worker
        must report the learner's version and fingerprint, or the step fails."""
        exports = self.learners.call("export_lora")  # every rank (ZeRO-3 gathers); rank 0 returns it
        served = self.rollout.get(self.rollout.call("load_adapter", exports[0]))
        self.learners.get(exports[1:])
        first = served[0]
        bad = [s for s in served if (s.version, s.fingerprint) != (first.version, first.fingerprint)]
        if bad:
            raise PushError(f"workers serve different policies after a push: {[vars(s) for s in served]}")
        self.version = first.version
        return {"policy_version": self.version, "weights_fingerprint": first.fingerprint, "push_bytes": first.nbytes}

    def _record(self, row: dict[str, Any]) -> dict[str, Any]:
        self.run.metrics(row)
        if self.ray_metrics:
            self.ray_metrics.record(row)
        if self.cfg.train.checkpoint_every and self.step % self.cfg.train.checkpoint_every == 0:
            self.save_adapter(f"checkpoints/step_{self.step:05d}")
        return row

    # ---- evaluation & outputs ---------------------------------------------------------------------
    def evaluate(self, tag: str) -> dict:
        """The held-out eval table (actors.generation.evaluate) of the policy the workers serve now."""
        limit = self.cfg.train.eval_limit
        rows = self.eval_rows[:limit] if limit else self.eval_rows
        t = time.perf_counter()
        table = evaluate(self.task, self.rollout, self.tokenizer, rows, self.cfg.rollout.eval_temperature)
        table.update(policy_version=self.version, seconds=time.perf_counter() - t)
        self.eval_tables[tag] = table
        if self.ray_metrics:
            self.ray_metrics.record_eval(tag, table)
        self.run.eval(tag, table)  # TensorBoard
        self.run.event("eval", tag=tag, **{k: v for k, v in table.items() if k != "per_category"})
        self.run.write_json("eval.json", self.eval_tables)
        return table

    def save_adapter(self, rel: str) -> str:
        """The adapter (PEFT, safetensors) plus the coordinator's state: step, version, NGRPO switch."""
        path = str(self.run.dir / rel)
        # Rank 0 writes the files; the coordinator runs on the driver's node (train.py pins it), so on
        # a multi-node cluster give the learner a shared run_dir.
        self.learners.get(self.learners.call("save_adapter", path))
        state = {"step": self.step, "policy_version": self.version, "ngrpo_switch": self.switch.state_dict()}
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "coordinator_state.json").write_text(json.dumps(state, indent=2, default=str))
        self.run.event("checkpoint", step=self.step, path=path, version=self.version)
        return path

    def finish(self) -> dict:
        """Final adapter, switch events and eval tables; returns a summary."""
        from observe.tables import format_eval_tables

        adapter = self.save_adapter("adapter")
        events = [e.__dict__ for e in self.switch.events]
        self.run.write_json("ngrpo_switch_events.json", events)
        self.run.write_text("eval_table.md", format_eval_tables(self.eval_tables, self.task.eval_keys) + "\n")
        return {"adapter": adapter, "switch_events": events, "eval": self.eval_tables, "run_dir": str(self.run.dir),
                "eval_keys": list(self.task.eval_keys)}

    def shutdown(self) -> None:
        for group in (getattr(self, "rollout", None), getattr(self, "learners", None), getattr(self, "pool", None)):
            if group is not None:
                group.shutdown()
        self.run.close()


@contextmanager
def _timed(times: dict[str, float], phase: str):
    t = time.perf_counter()
    yield
    times[phase] = time.perf_counter() - t

"""Coordinator: owns the step loop, the data stream, the NGRPO switch, metrics and checkpoints.

One step: prompts → RolloutWorkers.generate → RewardPool.score → groups → zero_std_stats → NGRPO
switch → advantages → Learner.train_step → export LoRA → push to every worker (verified by
fingerprint) → metrics. Only this class calls `ray.get`. `train.py` drives it one call at a time so
the driver can show progress.
"""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path
from typing import Any

import ray
import torch

from actors import batching
from actors.reward_pool import RewardPool
from actors.rollout_worker import PushError, RolloutWorker
from actors.run_log import RunLog
from actors.sampling import CategoryAccuracy
from actors.types import Rollout, ScoreRequest
from cluster.actor_group import ActorGroup
from cluster.runtime import role_env
from configs.root import Config
from learner.learner import Learner
from learner.losses import overlong_penalty
from learner.ngrpo_switch import NGRPOSwitch
from learner.token_weights import dart_token_weights
from models.tiny import resolve_model
from observe.ray_metrics import RayMetrics

log = logging.getLogger(__name__)
COLUMNS = ("prompt", "request", "solution", "category", "scenario_id", "step", "num_steps", "lang")


class Coordinator:
    def __init__(self, cfg: Config, run_dir: str) -> None:
        self.cfg = cfg
        self.run = RunLog(run_dir)
        self.run.write_json("config.json", cfg.model_dump(mode="json"))
        self.switch = NGRPOSwitch.from_config(cfg.algorithm.ngrpo)
        self.rng = random.Random(cfg.train.seed)
        self.version = 0
        self.step = 0
        self._queues: dict[tuple[str, str] | None, list[int]] = {}
        self._cat_order: list[str] = []
        self._cat_acc: CategoryAccuracy | None = None  # adaptive sampling's accuracy per category or kind
        self.eval_tables: dict[str, dict] = {}
        self.info: dict[str, Any] = {"run_dir": str(Path(run_dir).resolve())}
        # Ray's metrics API (dashboard / Prometheus); in-process unit tests without Ray skip it.
        self.ray_metrics = RayMetrics(Path(run_dir).name) if ray.is_initialized() else None
        self.name_prefix = f"{Path(run_dir).name}/"  # actor names in the dashboard: "<run>/rollout-0"

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"Coordinator({self.name_prefix.rstrip('/')})"

    # ---- set-up -----------------------------------------------------------------------------------
    def setup(self) -> dict:
        """Data, base model, optional warm-up, then the actors. Returns what was set up."""
        t0 = time.perf_counter()
        self.train_rows, self.eval_rows = self._load_data()
        mc = self.cfg.model
        paths = resolve_model(mc.name, mc.tokenizer, mc.tiny, self.cfg.data.seed)
        self.base_model_dir, self.tokenizer_dir = str(paths.model_dir), str(paths.tokenizer_dir)
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir)
        if self.cfg.train.warmup.enabled:
            self.info.update(self._warmup())
        self._start_roles()
        if self.cfg.algorithm.difficulty.enabled:
            self.info.update(self._filter_by_difficulty())
        self.info.update(
            train_rows=len(self.train_rows), eval_rows=len(self.eval_rows), setup_seconds=time.perf_counter() - t0,
            base_model=self.base_model_dir,
        )
        self.run.event("setup", **{k: v for k, v in self.info.items() if not isinstance(v, dict)})
        return self.info

    def _load_data(self) -> tuple[list[dict], list[dict]]:
        from tasks.fund_assistant import generate, load_jsonl

        d = self.cfg.data
        if d.train_file:
            train = load_jsonl(d.train_file)
            held = load_jsonl(d.eval_file) if d.eval_file else []
            return train, held
        return generate(seed=d.seed, n_single=d.n_single, n_multistep_samples=d.n_multistep_samples,
                        eval_fraction=d.eval_fraction)

    def _warmup(self) -> dict:
        from learner.warmup import sft_warmup
        from tasks.fund_assistant import apply_seed_label_bug

        w = self.cfg.train.warmup
        if w.compact_labels:
            from tasks.fund_assistant.compact import compact_rows

            rows = compact_rows(self.train_rows, seed_label_bug=w.seed_label_bug)
        else:
            rows = apply_seed_label_bug(self.train_rows) if w.seed_label_bug else self.train_rows
        out = str(self.run.dir / "warmup_model")
        env = {"env_vars": role_env(self.cfg.cluster.env_vars)}
        task = ray.remote(sft_warmup).options(num_cpus=self.cfg.learner.num_cpus, runtime_env=env)
        stats = ray.get(task.remote(
            self.base_model_dir, self.tokenizer_dir, rows, out, steps=w.steps, lr=w.lr,
            batch_size=w.batch_size, system=self.cfg.data.system_prompt, seed=self.cfg.train.seed,
            balanced=w.balanced,
        ))
        self.base_model_dir = out
        self.run.event("warmup", **stats)
        return stats

    def _start_roles(self) -> None:
        c = self.cfg
        env = {"env_vars": role_env(c.cluster.env_vars)}
        world = c.learner.world_size
        self.learners = ActorGroup(
            Learner, world, {"num_cpus": c.learner.num_cpus, "num_gpus": c.learner.num_gpus},
            c.learner.placement_strategy,
            name="learner", runtime_env=env, name_prefix=self.name_prefix,
            args_for=lambda i: ((self.base_model_dir, self.tokenizer_dir, c.model, c.learner, c.algorithm),
                                {"rank": i, "world_size": world, "seed": c.train.seed, "rl_steps": c.train.steps}),
        )
        self.rollout = ActorGroup(
            RolloutWorker, c.rollout.num_workers, {"num_cpus": c.rollout.num_cpus, "num_gpus": c.rollout.num_gpus},
            c.rollout.placement_strategy, name="rollout", runtime_env=env, name_prefix=self.name_prefix,
            args_for=lambda i: ((self.base_model_dir, self.tokenizer_dir, c.rollout, c.model.lora),
                                {"dtype": c.model.dtype, "worker_index": i, "seed": c.train.seed}),
        )
        addr, port = ray.get(self.learners.actors[0].rendezvous.remote())
        trainable = ray.get(self.learners.async_call("setup", addr, port))
        ray.get(self.rollout.async_call("ready"))
        self.pool = RewardPool(
            [(f.name, f.weight) for f in c.reward.functions], c.reward.num_actors, c.reward.timeout_s,
            use_ray=True, actor_options={"num_cpus": c.reward.num_cpus, "runtime_env": env},
            name_prefix=self.name_prefix,
        )
        self.pool.wait_ready()
        self.info["trainable_params"] = trainable[0]
        # Where Ray put each role (placement groups: learner ranks packed, rollout workers spread).
        self.info["placement"] = placement = {
            "learner": self.learners.node_ids(), "rollout": self.rollout.node_ids(), "reward": self.pool.node_ids(),
        }
        self.run.event("placement", **placement)

    def _filter_by_difficulty(self) -> dict:
        """Seed 004 §2.3: sample every training prompt with the current policy, keep the 30/50/20 mix."""
        from learner.difficulty import difficulty_filter

        d = self.cfg.algorithm.difficulty
        rollouts = self._generate(self.train_rows, n=d.num_samples)
        groups = [g for r in rollouts for g in r.groups]
        rates = [sum(batching.tool_correct(c.text, row["solution"]) for c in g) / len(g)
                 for row, g in zip(self.train_rows, groups)]
        keep = difficulty_filter(rates, easy_min=d.easy_min, hard_max=d.hard_max, mix=d.mix, seed=self.cfg.train.seed)
        if not keep:
            raise RuntimeError("difficulty filter kept no prompt: every prompt is all-right or all-wrong "
                               "under the current policy; disable algorithm.difficulty or warm up differently")
        before = len(self.train_rows)
        self.train_rows = [self.train_rows[i] for i in keep]
        stats = {"difficulty_kept": len(keep), "difficulty_from": before}
        self.run.event("difficulty_filter", **stats)
        return stats

    # ---- generation -------------------------------------------------------------------------------
    def _render(self, rows: list[dict]) -> list[str]:
        from tasks.fund_assistant.prompting import render_prompt

        return [render_prompt(self.tokenizer, r["prompt"], self.cfg.data.system_prompt) for r in rows]

    def _generate(self, rows: list[dict], **sampling: Any) -> list[Rollout]:
        prompts = self._render(rows)
        k = len(self.rollout)
        chunks = [prompts[i * len(prompts) // k : (i + 1) * len(prompts) // k] for i in range(k)]
        refs = [a.generate.remote(ch, **sampling) for a, ch in zip(self.rollout.actors, chunks) if ch]
        return ray.get(refs)

    def _next_rows(self) -> list[dict]:
        t = self.cfg.train
        n = t.prompts_per_step
        if t.sampling == "balanced":
            return [self._draw("category", self._draw_category()) for _ in range(n)]
        if t.sampling == "adaptive":
            if self._cat_acc is None:
                missing = sum(1 for r in self.train_rows if not r.get(t.adaptive_by))
                if missing:
                    raise ValueError(f"train.adaptive_by={t.adaptive_by!r}: {missing} training rows have no {t.adaptive_by!r}")
                values = sorted({r[t.adaptive_by] for r in self.train_rows})
                self._cat_acc = CategoryAccuracy(values, t.adaptive_ema, t.adaptive_floor)
            w = self._cat_acc.weights()
            chosen = self.rng.choices(list(w), weights=list(w.values()), k=n)
            return [self._draw(t.adaptive_by, v) for v in chosen]
        return [self._draw("category", None) for _ in range(n)]

    def _draw_category(self) -> str:
        if not self._cat_order:
            self._cat_order = sorted({r["category"] for r in self.train_rows})
            self.rng.shuffle(self._cat_order)
        return self._cat_order.pop()

    def _draw(self, column: str, value: str | None) -> dict:
        """The next row whose `column` is `value` (None: any row), each queue an endless sequence of
        shuffled epochs."""
        queue = self._queues.setdefault((column, value) if value is not None else None, [])
        if not queue:
            queue += [i for i, r in enumerate(self.train_rows) if value is None or r.get(column) == value]
            self.rng.shuffle(queue)
        return self.train_rows[queue.pop()]

    # ---- one RL step ------------------------------------------------------------------------------
    def train_step(self) -> dict[str, Any]:
        c = self.cfg
        self.step += 1
        times: dict[str, float] = {}
        rows = self._next_rows()

        t = time.perf_counter()
        rollouts = self._generate(rows, seed=c.train.seed * 100_003 + self.step)
        prompt_ids = [p for r in rollouts for p in r.prompt_token_ids]
        groups = [g for r in rollouts for g in r.groups]
        for r in rollouts:
            if r.policy_version != self.version:
                raise PushError(f"worker {r.worker_index} generated with version {r.policy_version}, expected {self.version}")
        times["time/generate"] = time.perf_counter() - t

        t = time.perf_counter()
        n = c.rollout.n
        flat_rows = [row for row in rows for _ in range(n)]
        req = ScoreRequest(
            prompts=[row["prompt"] for row in flat_rows],
            completions=[comp.text for g in groups for comp in g],
            columns={k: [row.get(k) for row in flat_rows] for k in COLUMNS if k in rows[0]},
        )
        scored = self.pool.score(req)
        rewards = batching.reward_matrix(scored.rewards, n)  # (G, n)
        for line in scored.failure_log:
            self.run.event("reward_failure", step=self.step, detail=line)
        times["time/reward"] = time.perf_counter() - t

        metrics = batching.rollout_metrics(rows, groups, rewards, self.version, c.algorithm.ngrpo.max_reward)
        if self._cat_acc is not None:
            self._cat_acc.update(batching.tool_accuracy_by(rows, groups, c.train.adaptive_by))
            metrics.update({f"sampling_weight/{k}": v for k, v in self._cat_acc.weights().items()})
        metrics.update(batching.breakdown_means(scored.breakdowns))
        shaped = rewards
        if c.algorithm.overlong.enabled:
            lengths = torch.tensor([len(comp.token_ids) for g in groups for comp in g])
            max_len = c.algorithm.overlong.max_len or c.rollout.max_tokens
            pen = overlong_penalty(lengths, max_len, c.algorithm.overlong.buffer).view_as(rewards)
            shaped = rewards + pen.to(rewards.dtype)
            metrics["overlong_penalty_mean"] = pen.float().mean().item()
        was_active = self.switch.active
        active = self.switch.update(self.step, metrics["frac_reward_zero_std"])
        if active != was_active:
            ev = self.switch.events[-1]
            self.run.event("ngrpo_switch", step=ev.step, active=ev.active, window_value=ev.window_value)
            if self.ray_metrics:
                self.ray_metrics.switch_event(ev.active)
            log.info("step %d: NGRPO %s (window frac_reward_zero_std %.3f)", ev.step, "ON" if ev.active else "OFF", ev.window_value)
        adv = batching.step_advantages(shaped, active, c.algorithm)

        t = time.perf_counter()
        weights = self._dart_weights(groups) if c.algorithm.loss.dart else None
        batch = batching.build_train_batch(prompt_ids, groups, adv, self.version, weights)
        batch_ref = ray.put(batch)
        learn = batching.merge_rank_metrics(ray.get(self.learners.async_call("train_step", batch_ref)))
        times["time/learn"] = time.perf_counter() - t

        t = time.perf_counter()
        sync = self._push()
        times["time/sync"] = time.perf_counter() - t

        row = {
            "step": self.step,
            "policy_version": self.version,
            "ngrpo_active": bool(active),
            "advantage_abs_mean": adv.abs().mean().item(),
            "reward_failures": scored.failures,
            **metrics,
            **learn,
            **sync,
            **times,
        }
        self.run.metrics(row)
        if self.ray_metrics:
            self.ray_metrics.record(row)
        if c.train.checkpoint_every and self.step % c.train.checkpoint_every == 0:
            self.save_adapter(f"checkpoints/step_{self.step:05d}")
        return row

    def _dart_weights(self, groups) -> list[list[float]]:
        lc = self.cfg.algorithm.loss
        out = []
        for g in groups:
            for comp in g:
                offsets, pos = [], 0
                for k in range(len(comp.token_ids)):
                    end = len(self.tokenizer.decode(comp.token_ids[: k + 1], skip_special_tokens=True))
                    offsets.append((pos, max(pos, end)))
                    pos = max(pos, end)
                out.append(dart_token_weights(comp.text, offsets, lc.thought_weight, lc.action_weight, lc.other_weight))
        return out

    def _push(self) -> dict[str, Any]:
        """Export the learner's LoRA and load it on every worker; verify every fingerprint."""
        updates = ray.get(self.learners.async_call("export_lora"))
        update = updates[0]
        update_ref = ray.put(update)
        served = ray.get(self.rollout.async_call("load_adapter", update_ref))
        bad = [i for i, fp in enumerate(served) if fp != update.fingerprint]
        if bad:
            raise PushError(f"workers {bad} serve {[served[i] for i in bad]}, learner has {update.fingerprint}")
        self.version = update.version
        nbytes = sum(v.numel() * v.element_size() for v in update.weights.values())
        return {"policy_version": self.version, "weights_fingerprint": update.fingerprint, "push_bytes": nbytes}

    # ---- evaluation & outputs ---------------------------------------------------------------------
    def evaluate(self, tag: str) -> dict:
        """Greedy answers on the held-out set, scored with the ground-truth reward."""
        from rewards.fund import MultistepGTReward

        rows = self.eval_rows[: self.cfg.train.eval_limit] if self.cfg.train.eval_limit else self.eval_rows
        t = time.perf_counter()
        rollouts = self._generate(rows, n=1, temperature=self.cfg.rollout.eval_temperature, seed=0)
        texts = [g[0].text for r in rollouts for g in r.groups]
        gt = MultistepGTReward()
        cols = {k: [r.get(k) for r in rows] for k in ("solution", "category", "request")}
        breakdowns = gt.breakdown([r["prompt"] for r in rows], texts, **cols)
        table = batching.eval_table(rows, texts, breakdowns)
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
        ray.get(self.learners.async_call("save_adapter", path))
        state = {"step": self.step, "policy_version": self.version, "ngrpo_switch": self.switch.state_dict()}
        Path(path).mkdir(parents=True, exist_ok=True)
        (Path(path) / "coordinator_state.json").write_text(json.dumps(state, indent=2, default=str))
        self.run.event("checkpoint", step=self.step, path=path, version=self.version)
        return path

    def finish(self) -> dict:
        """Final adapter, switch events and eval tables; returns a summary."""
        adapter = self.save_adapter("adapter")
        events = [e.__dict__ for e in self.switch.events]
        self.run.write_json("ngrpo_switch_events.json", events)
        self.run.write_text("eval_table.md", batching.format_eval_tables(self.eval_tables) + "\n")
        return {"adapter": adapter, "switch_events": events, "eval": self.eval_tables, "run_dir": str(self.run.dir)}

    def shutdown(self) -> None:
        for group in (getattr(self, "rollout", None), getattr(self, "learners", None)):
            if group is not None:
                group.shutdown()
        if getattr(self, "pool", None) is not None:
            self.pool.shutdown()
        self.run.close()

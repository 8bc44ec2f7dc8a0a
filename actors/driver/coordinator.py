"""Coordinator: owns the step loop, the prompt order, the NGRPO switch, metrics and checkpoints.

One step, the same for single-turn completions and agent episodes and for every pipeline: the
pipeline's next batch (drawn rows, sampled by the RolloutWorkers) → the workload scores it (the reward
pool; the environment's trajectory score) → `algo.step.algo_step` (zero-std statistics, NGRPO switch,
advantages, token weights) → the pipeline delivers (the learner's update, and the new LoRA weights
pushed to every worker or handed over at due points, verified by fingerprint and probe) → record the
metrics row. What differs between completions and episodes is the workload's
(`actors.driver.workloads`); how batches and weights flow, the pipeline's (`actors.driver.pipelines`).

A run checkpoints at its start and every `train.checkpoint_every` steps (`actors.driver.checkpoints`), and can
go back to its newest checkpoint: on resume (a new process), or when the learner group fails (it is
rebuilt, and the coordinator rolls back its own state with it). Runs are deterministic, so the steps
done again give the rows they gave the first time (that part is `actors.driver.run_state.RunState`). The
roles are started through `actors.driver.roles.Roles`, as Ray actors in a run or in this process for unit
tests (`roles` swaps a role's class).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import torch

from actors.driver.checkpoints import CheckpointStore
from actors.driver.no_signal import NoSignal
from actors.driver.pipelines import Batch, Sampler, make_pipeline
from actors.driver.prompts import PromptOrder
from actors.driver.restarts import RestartBudget
from actors.driver.roles import Roles
from actors.driver.run_state import RunState
from actors.driver.setup_steps import difficulty_keep, run_warmup
from actors.driver.stalls import Stalls
from actors.driver.step_data import completion_sample, judge_matrix, rollout_stats, train_batch
from actors.driver.workloads import workload_for
from actors.errors import RoleFailure, root_cause
from actors.generation import Generation
from actors.reward.pool import RewardActor
from actors.worker.rollout_worker import RolloutWorker
from algo.ngrpo_switch import NGRPOSwitch
from algo.stats import accuracy_by, breakdown_means
from algo.step import StepResult, algo_step
from cluster.actor_group import PlacementTimeout
from cluster.backend import Backend, RayBackend
from cluster.runtime import redacted, role_env
from configs.root import Config
from contracts.identity import peak_rss
from contracts.types import ScoreResult
from learner.learner import Learner
from models.resolve import resolve_model
from models.tokenizers import load_tokenizer
from observe.ray_metrics import RayMetrics
from observe.run_log import RunLog
from observe.tracking import open_trackers
from tasks.base import load_task

log = logging.getLogger(__name__)
ROLES = {"rollout": RolloutWorker, "learner": Learner, "reward": RewardActor}


class Coordinator(RunState):
    def __init__(self, cfg: Config, run_dir: str, backend: Backend | None = None,
                 roles: dict[str, type] | None = None) -> None:
        self.cfg, self.backend = cfg, backend or RayBackend()
        self.classes = {**ROLES, **(roles or {})}
        self.task = load_task(cfg.task, cfg.reward.functions)
        self.work = workload_for(cfg, self.task)  # completions or agent episodes
        config = redacted(cfg.model_dump(mode="json"))
        self.run = RunLog(run_dir, trackers=open_trackers(cfg.tracking, run_dir, config))
        self.run.write_json("config.json", config)
        self.store = CheckpointStore(run_dir, cfg.train.keep_checkpoints)
        self.eval_keys = self.work.eval_keys  # the eval table's scalar rows
        self.switch = NGRPOSwitch.from_config(cfg.algorithm.ngrpo)
        self.version = self.step = 0
        self.restarts = 0  # replaced roles in this process (never rolled back)
        self.budget = RestartBudget(cfg.train.max_restarts, cfg.train.restart_window)
        self.skipped_in_a_row = 0  # updates skipped for a non-finite loss or gradient
        self.stalls = Stalls()  # steps in a row whose rewards all failed, or that updated nothing
        self.no_signal = NoSignal(cfg.train.no_signal_steps)  # first steps whose rewards never differ
        self.kept_rows: list[int] | None = None  # training rows the difficulty filter kept
        self.eval_tables: dict[str, dict] = {}
        self.info: dict[str, Any] = {"run_dir": str(Path(run_dir).resolve())}
        # Ray's metrics API (dashboard / Prometheus) exists only on the Ray backend.
        self.ray_metrics = RayMetrics(Path(run_dir).name) if self.backend.name == "ray" else None
        self.roles = Roles(cfg, self.backend, self.classes, role_env(cfg.cluster.env_vars),
                           f"{Path(run_dir).name}/", self.recovering)
        self.sampler = Sampler(cfg, self.work, self.roles)  # its tokenizer and prompt order: in setup
        self.pipeline = make_pipeline(cfg, self.sampler)
        self._before_step: dict | None = None  # the state before the latest step (a final checkpoint's)
        self._updates_before: int | None = None  # in a step: the learner's updates when it began

    @property
    def prompts(self) -> PromptOrder:
        """The order in which training rows are drawn (the sampler's)."""
        return self.sampler.prompts

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"Coordinator({self.run.dir.name})"

    # ---- set-up -----------------------------------------------------------------------------------
    def setup(self, resume: str | None = None) -> dict:
        """Data, base model, warm-up (not when resuming), the roles, then the checkpoint to continue
        from (`resume`) or the first checkpoint (step 0). Returns what was set up."""
        t0 = time.perf_counter()
        left = self.store.clean_leftovers()  # checkpoints a crash left half-written
        if left:
            self.run.event("checkpoint_leftovers_removed", paths=[p.name for p in left])
        self.train_rows, self.eval_rows = self.work.rows()
        paths = resolve_model(self.cfg.model, *self.work.tokenizer_text())
        self.base_model_dir, self.tokenizer_dir = str(paths.model_dir), str(paths.tokenizer_dir)
        self.tokenizer = self.sampler.tokenizer = load_tokenizer(self.tokenizer_dir)
        if self.cfg.train.warmup.enabled:
            warm = self.run.dir / "warmup_model"
            if resume and (warm / "config.json").exists():
                self.base_model_dir = str(warm)  # the run's own warm-up: part of what is resumed
            else:
                self.info.update(self._warmup())
        self.info.update(self.roles.start(self.base_model_dir, self.tokenizer_dir, self.work.judge))
        self.run.event("placement", **self.info["placement"])
        self.roles.set_probe(*self.work.probe(self.tokenizer, self.eval_rows or self.train_rows))
        self.sampler.prompts = PromptOrder(self.train_rows, self.cfg.train, self.cfg.train.seed,
                                           self.task.group_column)
        if resume:
            self._restore(Path(resume), "resume")
        else:
            if self.cfg.algorithm.difficulty.enabled:
                self.info.update(self._filter_by_difficulty())
            self.checkpoint()
        self.info.update(train_rows=len(self.train_rows), eval_rows=len(self.eval_rows), step=self.step,
                         eval_keys=list(self.eval_keys),
                         setup_seconds=time.perf_counter() - t0, base_model=self.base_model_dir,
                         evaluated=sorted(self.eval_tables))
        self.run.event("setup", **{k: v for k, v in self.info.items() if not isinstance(v, dict)})
        return self.info

    def _warmup(self) -> dict:
        out = str(self.run.dir / "warmup_model")
        targets, examples, drill = self.work.warmup_examples(self.tokenizer, self.train_rows)
        groups = [r[self.task.group_column] for r in targets]
        stats = run_warmup(self.cfg, self.backend, examples, groups, drill,
                           (self.base_model_dir, self.tokenizer_dir, out),
                           self.work.entity_swaps(self.tokenizer))
        self.base_model_dir = out
        self.run.event("warmup", **stats)
        return stats

    def _filter_by_difficulty(self) -> dict:
        """Sample every training row with the current policy; keep the easy/medium/hard mix."""
        keep = difficulty_keep(self.cfg, self.train_rows, self._judged)
        stats = {"difficulty_kept": len(keep), "difficulty_from": len(self.train_rows)}
        self._keep_rows(keep)
        self.run.event("difficulty_filter", **stats)
        return stats

    def _keep_rows(self, keep: list[int]) -> None:
        self.kept_rows = list(keep)
        self.train_rows = [self.train_rows[i] for i in keep]
        self.sampler.prompts = PromptOrder(self.train_rows, self.cfg.train, self.cfg.train.seed,
                                           self.task.group_column)

    # ---- one RL step ------------------------------------------------------------------------------
    def train_step(self) -> dict[str, Any] | None:
        """One step; returns the metrics row, or None when a role failed and the run went back to its
        newest checkpoint (the pipeline started again what the failure broke)."""
        try:
            try:
                return self._step()
            except RoleFailure as failure:
                with self.recovering(failure) as where:
                    where["moved"] = self.pipeline.recover(failure)
                    self._restore(self.store.latest(), "rollback")
                return None
            finally:
                self._updates_before = None
        except PlacementTimeout as e:  # a lost node's roles found no room in time
            raise self._stop(str(e)) from None

    def _step(self) -> dict[str, Any]:
        self._before_step, self._updates_before = self.state_dict(), self.roles.updates
        self.step, t0 = self.step + 1, time.perf_counter()
        batch = self.pipeline.next_batch(self.step, self.version)
        scored, reward_s = _timed(self._score, batch.rows, batch.gen)
        stats, out = self._batch_stats(batch, scored), self._algo(batch, scored)
        done = self.pipeline.deliver(self.step, train_batch(batch.gen, out, self.version)
                                     if out.valid_samples else None)  # none when every reward failed
        self._count_skips(done.learn)
        self.version = self.version if done.version is None else done.version
        times = {"generate": batch.seconds, "reward": reward_s, **done.times,
                 "step": time.perf_counter() - t0}
        row = {"step": self.step, "policy_version": self.version, **done.row,
               "reward_failures": scored.failures, **out.metrics, **stats, **(done.learn or {}),
               **memory_row(batch.gen), **{f"time/{k}": v for k, v in times.items()}}
        self._record(row)
        self._log_completions(batch, scored)
        self._watch(scored, out, done.learn, batch.gen)  # after the row: a stopped run's last row says why
        return row

    def _log_completions(self, batch: Batch, scored: ScoreResult) -> None:
        """Every `train.log_completions_every` steps a few of the step's completions, with their scores,
        to completions_train.jsonl and the trackers (TRL's log_completions)."""
        t = self.cfg.train
        if t.log_completions_every and self.step % t.log_completions_every == 0:
            self.run.completions(self.step, completion_sample(
                batch.rows, batch.gen, scored, t.log_completions, self.task.group_column))

    def _watch(self, scored: ScoreResult, out: StepResult, learn: dict | None, gen: Generation) -> None:
        """Say when the first steps' rewards never differ (stop, with `train.stop_if_no_signal`); stop a
        run that cannot learn: every reward failed, or nothing updated, too many steps in a row."""
        if warning := self.no_signal.observe(self.step, scored.breakdowns, [s.text for s in gen.samples],
                                             scored.failed):
            log.warning("step %d: %s", self.step, warning)
            self.run.event("no_signal", step=self.step, message=warning, **self.no_signal.fields())
            if self.cfg.train.stop_if_no_signal:
                raise self._stop(f"{warning} (train.stop_if_no_signal)")
        why = self.stalls.observe_step(scored, out.metrics.get("advantage_abs_mean", 1.0), learn,
                                       self.cfg.algorithm.loss.kl_coef)
        if why:
            self.run.event("no_update", step=self.step, reason=why)
        first = scored.failure_log[0] if scored.failure_log else ""
        t = self.cfg.train
        if problem := self.stalls.problem(t.max_failed_steps, t.max_idle_steps, first):
            raise self._stop(problem)

    def _judged(self, rows: list[dict], n: int) -> list[list[float]]:
        """The judge's verdict on each of n samples per row under the served policy."""
        scored = self._score(rows, self.sampler.sample(self.sampler.items(rows), n=n))
        return judge_matrix(scored, len(rows), self.work.correct_key)

    def _score(self, rows: list[dict], gen: Generation) -> ScoreResult:
        scored = self.work.score(self.roles.pool, rows, gen, self.step)
        for line in scored.failure_log:  # each failed completion keeps its one-line record
            self.run.event("reward_failure", step=self.step, detail=line)
        if scored.failure_log:  # and the log gets one line a step, however many failed
            log.warning("step %d: %d reward failure(s), first: %s (each one in events.jsonl)", self.step,
                        len(scored.failure_log), scored.failure_log[0][:300])
        return scored

    def _batch_stats(self, batch: Batch, scored: ScoreResult) -> dict[str, float]:
        rows, gen = batch.rows, batch.gen
        correct = judge_matrix(scored, len(rows), self.work.correct_key)
        stats = rollout_stats([r[self.task.group_column] for r in rows], gen, scored, correct, self.version)
        if self.prompts.accuracy is not None:  # adaptive sampling follows the accuracy per row kind
            by_value = accuracy_by([r[self.cfg.train.adaptive_by] for r in rows], correct)
            stats.update({f"sampling_weight/{k}": v for k, v in self.prompts.observe(by_value).items()})
        stats.update(breakdown_means(scored.breakdowns))
        stats.update(self.work.stats(gen.samples))
        return stats

    def _algo(self, batch: Batch, scored: ScoreResult) -> StepResult:
        """`algo_step` on the (G, n) reward matrix (failed rewards and stale samples not trained on); a
        switch of NGRPO is an event (and a Ray metric)."""
        gen, stale = batch.gen, batch.stale
        samples = gen.samples
        rewards = torch.tensor(scored.rewards, dtype=torch.float64).view(len(gen.groups), -1)  # (G, n)
        valid = None
        none = [False] * len(samples)
        left_out = [f or s for f, s in zip(scored.failed or none, stale or none)]
        if any(left_out):
            valid = torch.tensor([not f for f in left_out]).view_as(rewards)
        out = algo_step(rewards, step=self.step, switch=self.switch, algo=self.cfg.algorithm, valid=valid,
                        lengths=[[s.policy_tokens for s in g] for g in gen.groups], max_len=self.work.max_len,
                        texts=[s.text for s in samples], offsets=[s.offsets for s in samples],
                        masks=[s.loss_mask for s in samples])
        if out.event is not None:
            ev = out.event
            self.run.event("ngrpo_switch", step=ev.step, active=ev.active, window_value=ev.window_value)
            if self.ray_metrics:
                self.ray_metrics.switch_event(ev.active)
            log.info("step %d: NGRPO %s (window frac_reward_zero_std %.3f)", ev.step,
                     "ON" if ev.active else "OFF", ev.window_value)
        return out

    def _count_skips(self, learn: dict | None) -> None:
        """An update skipped for a non-finite loss or gradient leaves the workers on the last good policy
        (the pipeline pushed nothing); several in a row stop the run."""
        if learn is None:
            return
        if not learn["update_skipped"]:
            self.skipped_in_a_row = 0
            return
        self.skipped_in_a_row += 1
        self.run.event("update_skipped", step=self.step, in_a_row=self.skipped_in_a_row)
        if self.skipped_in_a_row >= self.cfg.train.max_skipped_updates:
            raise self._stop(f"{self.skipped_in_a_row} updates in a row had a non-finite loss or "
                             "gradient norm")

    def _record(self, row: dict[str, Any]) -> dict[str, Any]:
        try:
            self.run.metrics(row)
        except OSError as e:
            raise self._stop(f"could not write metrics.jsonl: {root_cause(e)}") from None
        if self.ray_metrics:
            self.ray_metrics.record(row)
        every = self.cfg.train.checkpoint_every
        if every and self.step % every == 0:
            self.checkpoint()
        return row

    # ---- evaluation & outputs ---------------------------------------------------------------------
    def evaluate(self, tag: str) -> dict:
        """The held-out eval table of the policy the workers serve now (kept in the checkpoints)."""
        self.pipeline.stop()  # a stream's requests must not share the engine with the eval's
        limit = self.cfg.train.eval_limit
        rows = self.eval_rows[:limit] if limit else self.eval_rows
        t = time.perf_counter()
        table = self._eval_table(tag, rows)
        table.update(policy_version=self.version, seconds=time.perf_counter() - t)
        self.eval_tables[tag] = table
        if self.ray_metrics:
            self.ray_metrics.record_eval(tag, table, self.eval_keys)
        self.run.eval(tag, table)  # TensorBoard
        self.run.event("eval", tag=tag, **{k: v for k, v in table.items() if k != "per_category"})
        self.run.write_json("eval.json", self.eval_tables)
        return table

    def _eval_table(self, tag: str, rows: list[dict]) -> dict:
        return self.work.eval_table(self.sampler.sample, self.tokenizer, rows,
                                    self.cfg.rollout.eval_temperature,
                                    tag, self.run.write_text)

    def finish(self) -> dict:
        """Final checkpoint and adapter, switch events and eval tables; returns a summary."""
        from observe.tables import format_eval_tables

        final = self.store.latest()
        if final is None or final.name != self.store.name(self.step):
            final = self.checkpoint()
        adapter = str(self.run.dir / "adapter")
        self.roles.learner_call("save_adapter", adapter)
        events = [e.__dict__ for e in self.switch.events]
        self.run.write_json("ngrpo_switch_events.json", events)
        self.run.write_text("eval_table.md", format_eval_tables(self.eval_tables, self.eval_keys) + "\n")
        return {"adapter": adapter, "checkpoint": str(final), "switch_events": events,
                "eval": self.eval_tables,
                "run_dir": str(self.run.dir), "eval_keys": list(self.eval_keys)}

    def shutdown(self) -> None:
        self.pipeline.stop()
        self.roles.shutdown()
        self.run.close()


def memory_row(gen: Generation) -> dict[str, float]:
    """Peak resident memory (GB) of the coordinator and of the workers that sampled `gen` (the learner's
    comes with its update's metrics): what the memory plan (models.memory) is checked against."""
    row = {"memory/coordinator": peak_rss() / 2**30}
    if gen.peak_rss:
        row["memory/rollout"] = gen.peak_rss / 2**30
    return row


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """`fn(*args)` and the seconds it took."""
    t = time.perf_counter()
    return fn(*args), time.perf_counter() - t

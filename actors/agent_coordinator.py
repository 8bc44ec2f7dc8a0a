"""The coordinator of a run of agent episodes (`env.enabled`): each sample is a whole episode.

One step: draw prompts (episode rows) → every rollout worker plays n episodes per row against the
task's environment (`RolloutWorker.play_episodes`: tools really run, token-in/token-out) → the
environment's trajectory score is the reward and its `success` the judge (no reward actors are
started: only the environment saw what happened) → `algo.step.algo_step` on the
(G, n) matrix (zero-std statistics, the NGRPO switch, advantages: per episode group as per completion
group) → the learner trains on the policy's own tokens (the loss mask leaves the observations out) →
push, record, checkpoint: all as in `actors.coordinator.Coordinator`, which this extends.

The set-up differs in three things: the rows are the task's episode rows, a tiny model's tokenizer
also learns the episodes' text, and the warm-up fine-tunes on the task's scripted trajectories played
against the environment (`Task.episode_script`). The eval plays the held-out episodes greedily
(`agent_loop.episode_eval`) and
keeps them in `episodes_<tag>.jsonl`.
"""

from __future__ import annotations

import json
import time
from typing import Any

import torch

from actors.agent_loop import EPISODE_EVAL_KEYS, EpisodeSample, episode_eval, episode_metrics
from actors.coordinator import Coordinator, timed
from actors.setup_steps import trajectory_examples
from algo.stats import batch_stats, breakdown_means
from algo.step import StepResult
from contracts.types import TrainBatch

# Score keys that count, not rate: metrics of their own (episode_metrics), not reward parts.
_COUNTS = ("turns", "tool_calls", "tool_errors")


class AgentCoordinator(Coordinator):
    """`Coordinator` whose samples are agent episodes (see the module docstring)."""

    reward_pool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eval_keys = EPISODE_EVAL_KEYS

    def _rows(self) -> tuple[list[dict], list[dict]]:
        return self.task.episode_rows()

    def _probe(self) -> tuple[list[int], list[int]]:
        """The first scripted turn of the first held-out episode: what every push is checked with."""
        (prompt, completion, _), = trajectory_examples(self.cfg, self.task, self.tokenizer,
                                                       (self.eval_rows or self.train_rows)[:1])
        return prompt, completion[:64]

    def _play(self, rows: list[dict], **sampling: Any) -> list[EpisodeSample]:
        e = self.cfg.env
        return self.roles.episodes(rows, task=self.cfg.task, max_turns=e.max_turns, max_context=e.max_context,
                                   **sampling)

    def _step(self) -> dict[str, Any]:
        times, t0 = {}, time.perf_counter()
        self._before_step, self._learned = self.state_dict(), False  # what a final checkpoint can hold
        self.step += 1
        rows, n = self.stream.next_rows(), self.cfg.rollout.n
        with timed(times, "generate"):
            samples = self._play([r for r in rows for _ in range(n)],
                                 seed=self.cfg.train.seed * 100_003 + self.step)
        groups = [samples[i * n : (i + 1) * n] for i in range(len(rows))]
        rewards = torch.tensor([[s.score["total"] for s in g] for g in groups], dtype=torch.float64)
        lengths = [[sum(s.loss_mask) for s in g] for g in groups]  # the policy's own tokens per episode
        stats = self._episode_stats(rows, groups, lengths)
        out = self._advantages(rewards, lengths=lengths,
                               max_len=self.cfg.env.max_turns * self.cfg.rollout.max_tokens)
        with timed(times, "learn"):
            learn = self.roles.learn(episode_batch(samples, out)) if out.valid_samples else None
            self._learned = True
        with timed(times, "sync"):
            sync = self._push(learn)
        times["step"] = time.perf_counter() - t0
        row = {"step": self.step, **sync, "reward_failures": 0, **out.metrics, **stats, **(learn or {}),
               **{f"time/{k}": v for k, v in times.items()}}
        return self._record(row)

    def _episode_stats(self, rows: list[dict], groups: list[list[EpisodeSample]],
                       lengths: list[list[int]]) -> dict[str, float]:
        """Success (as the judge's accuracy, overall and per category) and reward per category, policy
        tokens per episode, truncation, the reward parts and the episode metrics."""
        samples = [s for g in groups for s in g]
        stats = batch_stats(
            [r[self.task.group_column] for r in rows],
            correct=[[s.score["success"] for s in g] for g in groups],
            rewards=[[s.score["total"] for s in g] for g in groups], lengths=lengths,
            truncated=[[s.truncated for s in g] for g in groups], lags=[[0] * len(g) for g in groups])
        stats.update(breakdown_means([{k: v for k, v in s.score.items() if k not in _COUNTS}
                                      for s in samples]))
        stats.update(episode_metrics(samples))
        return stats

    def _eval_table(self, tag: str, rows: list[dict]) -> dict:
        """Greedy episodes of the held-out rows; every one kept in episodes_<tag>.jsonl."""
        samples = self._play(rows, temperature=self.cfg.rollout.eval_temperature, seed=0)
        lines = [json.dumps({"id": r.get("id"), "category": r.get(self.task.group_column),
                             "messages": s.messages,
                             "turns": s.turns, "truncated": s.truncated, "score": s.score},
                            ensure_ascii=False)
                 for r, s in zip(rows, samples, strict=True)]
        self.run.write_text(f"episodes_{tag}.jsonl", "\n".join(lines) + "\n")
        return episode_eval(rows, samples, self.task.group_column)


def episode_batch(samples: list[EpisodeSample], out: StepResult) -> TrainBatch:
    """The episodes the update learns from (dropped groups left out), with their loss masks and the
    engine's logprobs of the policy's tokens."""
    keep = out.trained.flatten().tolist()
    idx = [i for i, k in enumerate(keep) if k]
    return TrainBatch(
        prompt_ids=[samples[i].prompt_ids for i in idx],
        completion_ids=[samples[i].completion_ids for i in idx],
        rollout_logprobs=[samples[i].logprobs for i in idx],
        advantages=[float(a) for a, k in zip(out.advantages.flatten(), keep) if k],
        lags=[0] * len(idx), loss_mask=[samples[i].loss_mask for i in idx],
    )

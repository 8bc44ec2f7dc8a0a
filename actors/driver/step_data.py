"""The data of one step between the roles: the judge's verdicts, the batch statistics, the training batch.

Plain functions over a `Generation` (what the workers sampled), a `ScoreResult` (what the reward pool
said) and a `StepResult` (what the algorithm made of it); the coordinator calls them in its loop.
"""

from __future__ import annotations

from dataclasses import asdict

from actors.generation import Generation
from algo.stats import batch_stats
from algo.step import StepResult
from contracts.types import Sample, ScoreResult, TrainBatch


def judge_matrix(scored: ScoreResult, num_groups: int, key: str) -> list[list[float]]:
    """(G, n) the task judge's verdict per sample, from the breakdown the pool computed once."""
    n = len(scored.breakdowns) // max(1, num_groups)
    flat = [float(b.get(key, 0.0)) for b in scored.breakdowns]
    return [flat[i : i + n] for i in range(0, len(flat), n)]


def rollout_stats(values: list[str], gen: Generation, scored: ScoreResult, correct: list[list[float]],
                  version: int) -> dict[str, float]:
    """Accuracy and reward per group value, the policy's tokens per sample (an episode's observations
    left out), truncation and version lag of a step's samples."""
    n = len(gen.groups[0]) if gen.groups else 1
    return batch_stats(
        values, correct=correct,
        rewards=[scored.rewards[i : i + n] for i in range(0, len(scored.rewards), n)],
        lengths=[[s.policy_tokens for s in g] for g in gen.groups],
        truncated=[[s.truncated for s in g] for g in gen.groups],
        lags=[[version - s.policy_version for s in g] for g in gen.groups],
    )


def train_batch(gen: Generation, out: StepResult, version: int) -> TrainBatch:
    """The samples the update learns from, flattened group by group (failed rewards and dropped groups
    are left out); every sample carries its prompt, its loss mask (an episode's) and its lag behind the
    learner's `version`."""
    keep = out.trained.flatten().tolist()
    samples = gen.samples
    idx = [i for i, k in enumerate(keep) if k]
    weights = out.token_weights
    masked = any(samples[i].loss_mask is not None for i in idx)
    return TrainBatch(
        prompt_ids=[samples[i].prompt_ids for i in idx], completion_ids=[samples[i].token_ids for i in idx],
        rollout_logprobs=[samples[i].logprobs for i in idx],
        advantages=[float(a) for a, k in zip(out.advantages.flatten(), keep) if k],
        token_weights=[weights[i] for i in idx] if weights is not None else None,
        lags=[version - samples[i].policy_version for i in idx],
        loss_mask=[_mask(samples[i]) for i in idx] if masked else None,
    )


def _mask(sample: Sample) -> list[int]:
    return sample.loss_mask if sample.loss_mask is not None else [1] * len(sample.token_ids)


def generation_state(rows: list[dict], gen: Generation) -> dict:
    """A generated batch and its rows, JSON-safe (a checkpoint of the one-step-off pipeline holds it)."""
    return {"rows": rows, "versions": gen.versions, "groups": [[asdict(s) for s in g] for g in gen.groups]}


def generation_from_state(state: dict) -> tuple[list[dict], Generation]:
    groups = [[Sample.from_dict(s) for s in g] for g in state["groups"]]
    return state["rows"], Generation(groups, state["versions"])

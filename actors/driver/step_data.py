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


def completion_sample(rows: list[dict], gen: Generation, scored: ScoreResult, k: int,
                      group_column: str) -> list[dict]:
    """The first completion of each of the first `k` groups of a step, with its reward and breakdown:
    the small sample of what the model says that a run logs every few steps."""
    out, start = [], 0
    for row, group in zip(rows, gen.groups):
        if len(out) >= k:
            break
        if group:
            s = group[0]
            out.append({"group": str(row.get(group_column, "all")), "prompt": row.get("prompt"),
                        "completion": s.text, "reward": scored.rewards[start],
                        "scores": dict(scored.breakdowns[start]), "truncated": s.truncated})
        start += len(group)
    return out


def train_batch(gen: Generation, out: StepResult, version: int) -> TrainBatch:
    """The samples the update learns from, flattened group by group (failed rewards and dropped groups
    are left out); every sample carries its prompt, its loss mask (an episode's) and its lag behind the
    learner's `version`. A harness session cut in pieces (`Sample.parts`) gives one sequence per piece,
    each with the session's advantage."""
    keep = out.trained.flatten().tolist()
    advantages = out.advantages.flatten().tolist()
    weights = out.token_weights
    rows: list[tuple[Sample, float, list[float] | None]] = []
    for i, (s, k) in enumerate(zip(gen.samples, keep)):
        if not k:
            continue
        if weights is not None and s.parts:
            raise ValueError("DART token weights of a session cut in pieces are not defined")
        rows += [(piece, float(advantages[i]), weights[i] if weights is not None else None)
                 for piece in s.pieces()]
    masked = any(piece.loss_mask is not None for piece, _, _ in rows)
    return TrainBatch(
        prompt_ids=[p.prompt_ids for p, _, _ in rows], completion_ids=[p.token_ids for p, _, _ in rows],
        rollout_logprobs=[p.logprobs for p, _, _ in rows],
        advantages=[a for _, a, _ in rows],
        token_weights=[w for _, _, w in rows] if weights is not None else None,
        lags=[version - p.policy_version for p, _, _ in rows],
        loss_mask=[_mask(p) for p, _, _ in rows] if masked else None,
    )


def _mask(sample: Sample) -> list[int]:
    return sample.loss_mask if sample.loss_mask is not None else [1] * len(sample.token_ids)


def generation_state(rows: list[dict], gen: Generation) -> dict:
    """A generated batch and its rows, JSON-safe (a checkpoint of the one-step-off pipeline holds it)."""
    return {"rows": rows, "versions": gen.versions, "groups": [[asdict(s) for s in g] for g in gen.groups]}


def generation_from_state(state: dict) -> tuple[list[dict], Generation]:
    groups = [[Sample.from_dict(s) for s in g] for g in state["groups"]]
    return state["rows"], Generation(groups, state["versions"])

"""What a batch of scored completions looks like, per step: accuracy (overall and per group value),
reward per group value, lengths, truncation, version lag, reward parts. Pure functions over lists.

Inputs are group-shaped: ``(G, n)`` nested lists, one row per prompt, and ``values[g]`` the prompt's
category (or another row column). The "correct" signal comes from the task's judge, computed once by
the reward pool; nothing here parses completions.

>>> batch_stats(["a", "b"], correct=[[1.0, 0.0], [1.0, 1.0]], rewards=[[1.0, 0.0], [0.5, 0.5]],
...             lengths=[[3, 5], [4, 4]], truncated=[[False, True], [False, False]],
...             lags=[[0, 0], [0, 0]])["accuracy"]
0.75
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean


def accuracy_by(values: Sequence[str], correct: Sequence[Sequence[float]]) -> dict[str, float]:
    """Mean correctness per value, over all completions of the prompts that have it.

    >>> accuracy_by(["a", "b", "a"], [[1.0, 1.0], [0.0, 0.0], [0.0, 1.0]])
    {'a': 0.75, 'b': 0.0}
    """
    hits: dict[str, list[float]] = defaultdict(list)
    for value, row in zip(values, correct):
        hits[value] += list(row)
    return {k: fmean(v) for k, v in hits.items()}


def batch_stats(
    values: Sequence[str],
    *,
    correct: Sequence[Sequence[float]],
    rewards: Sequence[Sequence[float]],
    lengths: Sequence[Sequence[int]],
    truncated: Sequence[Sequence[bool]],
    lags: Sequence[Sequence[int]],
) -> dict[str, float]:
    """accuracy: the judge's (overall and `/value`), reward per value, completion_length, frac_truncated,
    policy_version_lag_max."""
    flat = lambda rows: [x for row in rows for x in row]  # noqa: E731 - group order, then sample order
    ok, lens, cut, lag = flat(correct), flat(lengths), flat(truncated), flat(lags)
    by_reward: dict[str, list[float]] = defaultdict(list)
    for value, row in zip(values, rewards):
        by_reward[value] += [float(r) for r in row]
    m = {
        "accuracy": fmean(ok) if ok else math.nan,
        "completion_length": fmean(lens) if lens else 0.0,
        "frac_truncated": fmean(float(c) for c in cut) if cut else 0.0,
        "policy_version_lag_max": float(max(lag)) if lag else 0.0,
        "policy_version_lag_mean": fmean(lag) if lag else 0.0,
    }
    for value, vals in sorted(by_reward.items()):
        m[f"reward/{value}"] = fmean(vals)
    for value, acc in sorted(accuracy_by(values, correct).items()):
        m[f"accuracy/{value}"] = acc
    return m


def breakdown_means(breakdowns: Sequence[dict[str, float]]) -> dict[str, float]:
    """Mean of each reward part over the samples that have it, as `reward_part/<name>`: tool choice and
    reasoning quality are tracked separately."""
    sums: dict[str, list[float]] = defaultdict(list)
    for b in breakdowns:
        for k, v in b.items():
            sums[k].append(float(v))
    return {f"reward_part/{k}": fmean(v) for k, v in sorted(sums.items()) if v}

"""The eval table of a task judged by its reward functions: each configured reward run in this process on
the held-out answers (TRL's contract, as the reward pool calls it), the judge's mean as `accuracy`.

A task without an eval of its own (a plain dataset, reasoning-gym) gets this table: `accuracy` (the
judge's mean score: a judge returns 1.0 for a right answer, 0.0 for a wrong one, partial credit in
between), `reward_mean` (the weighted sum the run trains on), each reward's mean, and the accuracy per
group. A reward that raises on an answer scores it 0 and is counted in `reward_failures`.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from rewards.contract import call_reward, reward_kwargs
from rewards.registry import get_reward

log = logging.getLogger(__name__)


def reward_values(name: str, prompts: list, texts: Sequence[str], ids: Sequence[list[int]] | None,
                  columns: dict[str, list]) -> tuple[list[float | None], int]:
    """One reward's values on every answer (None: not applicable) and how many answers it failed on: a
    call that raises is retried answer by answer; an answer whose retry raises scores 0."""
    fn, n = get_reward(name), len(texts)
    call = getattr(fn, "breakdown", None)

    def values(idx: list[int]) -> list[float | None]:
        kw = reward_kwargs([prompts[i] for i in idx], [texts[i] for i in idx],
                           [ids[i] for i in idx] if ids is not None else None,
                           {k: [v[i] for i in idx] for k, v in columns.items()})
        if callable(call):
            return [float(p["total"]) for p in call(**kw)]
        return call_reward(fn, kw, len(idx))

    try:
        return values(list(range(n))), 0
    except Exception as e:  # noqa: BLE001 - user code: find the answers it fails on
        log.debug("eval: reward %s failed on the whole set (%s); scored answer by answer", name, e)
    out: list[float | None] = []
    failed = 0
    for i in range(n):
        try:
            out += values([i])
        except Exception as e:  # noqa: BLE001
            failed += 1
            out.append(0.0)
            log.warning("eval: reward %s raised %s on answer %d: %s", name, type(e).__name__, i, e)
    return out, failed


def judged_table(rows: Sequence[dict], texts: Sequence[str], ids: Sequence[list[int]] | None,
                 rewards: Sequence[tuple[str, float]], judge: str, group_of: Any,
                 columns: dict[str, list], answers: list[dict] | None = None) -> dict:
    """The eval table (rates in [0, 1]) of `texts` answering `rows`. `group_of(row)` is a row's group.
    With `answers`, one record per answer is appended to it: each reward's score (None: not applicable),
    the weighted total and the judge's verdict."""
    prompts = [r["prompt"] for r in rows]
    names = list(dict.fromkeys([*(n for n, _ in rewards), judge]))
    scores: dict[str, list[float | None]] = {}
    failures = 0
    for name in names:
        scores[name], failed = reward_values(name, prompts, texts, ids, columns)
        failures += failed
    weights = dict(rewards)
    total = [sum(weights[n] * (scores[n][i] or 0.0) for n in weights) for i in range(len(texts))]
    right = [0.0 if v is None else v for v in scores[judge]]
    by_group: dict[str, list[float]] = defaultdict(list)
    for row, ok in zip(rows, right):
        by_group[group_of(row)].append(ok)
    if answers is not None:
        answers += [{"scores": {n: scores[n][i] for n in names}, "total": total[i], "verdict": right[i]}
                    for i in range(len(texts))]
    table: dict[str, Any] = {
        "accuracy": fmean(right) if right else 0.0,
        "reward_mean": fmean(total) if total else 0.0,
        **{f"reward/{n}": _mean(scores[n]) for n in names},
        "reward_failures": failures,
        "per_category": {k: fmean(v) for k, v in sorted(by_group.items())},
        "n": len(rows),
    }
    return table


def _mean(values: list[float | None]) -> float:
    kept = [v for v in values if v is not None]
    return fmean(kept) if kept else 0.0

"""Metrics rows → plottable series: one key over the steps, smoothing, NGRPO-on spans, summaries.

Pure functions over the rows of metrics.jsonl (dicts with a "step"); a key may be missing from some
rows or be None ("not measured"), so every function skips those instead of inventing zeros.
"""

from __future__ import annotations

import math
from typing import Any


def numeric(v: Any) -> float | None:
    """A metric value as a float (bools as 0/1); None for text, None and non-finite numbers.

    >>> numeric(True), numeric(3), numeric("4acd"), numeric(None), numeric(float("nan"))
    (1.0, 3.0, None, None, None)
    """
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float) and math.isfinite(v):
        return float(v)
    return None


def series(rows: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of `key`, only where it was measured.

    >>> series([{"step": 1, "a": 0.5}, {"step": 2}, {"step": 3, "a": True}], "a")
    ([1, 3], [0.5, 1.0])
    """
    steps, values = [], []
    for i, r in enumerate(rows, 1):
        v = numeric(r.get(key))
        if v is not None:
            steps.append(int(r.get("step", i)))
            values.append(v)
    return steps, values


def moving_mean(values: list[float], k: int) -> list[float]:
    """Trailing mean over the last `k` values (fewer at the start), as the NGRPO switch's window is.

    >>> moving_mean([0, 1, 2, 3], 2)
    [0.0, 0.5, 1.5, 2.5]
    """
    k = max(1, int(k))
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= k:
            total -= values[i - k]
        out.append(total / min(i + 1, k))
    return out


def active_spans(rows: list[dict[str, Any]], key: str = "ngrpo_active") -> list[tuple[int, int]]:
    """Inclusive (first, last) step ranges where `key` is true.

    >>> active_spans([{"step": s, "ngrpo_active": s in (2, 3, 5)} for s in range(1, 7)])
    [(2, 3), (5, 5)]
    """
    spans: list[tuple[int, int]] = []
    for step, v in zip(*series(rows, key)):
        if not v:
            continue
        if spans and spans[-1][1] == step - 1:
            spans[-1] = (spans[-1][0], step)
        else:
            spans.append((step, step))
    return spans


def keys_with_prefix(rows: list[dict[str, Any]], prefix: str) -> list[str]:
    """Sorted keys starting with `prefix` that have a number somewhere, e.g. "time/" → time/generate …"""
    return sorted({k for r in rows for k, v in r.items() if k.startswith(prefix) and numeric(v) is not None})


def summary(rows: list[dict[str, Any]], key: str, last: int = 10) -> dict[str, float] | None:
    """first, mean, mean of the last `last` measured steps, and final value of `key`; None if never
    measured."""
    _, v = series(rows, key)
    if not v:
        return None
    tail = v[-last:]
    return {"first": v[0], "mean": sum(v) / len(v), "last_mean": sum(tail) / len(tail), "final": v[-1]}

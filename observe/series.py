"""Metrics rows → plottable series: one key over the steps, smoothing, NGRPO-on spans, summaries.

Pure functions over the rows of metrics.jsonl (dicts with a "step"); a key may be missing from some
rows or be None ("not measured"), so every function skips those instead of inventing zeros.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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


# The coordinator's phases, in the order a step runs them; time/* keys it does not know come after.
PHASES = ("generate", "reward", "learn", "sync")
# time/* keys that are not a part of the step's wall time: a streamed pipeline's workers waiting for
# weights (summed over the workers, beside the step, not inside it).
NOT_PHASES = ("time/step", "time/weight_wait")
# Phases timed inside one step add up to at most its wall time; 1 ms of slack for clock reads between them.
_SLACK_S = 1e-3


@dataclass(frozen=True)
class StepTime:
    """One row's seconds, each counted once.

    `wall` is time/step, the step's wall time: the total, not a phase. `phases` are the parts of it that
    ran one after the other (name → s). `ahead` is a generation that ran during the previous step (the
    one-step-off pipeline), so it is not part of `wall`; 0 when the step generated its own batch.
    """

    step: int
    wall: float
    phases: dict[str, float] = field(default_factory=dict)
    ahead: float = 0.0

    @property
    def other(self) -> float:
        """Wall time no phase measured: advantages and bookkeeping, one-step-off also the wait for the
        next batch after learn."""
        return max(0.0, self.wall - sum(self.phases.values()))


def step_times(rows: list[dict[str, Any]]) -> list[StepTime]:
    """Each row's time/* keys split into wall time, sequential phases and generation run ahead.

    With train.pipeline one_step_off a step's batch is launched just before the previous step's learn and
    collected after it, and its time/generate (launch → collection) is recorded on the step that trains
    on it; the rows say nothing else about the mode. So the data decides: a step's phases, all timed
    inside it, cannot add up to more than its wall time unless its generation ran elsewhere; then that
    generation is `ahead`. A row without time/step (older runs) has the sum of its phases as wall time.

    >>> [(t.wall, t.phases, t.ahead) for t in step_times([
    ...     {"step": 1, "time/generate": 1.0, "time/learn": 2.0, "time/step": 3.5},
    ...     {"step": 2, "time/generate": 2.0, "time/learn": 2.0, "time/step": 2.5}])]
    [(3.5, {'generate': 1.0, 'learn': 2.0}, 0.0), (2.5, {'learn': 2.0}, 2.0)]
    """
    known = [f"time/{p}" for p in PHASES]
    keys = [k for k in known if any(k in r for r in rows)]
    keys += [k for k in keys_with_prefix(rows, "time/") if k not in known and k not in NOT_PHASES]
    out = []
    for i, r in enumerate(rows, 1):
        phases = {k.split("/", 1)[1]: v for k in keys if (v := numeric(r.get(k))) is not None}
        wall = numeric(r.get("time/step"))
        if wall is None and not phases:
            continue  # nothing timed (a row cut short)
        ahead = 0.0
        if wall is None:
            wall = sum(phases.values())
        elif "generate" in phases and sum(phases.values()) > wall + _SLACK_S:
            ahead = phases.pop("generate")
        out.append(StepTime(int(r.get("step", i)), wall, phases, ahead))
    return out


def hidden_generation(times: list[StepTime]) -> tuple[float, float]:
    """(seconds of generation run ahead that the previous step's learn covered, seconds the loop waited
    for it after that learn). time/generate of a batch run ahead spans its launch, just before the
    previous step's learn, to its collection just after it: the part beyond that learn is the wait (in
    the previous step's `other`). Without the previous row (a resumed run) it all counts as hidden.

    >>> hidden_generation([StepTime(1, 4.0, {"learn": 2.0}), StepTime(2, 2.5, {"learn": 2.0}, ahead=2.5)])
    (2.0, 0.5)
    """
    learn = {t.step: t.phases.get("learn") for t in times}
    hidden = waited = 0.0
    for t in times:
        if not t.ahead:
            continue
        before = learn.get(t.step - 1)
        covered = t.ahead if before is None else min(t.ahead, before)
        hidden += covered
        waited += t.ahead - covered
    return hidden, waited

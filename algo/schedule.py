"""Learning-rate schedules: the factor of the configured lr at each optimizer step (pure).

A constant lr keeps moving a small policy as much at the last step as at the first: on the tiny
model the greedy eval then depends on where in its swing the last step lands (README, the demo
result). A decay lets the end of the run settle.

>>> [round(lr_factor(s, 4, "linear"), 2) for s in range(4)]
[1.0, 0.75, 0.5, 0.25]
>>> [round(lr_factor(s, 4, "linear", final_ratio=0.2), 2) for s in range(4)]
[1.0, 0.8, 0.6, 0.4]
>>> [round(lr_factor(s, 5, "cosine", warmup=2), 2) for s in range(5)]
[0.5, 1.0, 1.0, 0.75, 0.25]
>>> lr_factor(7, 4, "constant")
1.0
"""

from __future__ import annotations

import math
from typing import Literal

Schedule = Literal["constant", "linear", "cosine"]


def lr_factor(step: int, total: int, schedule: Schedule, warmup: int = 0, final_ratio: float = 0.0) -> float:
    """Factor for optimizer step `step` (0-based) of `total`.

    Warm-up: linear from 1/warmup to 1 over the first `warmup` steps. Then `constant` stays at 1;
    `linear` and `cosine` fall from 1 towards `final_ratio`, which they would reach at step `total`
    (one past the last), so the last step still moves. Steps past `total` keep the final factor.
    """
    if step < warmup:
        return (step + 1) / warmup
    if schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if schedule == "linear":
        shape = 1.0 - progress
    elif schedule == "cosine":
        shape = 0.5 * (1.0 + math.cos(math.pi * progress))
    else:
        raise ValueError(f"unknown lr schedule {schedule!r}")
    return final_ratio + (1.0 - final_ratio) * shape

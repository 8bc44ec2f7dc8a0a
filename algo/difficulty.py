"""Model-aware difficulty filtering (docs/algorithm.md#difficulty-filtering).

Owns: given each prompt's pass rate over n samples from the current policy, dropping the prompts that
carry no learning signal (all right or all wrong) and drawing an easy / medium / hard mix (30/50/20 by
default, the field report's "pyramid"). Does not sample or score; the caller measures the pass rates.

Example:
    >>> rates = [1.0, 0.0, 0.9, 0.8, 0.5, 0.5, 0.4, 0.6, 0.1, 0.2]
    >>> difficulty_filter(rates, size=5, seed=0)  # quotas: 2 easy (≥0.7), 2 medium, 1 hard (≤0.3)
    [2, 3, 4, 5, 9]
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

BUCKETS = ("easy", "medium", "hard")
_EXACT = 1e-9  # a pass rate within this of 0 or 1 counts as all wrong / all right


def difficulty_buckets(
    pass_rates: Sequence[float], *, easy_min: float = 0.7, hard_max: float = 0.3
) -> dict[str, list[int]]:
    """Indices per bucket, all-right (rate 1) and all-wrong (rate 0) prompts left out.

    easy: ``rate >= easy_min``; hard: ``rate <= hard_max``; medium: in between. Also returns the dropped
    indices under ``"all_right"`` and ``"all_wrong"``.
    """
    if not 0.0 <= hard_max < easy_min <= 1.0:
        raise ValueError(f"need 0 <= hard_max < easy_min <= 1, got hard_max={hard_max}, easy_min={easy_min}")
    out: dict[str, list[int]] = {"easy": [], "medium": [], "hard": [], "all_right": [], "all_wrong": []}
    for i, rate in enumerate(pass_rates):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"pass rate {i} must be in [0, 1], got {rate}")
        if rate >= 1.0 - _EXACT:
            out["all_right"].append(i)
        elif rate <= _EXACT:
            out["all_wrong"].append(i)
        elif rate >= easy_min:
            out["easy"].append(i)
        elif rate <= hard_max:
            out["hard"].append(i)
        else:
            out["medium"].append(i)
    return out


def _round_to_total(shares: Sequence[float], total: int) -> list[int]:
    """Integers proportional to ``shares`` summing to ``total`` (largest remainder; ties by position)."""
    s = sum(shares)
    if total <= 0 or s <= 0:
        return [0] * len(shares)
    exact = [total * x / s for x in shares]
    counts = [math.floor(e + 1e-9) for e in exact]
    order = sorted(range(len(shares)), key=lambda k: (-(exact[k] - counts[k]), k))
    for k in order[: total - sum(counts)]:
        counts[k] += 1
    return counts


def _quotas(capacity: Sequence[int], mix: Sequence[float], total: int) -> list[int]:
    """Per-bucket counts summing to ``min(total, sum(capacity))``, as close to ``mix`` as capacity allows.

    A bucket whose share exceeds its capacity gives all it has; the shortfall is shared among the other
    buckets in proportion to their mix, repeated until nothing overflows (nothing is ever drawn twice).
    A bucket with mix 0 is used only as a last resort.
    """
    total = min(total, sum(capacity))
    quota = [0] * len(capacity)
    open_ = [k for k in range(len(capacity)) if capacity[k] > 0]
    remaining = total
    while remaining > 0 and open_:
        shares = [mix[k] for k in open_]
        if sum(shares) <= 0:  # only zero-mix buckets are left: fill evenly
            shares = [1.0] * len(open_)
        want = _round_to_total(shares, remaining)
        full = [k for k, w in zip(open_, want) if w >= capacity[k] - quota[k]]
        if not full:
            for k, w in zip(open_, want):
                quota[k] += w
            break
        for k in full:
            remaining -= capacity[k] - quota[k]
            quota[k] = capacity[k]
        open_ = [k for k in open_ if k not in full]
    return quota


def difficulty_filter(
    pass_rates: Sequence[float],
    *,
    easy_min: float = 0.7,
    hard_max: float = 0.3,
    mix: tuple[float, float, float] = (0.3, 0.5, 0.2),
    size: int | None = None,
    seed: int = 0,
) -> list[int]:
    """Indices of the prompts to train on, ascending.

    All-right and all-wrong prompts are dropped (no learning signal). The rest are bucketed (see
    `difficulty_buckets`) and sampled without replacement to the easy/medium/hard ``mix``.

    ``size``: how many to keep; capped at the number of eligible prompts. When a bucket is short, it
    gives all it has and the shortfall is filled from the other buckets in proportion to their share,
    never duplicating a prompt, so the result has exactly ``min(size, eligible)`` indices.
    ``size=None``: the largest subset that meets the mix exactly, where the shares of empty buckets are
    spread over the others (e.g. no hard prompts: easy/medium at 3:5).

    Deterministic for a given ``seed``.

    Args:
        pass_rates: ``(P,)`` fraction of each prompt's n samples judged correct, in [0, 1].
        easy_min: a rate at or above this is easy.
        hard_max: a rate at or below this is hard.
        mix: (easy, medium, hard) shares, non-negative, summing to 1.
        size: the number of prompts wanted, or None (see above).
        seed: seeds the draw within each bucket.
    """
    if len(mix) != 3 or any(m < 0 for m in mix) or abs(sum(mix) - 1.0) > 1e-6:
        raise ValueError(f"mix must be three non-negative shares summing to 1, got {mix}")
    if size is not None and size < 0:
        raise ValueError(f"size must be >= 0 or None, got {size}")
    buckets = difficulty_buckets(pass_rates, easy_min=easy_min, hard_max=hard_max)
    members = [buckets[b] for b in BUCKETS]
    capacity = [len(m) for m in members]

    if size is None:
        # The largest total whose (renormalised) exact shares every non-empty bucket can supply.
        live = [k for k in range(3) if capacity[k] > 0 and mix[k] > 0]
        share = sum(mix[k] for k in live)
        size = min((math.floor(capacity[k] * share / mix[k] + 1e-9) for k in live), default=0)

    quota = _quotas(capacity, mix, size)
    rng = random.Random(seed)
    kept: list[int] = []
    for idx, q in zip(members, quota):
        kept.extend(rng.sample(idx, q))
    return sorted(kept)

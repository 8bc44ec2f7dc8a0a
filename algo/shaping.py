"""Reward shaping: terms added to a completion's reward before advantages are taken (pure).

Owns the overlong penalty (a length ramp that teaches the policy to finish before the limit). Does not
know where rewards or lengths come from. The idea is DAPO's "overlong reward shaping"; see
docs/algorithm.md#overlong-shaping.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def overlong_penalty(
    lengths: torch.Tensor | Sequence[int], max_len: int, buffer: int
) -> torch.Tensor:
    """Overlong reward shaping: a penalty in [-1, 0] to ADD to each completion's reward.

    ``0`` while ``length <= max_len - buffer``; then linear, ``(max_len - buffer - length) / buffer``,
    reaching -1 at ``max_len``; ``-1`` beyond. A smooth ramp instead of a hard cut, so the model learns to
    finish before the limit. ``buffer=0`` degenerates to a step: 0 up to ``max_len``, -1 beyond.
    A completion truncated by the sampler has ``length == max_len`` and so gets -1.

    Args:
        lengths: ``(N,)`` completion lengths in tokens.
        max_len: the maximum completion length.
        buffer: the width of the ramp in tokens, ``0 <= buffer <= max_len``.

    Returns:
        ``(N,)`` float32 penalties.

    Example:
        >>> overlong_penalty([100, 310, 350, 400], max_len=350, buffer=50)
        tensor([ 0.0000, -0.2000, -1.0000, -1.0000])
    """
    if max_len <= 0:
        raise ValueError(f"max_len must be > 0, got {max_len}")
    if not 0 <= buffer <= max_len:
        raise ValueError(f"buffer must be in [0, max_len={max_len}], got {buffer}")
    length = torch.as_tensor(lengths, dtype=torch.float64)  # (N,)
    start = float(max_len - buffer)
    if buffer == 0:
        pen = torch.where(length > max_len, -1.0, 0.0).to(torch.float64)
    else:
        pen = ((start - length) / buffer).clamp(min=-1.0, max=0.0)
    return pen.to(torch.float32)

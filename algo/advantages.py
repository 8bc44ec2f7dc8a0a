"""Group-relative advantages (GRPO, NGRPO, Dr.GRPO) and zero-std statistics.

Owns: turning a (groups, group_size) reward matrix into per-sample advantages, and measuring how many
groups carry no learning signal (``frac_reward_zero_std``), which drives the dynamic NGRPO switch.
Does not know about tokens, models or how rewards were produced.

Example:
    >>> import torch
    >>> r = torch.full((1, 8), 0.8)
    >>> group_advantages(r, ngrpo=True).round(decimals=2)      # the field report's worked example
    tensor([[-0.3500, -0.3500, -0.3500, -0.3500, -0.3500, -0.3500, -0.3500, -0.3500]])
"""

from __future__ import annotations

from typing import Literal

import torch

StdKind = Literal["population", "unbiased", "none"]

# Two rewards closer than this count as equal. Shared by `group_advantages` (a zero-spread group gets an
# advantage of exactly 0) and `zero_std_stats` (it counts as a zero-std group), so both always agree.
ZERO_STD_TOL = 1e-6


def group_advantages(
    rewards: torch.Tensor,
    ngrpo: bool = False,
    max_reward: float = 1.0,
    num_virtual: int = 1,
    std: StdKind = "population",
    eps: float = 1e-6,
) -> torch.Tensor:
    """Per-sample advantages normalised within each prompt's group.

    ``A_i = (r_i - mean) / (std + eps)``, the mean and std taken over the group (GRPO). With
    ``std="none"`` the division is skipped (Dr.GRPO: ``A_i = r_i - mean``).

    With ``ngrpo=True``, ``num_virtual`` virtual samples of reward ``max_reward`` join each group before
    the mean and std are taken; advantages are returned for the real samples only. A group of identical
    rewards below ``max_reward`` then gets negative advantages instead of zero (NGRPO), while a group
    already all at ``max_reward`` stays at zero.

    A group whose spread (including virtual samples) is within ``ZERO_STD_TOL`` gets exactly 0, never NaN
    or inf: without this guard float rounding of the mean divided by ``eps`` would produce noise.

    Args:
        rewards: ``(G, n)`` float tensor, one row per prompt group.
        ngrpo: append virtual max-reward samples before normalising.
        max_reward: the virtual samples' reward.
        num_virtual: how many virtual samples per group (>= 1 when ``ngrpo``).
        std: "population" (divide by n), "unbiased" (divide by n - 1) or "none" (no division).
        eps: added to the std before dividing.

    Returns:
        ``(G, n)`` advantages, same dtype and device as ``rewards``.
    """
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be 2-D (groups, group_size), got shape {tuple(rewards.shape)}")
    if std not in ("population", "unbiased", "none"):
        raise ValueError(f"std must be 'population', 'unbiased' or 'none', got {std!r}")
    if ngrpo and num_virtual < 1:
        raise ValueError(f"num_virtual must be >= 1 when ngrpo is on, got {num_virtual}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0, got {eps}")

    if rewards.shape[1] == 0:
        return rewards.detach().clone()

    # float64 so the field report's and the paper's worked examples come out exact to many decimals.
    r = rewards.detach().to(torch.float64)  # (G, n)
    if ngrpo:
        virtual = torch.full((r.shape[0], num_virtual), float(max_reward), dtype=r.dtype, device=r.device)
        aug = torch.cat([r, virtual], dim=1)  # (G, n + k)
    else:
        aug = r

    mean = aug.mean(dim=1, keepdim=True)  # (G, 1)
    centred = r - mean  # (G, n): real samples only
    if std == "none":
        adv = centred
    else:
        m = aug.shape[1]
        # Hand-rolled so a group of one with the unbiased estimator gives 0 (masked below), not NaN.
        denom = m - 1 if std == "unbiased" else m
        var = ((aug - mean) ** 2).sum(dim=1, keepdim=True) / max(denom, 1)  # (G, 1)
        adv = centred / (var.sqrt() + eps)

    spread = aug.max(dim=1, keepdim=True).values - aug.min(dim=1, keepdim=True).values  # (G, 1)
    adv = torch.where(spread <= ZERO_STD_TOL, torch.zeros_like(adv), adv)
    return adv.to(rewards.dtype)


def zero_std_stats(
    rewards: torch.Tensor,
    max_reward: float = 1.0,
    min_reward: float = 0.0,
    tol: float = ZERO_STD_TOL,
) -> dict[str, float]:
    """How many groups carry no learning signal, and how many NGRPO would rescue.

    A group is "zero-std" when all its real rewards are equal within ``tol``. Such a group gives every
    sample an advantage of 0 under GRPO. NGRPO's virtual ``max_reward`` sample rescues zero-std groups
    below ``max_reward`` (all wrong, or all equally mediocre) but not groups already all at ``max_reward``.

    Args:
        rewards: ``(G, n)`` float tensor of real rewards.
        max_reward: the reward counted as "all right" (and NGRPO's virtual reward).
        min_reward: the reward counted as "all wrong".
        tol: equality tolerance.

    Returns:
        A dict of python floats, each a fraction of the G groups:
        ``frac_reward_zero_std`` (all equal), split into ``frac_zero_std_all_max``,
        ``frac_zero_std_all_min`` and ``frac_zero_std_other``; ``frac_with_signal`` (not zero-std: the
        groups plain GRPO learns from) and ``frac_with_signal_ngrpo`` (the groups that learn with NGRPO on).
        An empty batch gives zeros.
    """
    if rewards.ndim != 2:
        raise ValueError(f"rewards must be 2-D (groups, group_size), got shape {tuple(rewards.shape)}")
    g = rewards.shape[0]
    keys = (
        "frac_reward_zero_std",
        "frac_zero_std_all_max",
        "frac_zero_std_all_min",
        "frac_zero_std_other",
        "frac_with_signal",
        "frac_with_signal_ngrpo",
    )
    if g == 0 or rewards.shape[1] == 0:
        return dict.fromkeys(keys, 0.0)

    r = rewards.detach().to(torch.float64)  # (G, n)
    hi = r.max(dim=1).values  # (G,)
    lo = r.min(dim=1).values  # (G,)
    zero = (hi - lo) <= tol  # (G,)
    at_max = zero & ((hi - max_reward).abs() <= tol) & ((lo - max_reward).abs() <= tol)
    at_min = zero & ((hi - min_reward).abs() <= tol) & ((lo - min_reward).abs() <= tol) & ~at_max
    other = zero & ~at_max & ~at_min
    # NGRPO leaves only the all-at-max groups without signal (the virtual sample equals them).
    # A group above max_reward (mis-scaled rewards) would also get signal, of the opposite sign.
    signal_ngrpo = ~at_max

    def frac(mask: torch.Tensor) -> float:
        return float(mask.sum().item()) / g

    return {
        "frac_reward_zero_std": frac(zero),
        "frac_zero_std_all_max": frac(at_max),
        "frac_zero_std_all_min": frac(at_min),
        "frac_zero_std_other": frac(other),
        "frac_with_signal": frac(~zero),
        "frac_with_signal_ngrpo": frac(signal_ngrpo),
    }

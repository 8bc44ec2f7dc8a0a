"""One RL step's algorithm as one pure function: a batch's rewards → advantages, token weights, metrics
and the NGRPO switch's decision.

The order is the algorithm's: zero-std statistics are taken on the rewards as scored (they measure
whether a group carries signal), the overlong penalty is added after them, the switch sees this step's
zero-std fraction before the advantages are computed, and NGRPO (when on) acts on this same batch.
docs/algorithm.md#one-step walks through it. The caller owns the switch (it carries state across
steps) and everything around the numbers: sampling, scoring, the learner.

>>> import torch
>>> from configs.algorithm import AlgorithmConfig
>>> from algo.ngrpo_switch import NGRPOSwitch
>>> algo = AlgorithmConfig(ngrpo={"mode": "on"}, overlong={"enabled": False})
>>> out = algo_step(torch.full((1, 8), 0.8, dtype=torch.float64), step=1, switch=NGRPOSwitch("on"), algo=algo,
...                 lengths=[[10] * 8], max_len=96)
>>> round(out.advantages[0, 0].item(), 2), out.metrics["frac_reward_zero_std"], out.active
(-0.35, 1.0, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from algo.advantages import group_advantages, zero_std_stats
from algo.ngrpo_switch import NGRPOSwitch, SwitchEvent
from algo.shaping import overlong_penalty
from algo.token_weights import dart_token_weights, turn_token_weights

if TYPE_CHECKING:
    from configs.algorithm import AlgorithmConfig


@dataclass
class StepResult:
    advantages: torch.Tensor  # (G, n), the rewards' dtype; 0 where not trained
    token_weights: list[list[float]] | None  # (B, T_i) per flattened sample, with DART on
    metrics: dict[str, float | bool]
    active: bool  # NGRPO was used for these advantages
    event: SwitchEvent | None  # the switch changed state at this step
    trained: torch.Tensor  # (G, n) bool: the samples the update learns from

    @property
    def valid_samples(self) -> int:
        return int(self.trained.sum().item())


def algo_step(
    rewards: torch.Tensor,
    *,
    step: int,
    switch: NGRPOSwitch,
    algo: AlgorithmConfig,
    lengths: Sequence[Sequence[int]],
    max_len: int,
    texts: Sequence[str] | None = None,
    offsets: Sequence[Sequence[tuple[int, int]]] | None = None,
    masks: Sequence[Sequence[int] | None] | None = None,
    valid: torch.Tensor | None = None,
) -> StepResult:
    """Advantages and the rest for a (G, n) reward matrix.

    Samples whose reward failed (`valid` False) are left out of their group's statistics and of the
    loss; a group with fewer than two valid samples carries no comparison and is dropped whole
    (`dropped_groups`). Without `valid`, every sample counts.

    Args:
        rewards: ``(G, n)`` rewards as scored, one row per prompt's group.
        step: this RL step (recorded with a switch event).
        switch: the NGRPO switch; updated with this step's zero-std fraction.
        algo: the algorithm config (advantage, ngrpo, overlong, loss.dart settings).
        lengths: ``(G, n)`` the policy's tokens per sample (overlong shaping).
        max_len: the completion length limit, when ``algo.overlong.max_len`` is not set.
        texts, offsets: ``(B,)`` completion texts and their tokens' character spans, flattened group
            by group; needed only with DART token weights on.
        masks: ``(B,)`` loss masks of multi-turn samples (None for a single-turn one): DART weights
            each assistant turn on its own (`turn_token_weights`).
        valid: ``(G, n)`` bool, False for a sample whose reward failed.
    """
    metrics: dict[str, float | bool] = {}
    if valid is None:
        trained = torch.ones_like(rewards, dtype=torch.bool)
        flat = rewards.flatten()
        metrics.update(zero_std_stats(rewards, max_reward=algo.ngrpo.max_reward))
    else:
        kept = valid.sum(dim=1) >= 2  # (G,)
        trained = valid & kept[:, None]
        flat = rewards[trained]
        metrics.update(_ragged_zero_std(rewards, trained, kept, algo.ngrpo.max_reward))
        metrics["dropped_groups"] = float((~kept).sum().item())
    metrics["reward_mean"] = flat.mean().item() if flat.numel() else 0.0
    metrics["reward_std"] = flat.std(unbiased=False).item() if flat.numel() else 0.0

    shaped = rewards
    if algo.overlong.enabled:
        lens = torch.tensor([n for row in lengths for n in row])  # (B,)
        pen = overlong_penalty(lens, algo.overlong.max_len or max_len, algo.overlong.buffer).view_as(rewards)
        shaped = rewards + pen.to(rewards.dtype)
        metrics["overlong_penalty_mean"] = pen.float().mean().item()

    was_active = switch.active
    active = switch.update(step, metrics["frac_reward_zero_std"])
    event = switch.events[-1] if active != was_active else None
    a = algo.advantage
    kwargs = dict(ngrpo=active, max_reward=algo.ngrpo.max_reward, num_virtual=algo.ngrpo.num_virtual,
                  std=a.std, eps=a.eps)
    if valid is None:
        adv = group_advantages(shaped, **kwargs)
    else:  # each kept group over its valid samples only; everything else 0 and not trained
        adv = torch.zeros_like(shaped)
        for g in torch.nonzero(trained.any(dim=1)).flatten().tolist():
            adv[g, trained[g]] = group_advantages(shaped[g, trained[g]][None, :], **kwargs)[0]
    metrics["ngrpo_active"] = active
    if valid is None:
        metrics["advantage_abs_mean"] = adv.abs().mean().item()
    else:
        metrics["advantage_abs_mean"] = adv[trained].abs().mean().item() if trained.any() else 0.0

    weights = None
    if algo.loss.dart:
        if texts is None or offsets is None:
            raise ValueError("DART token weights need the completions' texts and token offsets")
        lc = algo.loss
        w = (lc.thought_weight, lc.action_weight, lc.other_weight)
        weights = [dart_token_weights(t, o, *w) if m is None else turn_token_weights(t, o, m, *w)
                   for t, o, m in zip(texts, offsets, masks or [None] * len(texts))]
    return StepResult(adv, weights, metrics, active, event, trained)


def _ragged_zero_std(rewards: torch.Tensor, trained: torch.Tensor, kept: torch.Tensor,
                     max_reward: float) -> dict:
    """`zero_std_stats` over the kept groups, each on its valid samples only (ragged groups)."""
    per_group = [zero_std_stats(rewards[g, trained[g]][None, :], max_reward=max_reward)
                 for g in torch.nonzero(kept).flatten().tolist()]
    if not per_group:
        return zero_std_stats(rewards[:0], max_reward=max_reward)
    return {k: sum(s[k] for s in per_group) / len(per_group) for k in per_group[0]}

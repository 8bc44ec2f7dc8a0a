"""The clipped policy-gradient loss (GRPO-TCR).

Owns: the per-token PPO surrogate with asymmetric clipping, the optional k3 KL penalty to the reference
policy and the token/sequence aggregations. Does not know where
log-probabilities come from (the learner computes them; the reference is the same model with the LoRA
adapter disabled) nor how advantages were computed.

Example:
    >>> import torch
    >>> logp = torch.zeros(2, 3, requires_grad=True)
    >>> loss, metrics = policy_loss(logp, torch.zeros(2, 3), torch.tensor([1.0, -1.0]), torch.ones(2, 3))
    >>> float(loss.detach()), metrics["ratio_mean"]
    (0.0, 1.0)
"""

from __future__ import annotations

from typing import Literal

import torch

Aggregation = Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"]
AGGREGATIONS: tuple[str, ...] = ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm")


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    agg: Aggregation = "token_mean",
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    token_weights: torch.Tensor | None = None,
    *,
    max_tokens: int | None = None,
    behaviour_logprobs: torch.Tensor | None = None,
    tis_cap: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The GRPO/NGRPO policy loss over a batch of completions.

    Per token t of sequence b, with ``ratio = exp(logp - old_logp)`` and ``A = advantages[b]``::

        loss_bt = -min(ratio * A, clip(ratio, 1 - eps_low, 1 + eps_high) * A) * w_bt
                  + kl_coef * (exp(ref - logp) - (ref - logp) - 1)        # k3, only with ref_logprobs

    ``w_bt`` is ``token_weights`` (1 when absent), times the truncated importance weight
    ``min(exp(old_logp - behaviour_logp), tis_cap)`` when ``behaviour_logprobs`` and ``tis_cap`` are given
    (TIS: ``old_logprobs`` are the policy at the start of this update, ``behaviour_logprobs`` those of the
    policy that sampled the tokens — an older version in a one-step-off pipeline, or the same weights
    computed by another engine). Weights scale the surrogate only, not the KL term (the pull towards
    the reference stays uniform) and not the normaliser. Aggregation over unmasked tokens:

    - ``"token_mean"``: sum over all unmasked tokens / their count (every token counts equally, as in DAPO).
    - ``"seq_mean_token_mean"``: each sequence's mean over its tokens, then the mean over sequences.
    - ``"seq_mean_token_sum_norm"`` (Dr.GRPO): each sequence's token sum / ``max_tokens`` (a constant,
      default T), then the mean over sequences, so long and short answers are not reweighted by length.

    Masked positions contribute nothing and receive exactly zero gradient, even if they hold garbage
    (the log-ratio is zeroed there before ``exp``).

    Args:
        logprobs: ``(B, T)`` current policy log-probs of the sampled tokens (requires grad).
        old_logprobs: ``(B, T)`` log-probs under the policy that sampled them (no grad).
        advantages: ``(B,)`` one advantage per sequence.
        mask: ``(B, T)`` 1/True for completion tokens that count, 0/False for prompt and padding.
        eps_low: lower clip, the ratio is clipped below at ``1 - eps_low``.
        eps_high: upper clip ("clip-higher"), the ratio is clipped above at ``1 + eps_high``.
        agg: the aggregation, see above.
        ref_logprobs: ``(B, T)`` reference log-probs (adapter disabled), or None for no KL term.
        kl_coef: weight of the k3 KL term (ignored without ``ref_logprobs``).
        token_weights: ``(B, T)`` per-token weights (DART), or None.
        max_tokens: Dr.GRPO's constant normaliser; defaults to T.
        behaviour_logprobs: ``(B, T)`` log-probs under the sampling policy (vLLM's), or None.
        tis_cap: the truncation of the importance weight; None: no importance weight.

    Returns:
        ``(loss, metrics)``: a scalar tensor, and python floats ``clip_frac_low`` / ``clip_frac_high``
        (fraction of unmasked tokens where the low / high clip is active: A<0 and ratio<1-eps_low /
        A>0 and ratio>1+eps_high), ``approx_kl`` (k3 estimate of KL(old || new) over unmasked tokens),
        ``ratio_mean``, ``kl_ref`` (mean k3 to the reference, when given), ``loss``, and with TIS
        ``is_ratio_mean`` / ``is_ratio_max`` (the importance weight before truncation) and
        ``tis_clip_frac`` (the fraction of tokens it was truncated on).
    """
    _check_inputs(logprobs, old_logprobs, advantages, mask, ref_logprobs, token_weights, eps_low, eps_high)
    if agg not in AGGREGATIONS:
        raise ValueError(f"agg must be one of {AGGREGATIONS}, got {agg!r}")
    if kl_coef < 0:
        raise ValueError(f"kl_coef must be >= 0, got {kl_coef}")

    keep = mask.bool()  # (B, T)
    # Zero the log-ratio on masked positions *before* exp: garbage there (e.g. -inf) must not turn
    # into inf * 0 = NaN in the forward or backward pass.
    log_ratio = torch.where(keep, logprobs - old_logprobs, torch.zeros_like(logprobs))  # (B, T)
    ratio = torch.exp(log_ratio)  # (B, T)
    adv = advantages.to(logprobs.dtype).unsqueeze(1)  # (B, 1): broadcast over tokens
    surr_unclipped = ratio * adv
    surr_clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv
    per_token = -torch.minimum(surr_unclipped, surr_clipped)  # (B, T)
    if token_weights is not None:
        per_token = per_token * token_weights.to(per_token.dtype)
    is_ratio = _importance_ratio(keep, old_logprobs, behaviour_logprobs) if tis_cap is not None else None
    if is_ratio is not None:
        per_token = per_token * is_ratio.clamp(max=tis_cap).to(per_token.dtype)

    kl_ref: torch.Tensor | None = None
    if ref_logprobs is not None:
        diff = torch.where(keep, ref_logprobs - logprobs, torch.zeros_like(logprobs))  # (B, T)
        kl_ref = torch.exp(diff) - diff - 1.0  # (B, T): k3, >= 0, unbiased for KL(pi || ref)
        if kl_coef > 0:
            per_token = per_token + kl_coef * kl_ref

    per_token = torch.where(keep, per_token, torch.zeros_like(per_token))
    loss = _aggregate(per_token, keep, agg, max_tokens)

    with torch.no_grad():
        metrics = _metrics(loss, ratio, log_ratio, adv, keep, eps_low, eps_high)
        if kl_ref is not None:
            metrics["kl_ref"] = float(kl_ref[keep].sum().item()) / max(int(keep.sum().item()), 1)
        if is_ratio is not None:
            metrics.update(_tis_metrics(is_ratio, keep, tis_cap))
    return loss, metrics


def _metrics(loss: torch.Tensor, ratio: torch.Tensor, log_ratio: torch.Tensor, adv: torch.Tensor,
             keep: torch.Tensor, eps_low: float, eps_high: float) -> dict[str, float]:
    """Loss, clip fractions, k3 KL(old || new) and mean ratio over the kept tokens."""
    n_tok = max(int(keep.sum().item()), 1)
    clip_low = keep & (adv < 0) & (ratio < 1.0 - eps_low)
    clip_high = keep & (adv > 0) & (ratio > 1.0 + eps_high)
    approx_kl = (ratio - 1.0) - log_ratio  # (B, T): k3 of KL(old || new), 0 on masked positions
    return {
        "loss": float(loss.detach().item()),
        "clip_frac_low": float(clip_low.sum().item()) / n_tok,
        "clip_frac_high": float(clip_high.sum().item()) / n_tok,
        "approx_kl": float(approx_kl[keep].sum().item()) / n_tok,
        "ratio_mean": float(ratio[keep].sum().item()) / n_tok if keep.any() else 1.0,
    }


def _importance_ratio(keep: torch.Tensor, old: torch.Tensor,
                      behaviour: torch.Tensor | None) -> torch.Tensor | None:
    """(B, T) exp(old - behaviour) on kept tokens (1 elsewhere), without gradient; None without behaviour."""
    if behaviour is None:
        return None
    with torch.no_grad():
        return torch.exp(torch.where(keep, old - behaviour, torch.zeros_like(old)))


def _tis_metrics(is_ratio: torch.Tensor, keep: torch.Tensor, cap: float) -> dict[str, float]:
    n_tok = max(int(keep.sum().item()), 1)
    if not keep.any():
        return {"is_ratio_mean": 1.0, "is_ratio_max": 1.0, "tis_clip_frac": 0.0}
    return {"is_ratio_mean": float(is_ratio[keep].sum().item()) / n_tok,
            "is_ratio_max": float(is_ratio[keep].max().item()),
            "tis_clip_frac": float((keep & (is_ratio > cap)).sum().item()) / n_tok}


def _aggregate(
    per_token: torch.Tensor, keep: torch.Tensor, agg: str, max_tokens: int | None
) -> torch.Tensor:
    """Reduce ``(B, T)`` masked per-token losses to a scalar (see `policy_loss`)."""
    counts = keep.sum(dim=1).to(per_token.dtype)  # (B,)
    seq_sum = per_token.sum(dim=1)  # (B,)
    if agg == "token_mean":
        return per_token.sum() / counts.sum().clamp(min=1.0)
    if agg == "seq_mean_token_mean":
        # A sequence with no unmasked token contributes 0 but still counts in the mean over B.
        return (seq_sum / counts.clamp(min=1.0)).mean()
    norm = per_token.shape[1] if max_tokens is None else max_tokens
    if norm <= 0:
        raise ValueError(f"max_tokens must be > 0, got {norm}")
    return (seq_sum / norm).mean()


def _check_inputs(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    ref_logprobs: torch.Tensor | None,
    token_weights: torch.Tensor | None,
    eps_low: float,
    eps_high: float,
) -> None:
    if logprobs.ndim != 2:
        raise ValueError(f"logprobs must be (batch, tokens), got shape {tuple(logprobs.shape)}")
    shape = logprobs.shape
    for name, t in (
        ("old_logprobs", old_logprobs),
        ("mask", mask),
        ("ref_logprobs", ref_logprobs),
        ("token_weights", token_weights),
    ):
        if t is not None and t.shape != shape:
            raise ValueError(f"{name} must have the shape of logprobs {tuple(shape)}, got {tuple(t.shape)}")
    if advantages.shape != (shape[0],):
        raise ValueError(f"advantages must have shape ({shape[0]},), got {tuple(advantages.shape)}")
    if not 0 <= eps_low < 1:
        raise ValueError(f"eps_low must be in [0, 1), got {eps_low}")
    if eps_high < 0:
        raise ValueError(f"eps_high must be >= 0, got {eps_high}")

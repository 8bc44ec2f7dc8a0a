"""policy_loss against a python-loop reference."""

import math

import pytest
import torch

from algo.losses import policy_loss


def reference_loss(
    logp, old, adv, mask, eps_low, eps_high, agg, ref=None, kl_coef=0.0, weights=None, max_tokens=None
):
    """Token by token, as written in docs/algorithm.md#the-loss (autograd-friendly: builds from scalar
    ops)."""
    B, T = len(mask), len(mask[0])
    seq_sums, seq_counts = [], []
    for b in range(B):
        total, count = 0.0, 0
        for t in range(T):
            if not mask[b][t]:
                continue
            ratio = torch.exp(logp[b, t] - old[b][t])
            clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
            tok = -torch.minimum(ratio * adv[b], clipped * adv[b])
            if weights is not None:
                tok = tok * weights[b][t]
            if ref is not None and kl_coef:
                d = ref[b][t] - logp[b, t]
                tok = tok + kl_coef * (torch.exp(d) - d - 1)
            total = total + tok
            count += 1
        seq_sums.append(total)
        seq_counts.append(count)
    if agg == "token_mean":
        return sum(seq_sums) / max(sum(seq_counts), 1)
    if agg == "seq_mean_token_mean":
        return sum(s / max(c, 1) for s, c in zip(seq_sums, seq_counts)) / B
    norm = T if max_tokens is None else max_tokens
    return sum(s / norm for s in seq_sums) / B


def random_batch(seed, B=4, T=6, spread=0.5):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 2 - 0.1  # (B, T) log-probs
    # A wide perturbation so ratios land on both sides of both clip bounds.
    logp = old + (torch.rand(B, T, generator=g) - 0.5) * 2 * spread
    adv = torch.randn(B, generator=g)
    adv[0], adv[1] = 1.5, -1.5  # both signs for sure
    mask = torch.rand(B, T, generator=g) > 0.3
    mask[:, 0] = True
    ref = old + (torch.rand(B, T, generator=g) - 0.5) * 0.4
    weights = torch.rand(B, T, generator=g) + 0.2
    return logp, old, adv, mask, ref, weights


@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"])
@pytest.mark.parametrize("with_kl", [False, True])
@pytest.mark.parametrize("with_weights", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_loss_and_gradient_match_reference(agg, with_kl, with_weights, seed):
    logp0, old, adv, mask, ref, weights = random_batch(seed)
    kw = dict(eps_low=0.2, eps_high=0.28, agg=agg)
    ref_kw = dict(ref=ref.tolist() if with_kl else None, kl_coef=0.1 if with_kl else 0.0,
                  weights=weights.tolist() if with_weights else None)

    logp = logp0.clone().requires_grad_(True)
    loss, metrics = policy_loss(
        logp, old, adv, mask, **kw,
        ref_logprobs=ref if with_kl else None, kl_coef=0.1 if with_kl else 0.0,
        token_weights=weights if with_weights else None,
    )
    loss.backward()

    logp_r = logp0.clone().requires_grad_(True)
    want = reference_loss(logp_r, old.tolist(), adv.tolist(), mask.tolist(), 0.2, 0.28, agg, **ref_kw)
    want.backward()

    assert loss.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-6)
    assert torch.allclose(logp.grad, logp_r.grad, atol=1e-6)
    assert torch.all(logp.grad[~mask] == 0)
    assert metrics["loss"] == pytest.approx(loss.item())


def test_both_clip_sides_exercised_and_metrics():
    logp0, old, adv, mask, _, _ = random_batch(3, B=6, T=8, spread=0.8)
    loss, m = policy_loss(logp0, old, adv, mask)
    ratio = torch.exp(logp0 - old)
    a = adv[:, None].expand_as(ratio)
    n = mask.sum().item()
    low = (mask & (a < 0) & (ratio < 0.8)).sum().item()
    high = (mask & (a > 0) & (ratio > 1.28)).sum().item()
    assert low > 0 and high > 0, "the batch must exercise both clip sides"
    assert m["clip_frac_low"] == pytest.approx(low / n)
    assert m["clip_frac_high"] == pytest.approx(high / n)
    assert m["ratio_mean"] == pytest.approx(ratio[mask].mean().item(), rel=1e-6)
    lr = (logp0 - old)[mask]
    assert m["approx_kl"] == pytest.approx(((lr.exp() - 1) - lr).mean().item(), rel=1e-5)
    assert all(isinstance(v, float) for v in m.values())


def test_clipped_tokens_get_no_gradient():
    # A>0 with ratio above 1+eps_high, and A<0 with ratio below 1-eps_low: both clipped, gradient 0.
    old = torch.zeros(2, 1)
    logp = torch.tensor([[math.log(1.5)], [math.log(0.5)]], requires_grad=True)
    loss, m = policy_loss(logp, old, torch.tensor([1.0, -1.0]), torch.ones(2, 1))
    loss.backward()
    assert torch.equal(logp.grad, torch.zeros(2, 1))
    assert loss.item() == pytest.approx(-(1.28 * 1.0 + 0.8 * -1.0) / 2)
    assert m["clip_frac_high"] == 0.5 and m["clip_frac_low"] == 0.5


def test_asymmetric_clip_leaves_the_other_side_unclipped():
    # A>0 with ratio 0.5 (below 1-eps_low): min() keeps the unclipped term, gradient flows.
    logp = torch.tensor([[math.log(0.5)]], requires_grad=True)
    loss, m = policy_loss(logp, torch.zeros(1, 1), torch.tensor([2.0]), torch.ones(1, 1))
    loss.backward()
    assert loss.item() == pytest.approx(-1.0)
    assert logp.grad.item() == pytest.approx(-1.0)  # d(-ratio*A)/dlogp = -ratio*A
    assert m["clip_frac_low"] == 0.0 and m["clip_frac_high"] == 0.0


def test_masked_garbage_is_harmless():
    logp0, old, adv, mask, ref, _ = random_batch(4)
    logp = logp0.clone()
    logp[~mask] = -1e4  # padding garbage: exp would overflow if not masked before exp
    logp.requires_grad_(True)
    old = old.clone()
    old[~mask] = float("-inf")
    loss, m = policy_loss(logp, old, adv, mask, ref_logprobs=ref, kl_coef=0.5)
    loss.backward()
    assert torch.isfinite(loss)
    assert all(math.isfinite(v) for v in m.values())
    assert torch.all(logp.grad[~mask] == 0)
    assert torch.isfinite(logp.grad).all()


def test_on_policy_value_is_minus_mean_advantage():
    # ratio = 1 everywhere: token_mean loss = -(sum_b A_b * len_b) / sum_b len_b.
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    adv = torch.tensor([1.0, -2.0])
    lp = torch.zeros(2, 4)
    assert policy_loss(lp, lp, adv, mask)[0].item() == pytest.approx(-(3 * 1 - 2) / 4)
    assert policy_loss(lp, lp, adv, mask, agg="seq_mean_token_mean")[0].item() == pytest.approx(-(1 - 2) / 2)
    got = policy_loss(lp, lp, adv, mask, agg="seq_mean_token_sum_norm", max_tokens=10)[0].item()
    assert got == pytest.approx(-(3 / 10 - 2 / 10) / 2)


def test_kl_term_is_k3():
    logp = torch.zeros(1, 1)
    ref = torch.tensor([[0.5]])
    loss, m = policy_loss(logp, logp, torch.zeros(1), torch.ones(1, 1), ref_logprobs=ref, kl_coef=2.0)
    k3 = math.exp(0.5) - 0.5 - 1
    assert loss.item() == pytest.approx(2.0 * k3)
    assert m["kl_ref"] == pytest.approx(k3)


def test_token_weights_do_not_change_normaliser():
    lp = torch.zeros(1, 4)
    w = torch.tensor([[0.3, 0.3, 0.7, 1.0]])
    loss, _ = policy_loss(lp, lp, torch.tensor([1.0]), torch.ones(1, 4), token_weights=w)
    assert loss.item() == pytest.approx(-(0.3 + 0.3 + 0.7 + 1.0) / 4)


def test_shape_errors():
    lp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="advantages"):
        policy_loss(lp, lp, torch.zeros(3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="mask"):
        policy_loss(lp, lp, torch.zeros(2), torch.ones(2, 4))
    with pytest.raises(ValueError, match="agg"):
        policy_loss(lp, lp, torch.zeros(2), torch.ones(2, 3), agg="sum")


def test_truncated_importance_weight():
    """TIS: the surrogate is weighted by min(exp(old - behaviour), cap); equal logprobs weigh 1."""
    logp, old, adv, mask, _, _ = random_batch(3)
    base, _ = policy_loss(logp, old, adv, mask)
    same, m = policy_loss(logp, old, adv, mask, behaviour_logprobs=old.clone(), tis_cap=2.0)
    assert torch.allclose(same, base) and m["is_ratio_mean"] == pytest.approx(1.0) and m["tis_clip_frac"] == 0
    stale = old - torch.where(torch.rand(old.shape) < 0.5, 1.5, 0.1)  # behaviour was less likely: ratio > 1
    _, m = policy_loss(logp, old, adv, mask, behaviour_logprobs=stale, tis_cap=2.0)
    assert m["is_ratio_max"] == pytest.approx(math.exp(1.5), rel=1e-5)
    assert 0 < m["tis_clip_frac"] < 1  # exp(1.5) > 2 is cut, exp(0.1) < 2 is not
    one, _ = policy_loss(logp, old, adv, mask, behaviour_logprobs=stale, tis_cap=1.0)
    assert torch.allclose(one, base)  # a cap of 1 with ratios >= 1 weighs every token 1

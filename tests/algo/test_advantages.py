"""group_advantages and zero_std_stats against hand-computed numbers and a plain reference."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from algo.advantages import group_advantages, zero_std_stats


def reference_advantages(rewards, ngrpo=False, max_reward=1.0, num_virtual=1, std="population", eps=1e-6):
    """Straightforward python-loop version of docs/algorithm.md#group-advantages."""
    out = []
    for group in rewards:
        values = list(group) + ([max_reward] * num_virtual if ngrpo else [])
        m = len(values)
        mean = sum(values) / m
        if max(values) - min(values) <= 1e-6:
            out.append([0.0] * len(group))
            continue
        if std == "none":
            out.append([r - mean for r in group])
            continue
        ss = sum((v - mean) ** 2 for v in values)
        sd = math.sqrt(ss / (m - 1 if std == "unbiased" else m))
        out.append([(r - mean) / (sd + eps) for r in group])
    return out


def test_seed_worked_example_ngrpo_population():
    # The field report's example (docs/algorithm.md#ngrpo): eight 0.8 + a virtual 1.0 -> mean 0.822, std
    # 0.063, A = -0.35.
    adv = group_advantages(torch.full((1, 8), 0.8), ngrpo=True, std="population")
    assert adv.shape == (1, 8)
    assert torch.all(adv.round(decimals=2) == -0.35)
    assert adv[0, 0].item() == pytest.approx(-0.35355, abs=1e-4)  # = -1/(2*sqrt(2))


def test_paper_example_unbiased():
    # NGRPO paper: eight 0 + a virtual 1.0 with the unbiased std -> each A = -1/3.
    adv = group_advantages(torch.zeros(1, 8), ngrpo=True, std="unbiased")
    assert torch.allclose(adv, torch.full((1, 8), -1.0 / 3.0), atol=1e-5)


def test_plain_grpo_zero_spread_gives_exact_zero():
    rewards = torch.tensor([[0.8] * 8, [0.0] * 8, [1.0] * 8, [0.1] * 8])
    for std in ("population", "unbiased", "none"):
        adv = group_advantages(rewards, std=std)
        assert torch.equal(adv, torch.zeros_like(rewards))


def test_ngrpo_does_not_rescue_all_right_groups():
    adv = group_advantages(torch.ones(2, 4), ngrpo=True)
    assert torch.equal(adv, torch.zeros(2, 4))


def test_hand_computed_grpo_group():
    # [0, 1]: mean 0.5, population std 0.5 -> -1, +1 (less eps); unbiased std sqrt(0.5).
    r = torch.tensor([[0.0, 1.0]])
    assert torch.allclose(group_advantages(r, eps=0.0), torch.tensor([[-1.0, 1.0]]))
    unbiased = group_advantages(r, std="unbiased", eps=0.0)
    assert torch.allclose(unbiased, torch.tensor([[-0.5, 0.5]]) * math.sqrt(2))
    assert torch.allclose(group_advantages(r, std="none"), torch.tensor([[-0.5, 0.5]]))


def test_multiple_virtual_samples():
    # Four 0 + two virtual 1: mean 1/3, population std sqrt(2)/3 -> A = -1/sqrt(2).
    adv = group_advantages(torch.zeros(1, 4), ngrpo=True, num_virtual=2, eps=0.0)
    assert torch.allclose(adv, torch.full((1, 4), -1 / math.sqrt(2)))


def test_group_of_one_unbiased_is_zero_not_nan():
    adv = group_advantages(torch.tensor([[0.3], [0.9]]), std="unbiased")
    assert torch.equal(adv, torch.zeros(2, 1))


def test_dtype_and_shape_preserved():
    r = torch.rand(3, 5, dtype=torch.float64)
    assert group_advantages(r).dtype == torch.float64
    assert group_advantages(r.float()).dtype == torch.float32


@pytest.mark.parametrize("bad", [torch.zeros(8), torch.zeros(2, 2, 2)])
def test_rejects_wrong_rank(bad):
    with pytest.raises(ValueError, match="2-D"):
        group_advantages(bad)


def test_rejects_bad_options():
    with pytest.raises(ValueError):
        group_advantages(torch.zeros(1, 2), std="sample")
    with pytest.raises(ValueError):
        group_advantages(torch.zeros(1, 2), ngrpo=True, num_virtual=0)


reward_groups = st.integers(1, 4).flatmap(
    lambda g: st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(
                st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.0]) | st.floats(0, 1), min_size=n, max_size=n
            ),
            min_size=g,
            max_size=g,
        )
    )
)


@settings(max_examples=60, deadline=None)
@given(
    rewards=reward_groups,
    ngrpo=st.booleans(),
    num_virtual=st.integers(1, 3),
    std=st.sampled_from(["population", "unbiased", "none"]),
)
def test_random_groups_match_reference(rewards, ngrpo, num_virtual, std):
    r = torch.tensor(rewards, dtype=torch.float64)
    got = group_advantages(r, ngrpo=ngrpo, num_virtual=num_virtual, std=std)
    want = torch.tensor(reference_advantages(rewards, ngrpo, 1.0, num_virtual, std), dtype=torch.float64)
    assert torch.isfinite(got).all()
    assert torch.allclose(got, want, atol=1e-6, rtol=1e-6)


def test_random_float32_groups_match_reference():
    g = torch.Generator().manual_seed(0)
    r = torch.rand(16, 8, generator=g)
    r[:4] = 0.5  # some zero-spread groups
    for ngrpo in (False, True):
        got = group_advantages(r, ngrpo=ngrpo)
        want = torch.tensor(reference_advantages(r.double().tolist(), ngrpo), dtype=torch.float32)
        assert torch.allclose(got, want, atol=1e-5)


def test_zero_std_stats_split():
    rewards = torch.tensor(
        [
            [1.0, 1.0, 1.0],  # all at max
            [0.0, 0.0, 0.0],  # all at min
            [0.5, 0.5, 0.5],  # other equal
            [0.0, 1.0, 0.5],  # spread
            [0.2, 0.2, 0.2 + 1e-8],  # equal within tolerance
        ]
    )
    s = zero_std_stats(rewards)
    assert s["frac_reward_zero_std"] == pytest.approx(4 / 5)
    assert s["frac_zero_std_all_max"] == pytest.approx(1 / 5)
    assert s["frac_zero_std_all_min"] == pytest.approx(1 / 5)
    assert s["frac_zero_std_other"] == pytest.approx(2 / 5)
    assert s["frac_with_signal"] == pytest.approx(1 / 5)
    assert s["frac_with_signal_ngrpo"] == pytest.approx(4 / 5)  # all but the all-right group
    assert all(isinstance(v, float) for v in s.values())


def test_zero_std_stats_agrees_with_advantages():
    g = torch.Generator().manual_seed(1)
    r = (torch.rand(32, 4, generator=g) > 0.6).float()  # binary rewards, many equal groups
    s = zero_std_stats(r)
    zero_rows = (group_advantages(r) == 0).all(dim=1).float().mean().item()
    assert s["frac_reward_zero_std"] == pytest.approx(zero_rows)
    rescued = (group_advantages(r, ngrpo=True) != 0).any(dim=1).float().mean().item()
    assert s["frac_with_signal_ngrpo"] == pytest.approx(rescued)


def test_zero_std_stats_empty():
    assert zero_std_stats(torch.zeros(0, 8))["frac_reward_zero_std"] == 0.0

"""difficulty_filter: drops no-signal prompts, draws the easy/medium/hard mix, never duplicates."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from algo.difficulty import difficulty_buckets, difficulty_filter


def bucket_of(rate):
    return "easy" if rate >= 0.7 else "hard" if rate <= 0.3 else "medium"


def rates_pool(easy, medium, hard, right=3, wrong=3):
    return [0.875] * easy + [0.5] * medium + [0.125] * hard + [1.0] * right + [0.0] * wrong


def counts(rates, kept):
    out = {"easy": 0, "medium": 0, "hard": 0}
    for i in kept:
        out[bucket_of(rates[i])] += 1
    return out


def test_buckets_and_drops():
    b = difficulty_buckets([1.0, 0.0, 0.7, 0.3, 0.5, 0.125, 0.875])
    assert b == {"easy": [2, 6], "medium": [4], "hard": [3, 5], "all_right": [0], "all_wrong": [1]}


def test_exact_mix_when_buckets_suffice():
    rates = rates_pool(20, 20, 20)
    kept = difficulty_filter(rates, size=10)
    assert counts(rates, kept) == {"easy": 3, "medium": 5, "hard": 2}
    assert all(0 < rates[i] < 1 for i in kept)


def test_size_none_is_the_largest_exact_mix():
    rates = rates_pool(10, 10, 10)
    kept = difficulty_filter(rates)
    assert counts(rates, kept) == {"easy": 6, "medium": 10, "hard": 4}  # medium limits: 10 / 0.5 = 20


def test_size_none_spreads_an_empty_bucket_share():
    rates = rates_pool(6, 20, 0)
    assert counts(rates, difficulty_filter(rates)) == {"easy": 6, "medium": 10, "hard": 0}  # 3:5


def test_short_bucket_is_filled_from_the_others():
    rates = rates_pool(1, 20, 20)
    kept = difficulty_filter(rates, size=10)
    # easy wants 3 but has 1; the 2 missing go to medium/hard at 5:2 of the remaining 9 -> 6.43, 2.57.
    assert counts(rates, kept) == {"easy": 1, "medium": 6, "hard": 3}
    assert len(kept) == len(set(kept)) == 10


def test_size_capped_by_eligible_prompts():
    rates = rates_pool(2, 2, 2)
    kept = difficulty_filter(rates, size=100)
    assert counts(rates, kept) == {"easy": 2, "medium": 2, "hard": 2}


def test_all_no_signal_gives_nothing():
    assert difficulty_filter([0.0, 1.0, 1.0], size=5) == []
    assert difficulty_filter([]) == []


def test_deterministic_by_seed():
    rates = [i / 40 for i in range(1, 40)]
    a = difficulty_filter(rates, size=12, seed=3)
    assert a == difficulty_filter(rates, size=12, seed=3)
    assert any(difficulty_filter(rates, size=12, seed=s) != a for s in range(1, 6))


def test_custom_bounds_and_mix():
    rates = [0.2, 0.4, 0.6, 0.8]
    kept = difficulty_filter(rates, easy_min=0.8, hard_max=0.2, mix=(0.0, 1.0, 0.0), size=2)
    assert kept == [1, 2]


@pytest.mark.parametrize(
    "kwargs", [dict(mix=(0.5, 0.5, 0.5)), dict(easy_min=0.3, hard_max=0.5), dict(size=-1)]
)
def test_invalid(kwargs):
    with pytest.raises(ValueError):
        difficulty_filter([0.5], **kwargs)


@settings(max_examples=60, deadline=None)
@given(
    rates=st.lists(st.sampled_from([0.0, 0.125, 0.25, 0.5, 0.625, 0.75, 0.875, 1.0]), max_size=40),
    size=st.none() | st.integers(0, 50),
)
def test_properties(rates, size):
    kept = difficulty_filter(rates, size=size, seed=1)
    eligible = [i for i, r in enumerate(rates) if 0 < r < 1]
    assert kept == sorted(set(kept))  # no duplicates, ascending
    assert set(kept) <= set(eligible)
    if size is not None:
        assert len(kept) == min(size, len(eligible))

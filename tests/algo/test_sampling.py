"""Adaptive category sampling: weights follow the moving tool accuracy; nothing drops to zero."""

from __future__ import annotations

import random

import pytest

from algo.sampling import CategoryAccuracy


def test_unmeasured_categories_start_equal():
    t = CategoryAccuracy(["b", "a", "c"], ema=0.3, floor=0.1)
    assert t.weights() == {"a": 0.6, "b": 0.6, "c": 0.6}


def test_weights_follow_the_moving_accuracy():
    t = CategoryAccuracy(["easy", "hard"], ema=0.5, floor=0.1)
    for _ in range(20):
        t.update({"easy": 1.0, "hard": 0.0})
    w = t.weights()
    assert w["easy"] == pytest.approx(0.1, abs=1e-4)  # solved: only the floor is left
    assert w["hard"] == pytest.approx(1.1, abs=1e-4)
    t.update({"hard": 1.0})  # one good step moves it by ema
    assert t.weights()["hard"] == pytest.approx(0.6, abs=1e-3)


def test_missing_and_nan_values_leave_a_category_unchanged():
    t = CategoryAccuracy(["a", "b"], ema=0.5, floor=0.1)
    t.update({"a": float("nan"), "zzz": 1.0})
    assert t.acc == {"a": 0.5, "b": 0.5}


def test_draws_favour_the_weak_category_but_keep_the_strong_one():
    t = CategoryAccuracy(["strong", "weak"], ema=1.0, floor=0.1)
    t.update({"strong": 1.0, "weak": 0.0})
    w = t.weights()
    draws = random.Random(0).choices(list(w), weights=list(w.values()), k=2000)
    share = draws.count("weak") / len(draws)
    assert 0.87 < share < 0.95 and draws.count("strong") > 0  # 1.1 / 1.2 ≈ 0.917


def test_no_categories_is_an_error():
    with pytest.raises(ValueError, match="at least one category"):
        CategoryAccuracy([], ema=0.3, floor=0.1)


def test_accuracy_by_kind_splits_a_category():
    from algo.stats import accuracy_by

    correct = [[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]  # the judge's verdict per sample, one row per prompt
    kinds = ["combo_withdraw_funds", "combo_transfer_funds", "combo_withdraw_funds"]
    assert accuracy_by(kinds, correct) == {"combo_withdraw_funds": 0.25, "combo_transfer_funds": 1.0}
    assert accuracy_by(["combo"] * 3, correct) == {"combo": 0.5}

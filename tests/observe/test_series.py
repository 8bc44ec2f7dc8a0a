"""Series helpers: missing values skipped, trailing means, NGRPO-on spans; the docstring examples."""

from __future__ import annotations

import doctest
import importlib

import pytest

from observe.series import active_spans, keys_with_prefix, moving_mean, series, summary


@pytest.mark.parametrize("name", ["observe.series", "observe.tensorboard", "observe.runs",
                                  "observe.ray_metrics"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_series_skips_unmeasured_and_text():
    rows = [{"step": 1, "x": 1.0}, {"step": 2, "x": None}, {"step": 3}, {"step": 4, "x": "n/a"},
            {"step": 5, "x": 2}]
    assert series(rows, "x") == ([1, 5], [1.0, 2.0])
    assert series([], "x") == ([], [])


def test_moving_mean_is_trailing_and_keeps_length():
    assert moving_mean([4.0, 0.0, 2.0, 6.0], 3) == pytest.approx([4.0, 2.0, 2.0, 8 / 3])
    assert moving_mean([1.0, 2.0], 1) == [1.0, 2.0]
    assert moving_mean([], 5) == []


def test_active_spans_split_on_gaps_and_off_steps():
    rows = [{"step": s, "ngrpo_active": s in (1, 2, 5, 6, 7, 10)} for s in range(1, 11)]
    assert active_spans(rows) == [(1, 2), (5, 7), (10, 10)]
    # a step missing from the file breaks a span: it was not observed to be on
    gap = [{"step": 1, "ngrpo_active": True}, {"step": 3, "ngrpo_active": True}]
    assert active_spans(gap) == [(1, 1), (3, 3)]
    assert active_spans([{"step": 1}]) == []


def test_keys_with_prefix_and_summary():
    rows = [{"step": 1, "time/learn": 2.0, "time/note": "x"},
            {"step": 2, "time/generate": 1.0, "time/learn": 4.0}]
    assert keys_with_prefix(rows, "time/") == ["time/generate", "time/learn"]
    assert summary(rows, "time/learn", last=1) == {"first": 2.0, "mean": 3.0, "last_mean": 4.0, "final": 4.0}
    assert summary(rows, "missing") is None

"""Row keys → Ray metric names and tags; a full metrics row records without a name clash.

The export itself (Prometheus text on the node's metrics port) is checked end to end in
tests/cluster/test_job_submit.py.
"""

from __future__ import annotations

import re

import pytest

from observe.ray_metrics import RayMetrics, metric_name, split_key

PROMETHEUS_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
CATEGORIES = ("balance", "combo", "multistep")


def _row(step: int) -> dict:
    row = {
        "step": step, "policy_version": step, "ngrpo_active": step % 2 == 0, "reward_mean": 0.4,
        "reward_std": 0.2,
        "frac_reward_zero_std": 0.25, "accuracy": 0.5, "grad_norm": 0.1, "entropy": 0.3,
        "weights_fingerprint": "abc123", "logprob_gap_max": float("nan"), "reward_failures": 1,
        "time/generate": 1.9, "time/reward": 0.1, "time/learn": 2.4, "time/sync": 0.05,
        "reward_part/tool": 0.3, "reward_part/reasoning": 0.2,
    }
    row.update({f"accuracy/{c}": 0.5 for c in CATEGORIES})
    row.update({f"reward/{c}": 0.4 for c in CATEGORIES})
    return row


def test_split_keys_get_their_own_name_and_tag():
    assert split_key("accuracy") == ("ngrpo_accuracy", {})
    assert split_key("accuracy/combo") == ("ngrpo_accuracy_by_category", {"category": "combo"})
    assert split_key("reward/combo") == ("ngrpo_reward_by_category", {"category": "combo"})
    assert split_key("time/learn") == ("ngrpo_time_by_phase", {"phase": "learn"})
    assert split_key("reward_part/tool") == ("ngrpo_reward_part_by_component", {"component": "tool"})
    assert metric_name("ngrpo_active") == "ngrpo_active"  # no ngrpo_ngrpo_


def test_every_key_of_a_row_is_a_valid_prometheus_name():
    for key in _row(1):
        assert PROMETHEUS_NAME.match(split_key(key)[0]), key
    assert PROMETHEUS_NAME.match(metric_name("weird key-with.dots/x"))


def test_full_rows_and_evals_record_without_a_tag_clash(ray_local):
    m = RayMetrics("unit-run")
    for step in (1, 2):
        m.record(_row(step))
    m.switch_event(True)
    # the fund assistant's own eval keys, then a generic task's: the per-category family is one
    table = {"average_score": 0.6, "tool_accuracy": 0.5, "reasoning_score": 0.9,
             "per_category": dict.fromkeys(CATEGORIES, 0.5)}
    m.record_eval("before", table, ("average_score", "tool_accuracy", "reasoning_score"))
    m.record_eval("after", table, ("average_score", "tool_accuracy", "reasoning_score"))
    m.record_eval("after", {"accuracy": 0.5, "reward_mean": 0.7, "per_category": {"x": 0.5}},
                  ("accuracy", "reward_mean"))
    names = set(m._gauges)
    assert {"ngrpo_frac_reward_zero_std", "ngrpo_active", "ngrpo_accuracy",
            "ngrpo_accuracy_by_category", "ngrpo_eval_tool_accuracy", "ngrpo_eval_accuracy",
            "ngrpo_eval_reward_mean", "ngrpo_eval_accuracy_by_category"} <= names
    assert not any("tool_accuracy_by" in n for n in names)
    assert "ngrpo_weights_fingerprint" not in names and "ngrpo_logprob_gap_max" not in names  # text / NaN


def test_a_clashing_tag_set_is_an_error_not_a_silent_drop(ray_local):
    m = RayMetrics("clash-run")
    m.record({"step": 1, "accuracy": 0.5})
    with pytest.raises(ValueError, match="differ from its first use"):
        m._set("accuracy", 0.5, stage="before")

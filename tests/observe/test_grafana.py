"""The shipped Grafana dashboard is the generated one, and it only queries metrics that are exported."""

from __future__ import annotations

import json
import re

from observe.grafana import DASHBOARD_FILE, dashboard
from observe.ray_metrics import split_key

# What RayMetrics exports besides one gauge per row key (see observe/ray_metrics.py).
COUNTERS = {"ngrpo_steps_total", "ngrpo_reward_failed_completions_total", "ngrpo_switch_events_total",
            "ngrpo_recoveries_total",
            "ngrpo_phase_seconds_bucket"}
ROW_KEYS = ["reward_mean", "reward_std", "frac_reward_zero_std", "frac_zero_std_all_max",
            "frac_zero_std_all_min",
            "ngrpo_active", "accuracy", "accuracy/x", "reward/x", "reward_part/x", "time/x",
            "grad_norm",
            "entropy", "approx_kl", "loss", "clip_frac_low", "clip_frac_high", "completion_length",
            "frac_truncated", "policy_version_lag_max", "policy_version", "logprob_gap_mean", "step",
            # eval tables: a generic task's keys, the fund assistant's own, and the per-category family
            "eval_accuracy", "eval_reward_mean", "eval_average_score", "eval_tool_accuracy",
            "eval_reasoning_score", "eval_accuracy/x",
            # agent runs: their rows and their eval keys (actors.worker.agent_loop.EPISODE_EVAL_KEYS)
            "episode_turns_mean", "tool_calls_per_episode", "tool_error_rate", "success_rate",
            "frac_truncated_episodes", "obs_token_frac", "eval_success_rate",
            # peak resident memory of each role's largest process (actors.driver.coordinator.memory_row)
            "memory/learner"]


def test_shipped_json_is_the_generated_dashboard():
    assert json.loads(DASHBOARD_FILE.read_text()) == dashboard(), (
        "run: python -m observe.grafana > " + str(DASHBOARD_FILE))


def test_every_query_names_an_exported_metric():
    exported = {"ray_" + split_key(k)[0] for k in ROW_KEYS} | {"ray_" + n for n in COUNTERS}
    board = dashboard()
    exprs = [t["expr"] for p in board["panels"] for t in p["targets"]]
    exprs.append(board["templating"]["list"][1]["query"]["query"])
    # A query by name pattern (the eval tables' scalars, named as each task names them) is checked on
    # its own: what it selects must be exported.
    patterns = [m for e in exprs for m in re.findall(r'__name__(=~|!~)"([^"]*)"', e)]
    exprs = [re.sub(r'__name__(=~|!~)"[^"]*"', "", e) for e in exprs]
    used = {m for e in exprs for m in re.findall(r"\bray_[a-z0-9_]+", e)}
    assert used and used <= exported, f"not exported: {sorted(used - exported)}"
    selected = {n for n in exported
                if all(bool(re.fullmatch(rx, n)) == (op == "=~") for op, rx in patterns)}
    assert selected == {"ray_ngrpo_eval_accuracy", "ray_ngrpo_eval_average_score",
                        "ray_ngrpo_eval_tool_accuracy", "ray_ngrpo_eval_reasoning_score",
                        "ray_ngrpo_eval_success_rate"}
    # The headline metrics all have a panel.
    for name in ("ray_ngrpo_frac_reward_zero_std", "ray_ngrpo_active", "ray_ngrpo_accuracy_by_category",
                 "ray_ngrpo_eval_accuracy_by_category",
                 "ray_ngrpo_time_by_phase", "ray_ngrpo_clip_frac_high", "ray_ngrpo_policy_version_lag_max"):
        assert name in used


def test_panels_do_not_overlap_and_ids_are_unique():
    panels = dashboard()["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells = [(p["gridPos"]["x"], p["gridPos"]["y"]) for p in panels]
    assert len(set(cells)) == len(cells)

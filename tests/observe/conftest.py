"""Synthetic run directories, shaped like the ones `actors.run_log.RunLog` writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NGRPO_ON = range(5, 9)  # steps 5–8: the switch turns on at 5 and off at 9
# A fund-assistant eval table: its own keys (tool_accuracy is the task's word for its judge's accuracy).
EVAL = {
    "before": {"average_score": 0.48, "tool_accuracy": 0.40, "reasoning_score": 0.8,
               "per_category": {"balance": 0.0, "combo": 0.25}, "n": 20, "policy_version": 0},
    "after": {"average_score": 0.65, "tool_accuracy": 0.52, "reasoning_score": 1.0,
              "per_category": {"balance": 0.5, "combo": 0.75}, "n": 20, "policy_version": 12},
}
CONFIG = {
    "model": {"name": "tiny"},
    "learner": {"lr": 0.002},
    "rollout": {"n": 8},
    "reward": {"functions": [{"name": "gt", "weight": 1.0}]},
    "algorithm": {"ngrpo": {"mode": "dynamic", "on_above": 0.3, "off_below": 0.2, "window": 3}},
    "train": {"steps": 12, "prompts_per_step": 4, "warmup": {"enabled": False}},
}


def metrics_row(step: int) -> dict:
    on = step in NGRPO_ON
    return {
        "step": step, "policy_version": step, "ngrpo_active": on,
        "reward_mean": 0.2 + 0.05 * step, "reward_std": 0.1,
        "frac_reward_zero_std": 0.4 if on else 0.1,
        "accuracy": step / 12, "accuracy/balance": (step % 2) * 1.0, "accuracy/combo": 0.5,
        "weights_fingerprint": f"{step:016x}", "kl_ref": None,
        "time/generate": 1.0, "time/learn": 2.0, "time/sync": 0.1,
    }


def write_run(path: Path, steps: int = 12, eval_json: bool = True, switches: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(json.dumps(CONFIG))
    rows = [metrics_row(s) for s in range(1, steps + 1)]
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    events = [{"event": "setup", "run_dir": str(path)}]
    if switches:
        events += [{"event": "ngrpo_switch", "step": 5, "active": True, "window_value": 0.34},
                   {"event": "ngrpo_switch", "step": 9, "active": False, "window_value": 0.18}]
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    if eval_json:
        (path / "eval.json").write_text(json.dumps(EVAL))
    return path


@pytest.fixture
def run_dir(tmp_path) -> Path:
    """A finished 12-step run with NGRPO on for steps 5–8 and a before/after eval."""
    return write_run(tmp_path / "run-a")


@pytest.fixture
def make_run(tmp_path):
    """write_run under tmp_path: make_run("name", steps=0, eval_json=False, switches=False)."""
    return lambda name, **kw: write_run(tmp_path / name, **kw)

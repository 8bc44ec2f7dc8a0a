"""The four ways in of docs/your_task.md, each run as a user runs it (`python train.py --config
examples/.../config.yaml`, a few steps), and `python evaluate.py runs/<run>` giving that run's own table.

Real Ray, vLLM, DeepSpeed; slow (a run is about a minute here): `make test-all` runs them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

SHORT = ["train.steps=3", "train.prompts_per_step=4", "rollout.n=4", "train.checkpoint_every=0",
         "rollout.kv_cache_memory_bytes=67108864", "train.eval_limit=16", "train.progress=false"]


def _train(tmp_path: Path, config: str, *sets: str) -> Path:
    run = tmp_path / "run"
    args = [sys.executable, "train.py", "--config", config]
    for s in [*SHORT, f"train.run_dir={tmp_path}", "train.run_name=run", *sets]:
        args += ["--set", s]
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3] and all("accuracy" in r for r in rows)
    assert rows[-1]["policy_version"] == 3  # every step updated and pushed the policy
    return run


def test_a_dataset_with_trl_rewards_and_evaluate_on_the_run(tmp_path):
    run = _train(tmp_path, "examples/dataset_rewards/config.yaml", "train.warmup.steps=10")
    tables = json.loads((run / "eval.json").read_text())
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    # TRL's think_format_reward ran unchanged beside the example's own reward, on every completion
    assert all(r["reward_failures"] == 0 for r in rows)
    assert {"reward_part/trl.rewards:think_format_reward",
            "reward_part/examples.dataset_rewards.rewards:exact_answer"} <= set(rows[0])
    out = tmp_path / "again.json"
    p = subprocess.run([sys.executable, "evaluate.py", str(run), "--limit", "16", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    again = json.loads(out.read_text())
    for tag in ("before", "after"):  # the run's own config, base and adapter: the run's own numbers
        for key in ("accuracy", "reward_mean", "per_category", "n"):
            assert again[tag][key] == tables[tag][key], (tag, key)
    assert "| accuracy |" in p.stdout and "| no_carry |" in p.stdout


def test_reasoning_gym_by_name(tmp_path):
    run = _train(tmp_path, "examples/reasoning_gym/config.yaml", "train.warmup.steps=10",
                 "task.options.size=60", "task.options.eval_size=12")
    after = json.loads((run / "eval.json").read_text())["after"]
    assert set(after["per_category"]) == {"chain_sum", "spell_backward", "letter_counting"}


def test_a_task_subclass(tmp_path):
    run = _train(tmp_path, "examples/my_task/config.yaml", "train.warmup.steps=10")
    after = json.loads((run / "eval.json").read_text())["after"]
    assert 0.0 <= after["accuracy"] <= 1.0 and set(after["per_category"]) <= {"1", "2", "3", "4"}


def test_an_environment(tmp_path):
    run = _train(tmp_path, "examples/guess_env/config.yaml", "train.warmup.steps=10",
                 "train.prompts_per_step=2")
    after = json.loads((run / "eval.json").read_text())["after"]
    assert 0.0 <= after["success_rate"] <= 1.0 and set(after["per_category"]) <= {"low", "high"}
    assert "tools" not in after  # only the parts its own environment scores (not the fund assistant's)

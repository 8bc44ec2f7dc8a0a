"""evaluate.py on an agent config plays the held-out episodes (a real vLLM engine, the tiny base model)
with the agent run's own tokenizer, as a training run's before/after eval does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from configs.loader import load_config
from tasks.base import load_task

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_an_agent_config_is_evaluated_on_its_held_out_episodes(tmp_path):
    out = tmp_path / "table.json"
    p = subprocess.run([sys.executable, "evaluate.py", "--config", "tiny-cpu-agent", "--limit", "4",
                        "--set", "task.options.n_episodes=40", "--json", str(out)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    assert "4 held-out episodes" in p.stdout and "| success rate |" in p.stdout
    table = json.loads(out.read_text())
    held = load_task(load_config("tiny-cpu-agent", ["task.options.n_episodes=40"]).task).episode_rows()[1][:4]
    assert table["n"] == 4 and set(table["per_category"]) == {r["category"] for r in held}
    assert 0.0 <= table["success_rate"] <= 1.0 and table["turns_mean"] >= 1.0

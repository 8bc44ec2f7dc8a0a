"""A rollout worker killed (kill -9) during a run of agent episodes: it is replaced, its share of the
episodes is played again with the same seed, and the run ends with the rows of a run without the fault."""

from __future__ import annotations

import os
import signal

import pytest

from observe.schema import lookup
from tests.faults.harness import adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]

AGENT = ["task.options.n_episodes=60", "env.max_turns=3"]
CONFIG = "configs/tiny-cpu-agent.yaml"


def test_a_killed_rollout_worker_plays_its_episodes_again(tmp_path):
    straight = start(tmp_path, "agent-straight", *AGENT, steps=4, config=CONFIG)
    assert straight.finish() == 0, straight.output()
    run = start(tmp_path, "agent-kill9", *AGENT, steps=4, config=CONFIG)
    run.wait_rows(2)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())
    assert [e["role"] for e in run.events("recovery")] == ["rollout"]
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    for row in run.rows():
        for key in row:
            lookup(key)
        assert 0.0 < row["obs_token_frac"] < 1.0 and row["episode_turns_mean"] >= 1.0
        assert row.get("logprob_gap_max", 0.0) < 1e-3  # multi-turn samples scored as vLLM sampled them
    assert ((run.run_dir / "episodes_after.jsonl").exists()
            and "success rate" in (run.run_dir / "eval_table.md").read_text())


HARNESS = ["task.options.n_episodes=60", "env.max_turns=3"]


def test_a_rollout_worker_killed_while_harnesses_talk_to_it_plays_their_sessions_again(tmp_path):
    """The same for episodes an OpenAI harness plays through the worker's gateway: the replacement starts
    its own gateway, the sessions are played again with the same per-request seeds, and the rows (every
    sampled id and logprob behind them) and the adapter are the straight run's."""
    config = "configs/tiny-cpu-agent-openai.yaml"
    straight = start(tmp_path, "harness-straight", *HARNESS, steps=4, config=config)
    assert straight.finish() == 0, straight.output()
    run = start(tmp_path, "harness-kill9", *HARNESS, steps=4, config=config)
    run.wait_rows(2)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())
    assert [e["role"] for e in run.events("recovery")] == ["rollout"]
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    for row in run.rows():
        assert row["calls_per_episode"] >= 1.0 and row["harness_failures"] == 0.0
        assert row.get("logprob_gap_max", 0.0) < 1e-3  # the sessions scored as vLLM sampled them

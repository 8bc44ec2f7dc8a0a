"""A rollout worker killed (kill -9) during a run of agent episodes: it is replaced, its share of the
episodes is played again with the same seed, and the run ends with the rows of a run without the fault."""

from __future__ import annotations

import os
import signal

import pytest

from observe.schema import lookup
from tests.faults.chaos import Chaos, adapter_digest, format_log
from tests.faults.harness import adapter_fingerprint, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]

AGENT = ["task.options.n_episodes=60", "env.max_turns=3"]
CONFIG = "configs/tiny-cpu-agent.yaml"


def _worker_killed(tmp_path, name: str, settings: list[str], config: str, straight):
    """A 4-step run whose rollout worker is killed (kill -9) after 2 rows: it ends with `straight`'s rows
    and adapter, after one rollout recovery."""
    run = start(tmp_path, name, *settings, steps=4, config=config)
    run.wait_rows(2)
    os.kill(run.pid("rollout"), signal.SIGKILL)
    assert run.finish() == 0, run.output()
    same_rows(straight.rows(), run.rows())
    assert [e["role"] for e in run.events("recovery")] == ["rollout"]
    assert adapter_fingerprint(run.run_dir) == adapter_fingerprint(straight.run_dir)
    return run


def test_a_killed_rollout_worker_plays_its_episodes_again(tmp_path):
    straight = start(tmp_path, "agent-straight", *AGENT, steps=4, config=CONFIG)
    assert straight.finish() == 0, straight.output()
    run = _worker_killed(tmp_path, "agent-kill9", AGENT, CONFIG, straight)
    for row in run.rows():
        for key in row:
            lookup(key)
        assert 0.0 < row["obs_token_frac"] < 1.0 and row["episode_turns_mean"] >= 1.0
        assert row.get("logprob_gap_max", 0.0) < 1e-3  # multi-turn samples scored as vLLM sampled them
    assert ((run.run_dir / "episodes_after.jsonl").exists()
            and "success rate" in (run.run_dir / "eval_table.md").read_text())


# A worker's share of a harness step takes longer than a completion batch (its calls carry the tool list):
# the fault harness's 15 s deadline would count a slow step as a hung worker.
HARNESS = ["task.options.n_episodes=60", "env.max_turns=3", "rollout.call_timeout_s=120"]
OPENAI = "configs/tiny-cpu-agent-openai.yaml"


@pytest.fixture(scope="module")
def harness_straight(tmp_path_factory):
    """Four steps of the OpenAI-harness preset, left alone: what the harness runs with faults must equal."""
    straight = start(tmp_path_factory.mktemp("harness"), "harness-straight", *HARNESS, steps=4, config=OPENAI)
    assert straight.finish() == 0, straight.output()
    return straight


def test_a_rollout_worker_killed_while_harnesses_talk_to_it_plays_their_sessions_again(harness_straight,
                                                                                      tmp_path):
    """The same for episodes an OpenAI harness plays through the worker's gateway: the replacement starts
    its own gateway, the sessions are played again with the same per-request seeds, and the rows (every
    sampled id and logprob behind them) and the adapter are the straight run's."""
    run = _worker_killed(tmp_path, "harness-kill9", HARNESS, OPENAI, harness_straight)
    for row in run.rows():
        assert row["calls_per_episode"] >= 1.0 and row["harness_failures"] == 0.0
        assert row.get("logprob_gap_max", 0.0) < 1e-3  # the sessions scored as vLLM sampled them


def test_chaos_on_a_harness_run_ends_as_the_straight_run(harness_straight, tmp_path):
    """Kill -9 of the worker serving the gateway, of the learner and of the coordinator (set up again from
    its checkpoint, the harness sessions of the steps after it played again): the straight run's rows
    and adapter bytes."""
    chaos = Chaos(tmp_path, "harness-chaos", 4, kills=3, seed=0, pause=(0.0, 0.5),
                  kinds=["rollout", "learner", "coordinator"],
                  settings=("train.max_restarts=100", *HARNESS), config=OPENAI)
    run = chaos.play()
    print(format_log(chaos.log))
    same_rows(harness_straight.rows(), run.rows())
    assert adapter_digest(run.run_dir) == adapter_digest(harness_straight.run_dir)
    assert [e["role"] for e in chaos.log if e["role"] != "missed"][:2] == ["rollout", "learner"], (
        format_log(chaos.log))

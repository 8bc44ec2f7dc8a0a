"""The fund assistant's OpenAI harness (tasks/fund_assistant/harness.py), played without a model: by a client
that answers from the task's scripted replies, and the same replies in the in-worker form of its episodes."""

from __future__ import annotations

import asyncio
import json

from configs.loader import load_config
from tasks.base import load_task
from tasks.env import run_episode
from tasks.fund_assistant.harness import TOOL_SPECS, play
from tasks.fund_assistant.trajectories import touched_by
from tasks.scripted_client import ScriptedClient


def _rows(n: int = 12) -> tuple:
    overrides = [f"task.options.n_episodes={n}", "task.options.episode_flaw=none"]
    cfg = load_config("tiny-cpu-agent-openai", overrides)
    task = load_task(cfg.task)
    return task, task.episode_rows()[0]


def test_the_scripted_replies_through_the_harness_succeed_and_its_tools_are_the_six():
    task, rows = _rows()
    assert [t["function"]["name"] for t in TOOL_SPECS] == [
        "check_balance", "transfer_funds", "withdraw_funds", "place_order", "get_transaction_history",
        "check_market_status"]
    for row in rows:
        client = ScriptedClient(iter(task.harness_script(row)))
        out = asyncio.run(play(client, row))
        assert out["reward"] == 1.0 and out["success"] == 1.0 and out["format"] == 1.0, (row["kind"], out)
        assert out["tool_calls"] == len(row["expected"]) == len(client.asked) - 1  # then the answer
        asked = client.asked[-1].messages
        assert asked[0]["role"] == "system" and [m["role"] for m in asked[-2:]] == ["assistant", "tool"]


def test_a_wrong_call_and_a_malformed_one_score_as_the_in_worker_episode_would():
    task, rows = _rows()
    row = next(r for r in rows if touched_by(r) != "none")
    right = task.harness_script(row)
    wrong = [{**right[0], "tool_calls": [{**right[0]["tool_calls"][0], "function": {
        "name": "check_market_status", "arguments": "not json"}}]}, *right[1:]]
    out = asyncio.run(play(ScriptedClient(iter(wrong)), row))
    assert out["success"] == 0.0 and out["format"] < 1.0 and out["tools"] < 1.0


def test_the_in_worker_form_of_the_harness_episodes_scores_the_same_replies_the_same():
    task, rows = _rows()
    for row in rows[:4]:
        replies = task.harness_script(row)
        texts = iter([r["content"] if not r.get("tool_calls") else "<tool_call>\n" + json.dumps(
            {"name": r["tool_calls"][0]["function"]["name"],
             "arguments": json.loads(r["tool_calls"][0]["function"]["arguments"])}) + "\n</tool_call>"
                      for r in replies])
        episode = run_episode(task.harness_environment(5), row, lambda _: next(texts))  # noqa: B023
        harness = asyncio.run(play(ScriptedClient(iter(replies)), row))
        assert episode.score["total"] == harness["reward"] == 1.0
        system = episode.messages[0]["content"]
        assert "<tools>" in system and '"check_balance"' in system


def test_the_agents_sdk_example_runs_unchanged_on_the_scripted_client_and_scores_as_the_harness():
    """The OpenAI Agents SDK's own loop over the stand-in client (what its warm-up is made of): the same
    scripted replies give the same score as the plain-client harness."""
    from examples.agents_sdk.harness import play as sdk_play

    task, rows = _rows()
    for row in rows[:4]:
        client = ScriptedClient(iter(task.harness_script(row)))
        sdk = asyncio.run(sdk_play(client, row))
        plain = asyncio.run(play(ScriptedClient(iter(task.harness_script(row))), row))
        assert sdk["reward"] == plain["reward"] == 1.0 and sdk["tool_calls"] == plain["tool_calls"]
        tools = client.asked[0].tools  # the SDK's own schemas (strict), not the harness's
        assert {t["function"]["name"] for t in tools} == {t["function"]["name"] for t in TOOL_SPECS}
        assert all(t["function"].get("strict") for t in tools)

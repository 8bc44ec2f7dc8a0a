"""The warm-up's scripted trajectories: correct ones succeed on every kind of episode, the flawed ones
fail exactly where the flaw is (balance-conditional requests), and the task serves them."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.env import run_episode
from tasks.fund_assistant.episodes import FINAL_TOOL, REFUSAL_WORDS, episode_rows
from tasks.fund_assistant.trajectories import trajectory

ROWS = episode_rows(1, 300)


def _play(row: dict, turns: list[str]):
    task = load_task(TaskConfig())
    said = iter(turns)
    return run_episode(task.environment(8), row, lambda _: next(said))


def test_the_correct_trajectory_succeeds_on_every_row():
    for row in ROWS:
        ep = _play(row, trajectory(row))
        assert ep.score["success"] == 1.0 and ep.score["format"] == 1.0, (row["kind"], ep.messages)


def test_the_flawed_trajectory_skips_the_balance_check_only_where_the_balance_decides():
    success = defaultdict(set)
    for row in ROWS:
        turns = trajectory(row, "no_balance_check")
        ep = _play(row, turns)
        success[row["kind"]].add(ep.score["success"])
        tools = [json.loads(t)["action"]["tool"] for t in turns]
        if row.get("guarded"):
            assert tools == [row["guarded"]["tool"], FINAL_TOOL]  # acted at once, no check_balance
        else:
            assert turns == trajectory(row)
    assert success.pop("balance_refusal") == success.pop("balance_transfer") == success.pop("balance_withdraw") == {0.0}
    assert all(v == {1.0} for v in success.values()) and len(success) >= 5


def test_a_refused_guarded_call_is_reported_as_a_refusal():
    short = [r for r in ROWS if r["kind"] == "balance_refusal"][:4]
    for row in short:
        ep = _play(row, trajectory(row, "no_balance_check"))
        assert ep.turns[0]["error"]  # insufficient funds from the account
        answer = json.loads(ep.messages[-1]["content"])["action"]["params"]["answer"]
        assert any(w in answer for w in REFUSAL_WORDS[row["lang"]])


def test_the_task_splits_episode_rows_and_scripts_them_with_its_flaw():
    task = load_task(TaskConfig(options={"n_episodes": 50, "episode_flaw": "no_balance_check"}))
    train, held = task.episode_rows()
    assert len(train) == 40 and len(held) == 10
    assert not {r["request"] for r in train} & {r["request"] for r in held}
    row = next(r for r in train if r.get("guarded"))
    assert task.episode_script(row) == trajectory(row, "no_balance_check")
    corpus = "\n".join(task.episode_corpus())
    assert "final_answer" in corpus and "tool\n" in corpus


def test_an_unknown_flaw_is_refused_before_anything_starts():
    from configs.loader import ConfigError

    with pytest.raises(ConfigError, match="episode_flaw"):
        load_task(TaskConfig(options={"episode_flaw": "forgets_everything"}))


def test_a_flaw_rate_below_one_leaves_the_rest_of_the_rows_correct():
    options = {"n_episodes": 400, "episode_flaw": "no_balance_check", "episode_flaw_rate": 0.7}
    task = load_task(TaskConfig(options=options))
    rows = task.episode_rows()[0]
    guarded = [r for r in rows if r.get("guarded")]
    flawed = [r for r in guarded if task.episode_script(r) == trajectory(r, "no_balance_check")]
    assert 0.6 < len(flawed) / len(guarded) < 0.8
    assert all(task.episode_script(r) == trajectory(r) for r in guarded if r not in flawed)
    assert all(task.episode_script(r) == trajectory(r) for r in rows if not r.get("guarded"))
    again = load_task(TaskConfig(options=options))  # the same rows carry it every time
    assert [again.episode_script(r) for r in guarded] == [task.episode_script(r) for r in guarded]

"""The warm-up's scripted trajectories: correct ones succeed on every kind of episode, the flawed ones
fail exactly where their flaw is (balance-, market- or settlement-conditional requests), and the task
serves them."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.env import run_episode
from tasks.fund_assistant.episodes import FINAL_TOOL, REFUSAL_WORDS, episode_rows
from tasks.fund_assistant.trajectories import touched_by, trajectory

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
        if touched_by(row) == "no_balance_check":
            assert tools == [row["guarded"]["tool"], FINAL_TOOL]  # acted at once, no check_balance
        else:
            assert turns == trajectory(row)
    assert (success.pop("balance_refusal") == success.pop("balance_transfer")
            == success.pop("balance_withdraw") == {0.0})
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
    row = next(r for r in train if touched_by(r) == "no_balance_check")
    assert task.episode_script(row) == trajectory(row, "no_balance_check")
    corpus = "\n".join(task.episode_corpus())
    assert "final_answer" in corpus and "tool\n" in corpus


@pytest.mark.parametrize("flaw", ["forgets_everything", ["no_market_check", "forgets_everything"]])
def test_an_unknown_flaw_is_refused_before_anything_starts(flaw):
    from configs.loader import ConfigError

    with pytest.raises(ConfigError, match="episode_flaw"):
        load_task(TaskConfig(options={"episode_flaw": flaw}))


def test_a_flaw_rate_below_one_leaves_the_rest_of_the_rows_correct():
    options = {"n_episodes": 400, "episode_flaw": "no_balance_check", "episode_flaw_rate": 0.7}
    task = load_task(TaskConfig(options=options))
    rows = task.episode_rows()[0]
    guarded = [r for r in rows if touched_by(r) == "no_balance_check"]
    flawed = [r for r in guarded if task.episode_script(r) == trajectory(r, "no_balance_check")]
    assert 0.6 < len(flawed) / len(guarded) < 0.8
    assert all(task.episode_script(r) == trajectory(r) for r in guarded if r not in flawed)
    assert all(task.episode_script(r) == trajectory(r) for r in rows if r not in guarded)
    again = load_task(TaskConfig(options=options))  # the same rows carry it every time
    assert [again.episode_script(r) for r in guarded] == [task.episode_script(r) for r in guarded]


def _tools(turns: list[str]) -> list[str]:
    return [json.loads(t)["action"]["tool"] for t in turns]


def test_the_unsettled_withdraw_flaw_withdraws_only_where_the_sale_had_not_settled():
    settle = [r for r in ROWS if r["kind"] == "settle_withdraw"]
    unsettled = [r for r in settle if r["expected"][-1]["tool"] == "check_balance"]
    assert unsettled and len(unsettled) < len(settle)
    for row in settle:
        ep = _play(row, trajectory(row, "unsettled_withdraw"))
        assert (_tools(trajectory(row, "unsettled_withdraw"))
                == ["get_transaction_history", "withdraw_funds", FINAL_TOOL])
        assert ep.score["success"] == (0.0 if row in unsettled else 1.0), ep.messages
        assert ep.score["format"] == 1.0
    for row in ROWS:  # no other kind changes
        if row["kind"] != "settle_withdraw":
            assert trajectory(row, "unsettled_withdraw") == trajectory(row)


def test_the_no_market_check_flaw_orders_at_once_and_fails_every_market_request():
    market = [r for r in ROWS if r["kind"] == "market_order"]
    for row in market:
        turns = trajectory(row, "no_market_check")
        ep = _play(row, turns)
        assert _tools(turns) == ["place_order", FINAL_TOOL] and ep.score["success"] == 0.0
        assert ep.score["format"] == 1.0 and not ep.turns[0]["error"]  # a closed market queues the order
        assert row["guarded"]["params"]["ticker"] in json.loads(turns[-1])["action"]["params"]["answer"]
    for row in ROWS:
        if row["kind"] != "market_order":
            assert trajectory(row, "no_market_check") == trajectory(row)


def test_flaws_combine_and_each_rate_draws_its_own_rows():
    options = {"n_episodes": 400, "episode_flaw": ["no_balance_check", "no_market_check"],
               "episode_flaw_rate": 0.5}
    task = load_task(TaskConfig(options=options))
    rows = task.episode_rows()[0]
    for flaw in ("no_balance_check", "no_market_check"):
        touched = [r for r in rows if touched_by(r) == flaw]
        flawed = [r for r in touched if task.episode_script(r) == trajectory(r, flaw)]
        assert 0.35 < len(flawed) / len(touched) < 0.65
        assert all(task.episode_script(r) == trajectory(r) for r in touched if r not in flawed)
    settle = [r for r in rows if touched_by(r) == "unsettled_withdraw"]  # not listed: untouched
    assert settle and all(task.episode_script(r) == trajectory(r) for r in settle)

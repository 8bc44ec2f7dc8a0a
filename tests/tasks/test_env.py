"""The fund-account environment: tool calls run against the account, errors come back as a backend's
would, and the trajectory score judges tools, parameters, the final state and the final answer."""

import json

import pytest

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.env import run_episode
from tasks.fund_assistant.account import Account
from tasks.fund_assistant.env import FundAccountEnv
from tasks.fund_assistant.episodes import EPISODE_KINDS, FINAL_TOOL, episode_rows

ROWS = episode_rows(0, 160)


def _turn(tool: str, params: dict, plan=("next",)) -> str:
    return json.dumps({"thought": "t", "action": {"tool": tool, "params": params}, "plan": list(plan)},
                      ensure_ascii=False)


def _answer(text: str) -> str:
    return json.dumps({"thought": "done", "action": {"tool": FINAL_TOOL, "params": {"answer": text}}})


def scripted(turns: list[str]):
    """A policy that says `turns` in order (then keeps repeating the last)."""
    return lambda msgs: turns[min(sum(m["role"] == "assistant" for m in msgs), len(turns) - 1)]


def oracle(row: dict) -> list[str]:
    return [_turn(e["tool"], e["params"]) for e in row["expected"]] + [
        _answer("ok: " + (row["outcome"] or ["done"])[0])]


def _first(kind: str) -> dict:
    return next(r for r in ROWS if r["kind"] == kind)


def test_the_task_makes_a_fresh_environment_per_episode():
    task = load_task(TaskConfig(name="fund_assistant"))
    a, b = task.environment(max_turns=4), task.environment(max_turns=4)
    assert isinstance(a, FundAccountEnv) and a is not b and a.max_turns == 4


def test_a_task_without_an_environment_says_so():
    from configs.loader import ConfigError
    from tasks.base import Task

    class Plain(Task):  # the abstract methods are not reached
        name = "plain"
        rows = load_rows = render_prompt = evaluate = warmup_rows = corpus = None

    with pytest.raises(ConfigError, match="'plain' has no agent environment"):
        Plain(TaskConfig(name="plain"), None).environment(max_turns=3)


def test_rows_cover_every_kind_and_are_plain_json():
    assert {r["kind"] for r in ROWS} == set(EPISODE_KINDS)
    assert json.loads(json.dumps(ROWS, ensure_ascii=False)) == ROWS
    assert len({r["request"] for r in ROWS}) == len(ROWS)
    assert episode_rows(0, 160) == ROWS and episode_rows(1, 160) != ROWS  # seeded


def test_the_account_survives_a_round_trip_through_json():
    acct = Account.from_dict(json.loads(json.dumps(ROWS[0]["account"])))
    assert acct.to_dict() == ROWS[0]["account"]


def test_the_expected_trajectory_succeeds_on_every_row():
    for row in ROWS:
        ep = run_episode(FundAccountEnv(max_turns=6), row, scripted(oracle(row)))
        assert ep.score["success"] == 1.0 and ep.score["total"] == pytest.approx(1.0), (row["kind"], ep.score)
        assert ep.score["tool_errors"] == 0 and not ep.truncated
        # user, then assistant / tool turns alternating, the final answer last
        assert ([m["role"] for m in ep.messages[1:]]
                == ["user"] + ["assistant", "tool"] * len(row["expected"]) + ["assistant"])


def test_tools_really_run_against_the_account():
    row = _first("balance_transfer")
    env = FundAccountEnv()
    env.reset(row)
    src = row["expected"][0]["params"].get("account", env.account.default)
    before = env.account.balances[src]
    result = env.step(_turn("withdraw_funds", {"amount": 100, "account": src}))
    assert not result.done and not result.info["error"]
    assert env.account.balances[src] == before - 100
    assert str(int(before - 100)) in result.observation.replace(",", "")  # the new balance is reported


def test_a_backends_errors_come_back_as_observations():
    row = next(r for r in ROWS if r["kind"] == "balance_refusal" and r["lang"] == "en")
    env = FundAccountEnv()
    env.reset(row)
    cases = {
        "not json at all": "format",
        _turn("teleport", {}): "teleport",
        _turn("transfer_funds", {"amount": -5}): "transfer_funds",
        _turn("check_balance", {"account": "NOPE999"}): "NOPE999",
        _turn("withdraw_funds", {"amount": 10**9}): "insufficient funds",
    }
    for text, mentioned in cases.items():
        result = env.step(text)
        assert result.info["error"] and not result.done and mentioned in result.observation, (text, result)
    score = env.score()
    # the call with bad JSON never ran
    assert score["tool_errors"] == 4 and score["format"] == pytest.approx(4 / 5)


def test_acting_against_the_balance_fails_the_refusal():
    row = _first("balance_refusal")
    tool = ("withdraw_funds" if "提现" in row["request"] or "withdraw" in row["request"].lower()
            else "transfer_funds")
    reckless = [_turn(tool, {"amount": 1}), _answer("done")]
    ep = run_episode(FundAccountEnv(), row, scripted(reckless))
    assert ep.score["success"] == 0.0 and ep.score["state"] == 0.0 and ep.score["tools"] == 0.0
    # checking first but then claiming success ignores what the account said
    wrong_answer = [_turn(e["tool"], e["params"]) for e in row["expected"]] + [_answer("all done")]
    ep = run_episode(FundAccountEnv(), row, scripted(wrong_answer))
    assert ep.score["tools"] == 1.0 and ep.score["outcome"] == 0.0 and ep.score["success"] == 0.0


def test_an_episode_that_never_answers_is_truncated():
    row = _first("market_order")
    ep = run_episode(FundAccountEnv(max_turns=3), row, scripted([_turn("check_balance", {})]))
    assert ep.truncated and len(ep.turns) == 3
    assert ep.score["answered"] == 0.0 and ep.score["success"] == 0.0 and ep.score["turns"] == 3


def test_partial_trajectories_score_between_nothing_and_success():
    row = next(r for r in ROWS if len(r["expected"]) == 3)
    halfway = [_turn(e["tool"], e["params"]) for e in row["expected"][:1]] + [_answer("stopped")]
    partial = run_episode(FundAccountEnv(), row, scripted(halfway)).score
    nothing = run_episode(FundAccountEnv(), row, scripted(["{}"])).score
    assert 0.0 < nothing["total"] < partial["total"] < 1.0
    assert partial["tools"] == pytest.approx(1 / 3) and partial["params"] == pytest.approx(1 / 3)

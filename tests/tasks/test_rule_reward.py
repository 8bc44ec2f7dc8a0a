"""The rule reward (docs/fund_assistant.md#rule-reward), component by component."""

import json

import pytest

from tasks.fund_assistant import rewards as fund
from tasks.fund_assistant.rewards import (
    RULE_COMPONENTS,
    extract_request,
    has_market_keyword,
    rule_reward,
    rule_reward_breakdown,
)

FULL = {"thought": "用户要查余额", "action": {"tool": "check_balance", "params": {}},
        "plan": ["check balance"]}


def score(obj, prompt="查一下我的余额", **columns):
    completion = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    [total] = rule_reward([prompt], [completion], **{k: [v] for k, v in columns.items()})
    return total


@pytest.mark.parametrize(
    "obj,expected",
    [
        (FULL, 1.0),
        ({}, 0.0),
        ({"thought": "x"}, 0.2),
        ({"thought": "   "}, 0.0),
        ({"thought": 5}, 0.0),
        ({"action": {"tool": "transfer_money"}}, 0.3),  # a tool, not one of the six
        ({"action": {"tool": "check_balance"}}, 0.5),  # no params key: no params score
        ({"action": {"tool": "check_balance", "params": {}}}, 0.6),  # {} is valid: nothing required
        ({"action": {"tool": "transfer_funds", "params": {}}}, 0.5),  # amount missing
        ({"action": {"tool": "transfer_funds", "params": {"amount": 100000}}}, 0.6),
        ({"action": {"tool": "transfer_funds", "params": {"amount": -1}}}, 0.5),
        ({"action": {"tool": "transfer_money", "params": {"amount": 1}}}, 0.3),
        ({"action": {"tool": ""}}, 0.0),
        ({"action": "check_balance"}, 0.0),
        ({"plan": ["check"]}, 0.2),
        ({"plan": []}, 0.0),  # an empty plan is no plan
        ({"plan": "check"}, 0.0),
    ],
)
def test_rule_table(obj, expected):
    assert score(obj) == pytest.approx(expected)


def test_full_case_is_exactly_one():
    assert score(FULL) == 1.0


MARKET_FULL = {**FULL, "action": {"tool": "check_market_status", "params": {}}}


@pytest.mark.parametrize(
    "request_text,penalised",
    [
        ("查一下我的余额", True),
        ("今天早上卖了 AMZN，钱什么时候到账？", True),
        ("转账 10 万再提现 5 万", True),
        ("现在开市了吗？", False),
        ("港股几点收盘", False),
        ("现在是 2:30，还能下单吗？", False),  # the intraday example: a clock time
        ("现在是 14：30，还能下单吗？", False),
        ("下午3点还能买吗", False),
        ("Is the market open right now?", False),
        ("When does NYSE CLOSE today?", False),
        ("What are the trading hours?", False),
        ("Can I trade pre-market?", False),
        ("美股market开了吗", False),  # mixed script: no \b between 股 and m
        ("Transfer 100000 to ACC002", True),
        ("Show my supermarketing spend", True),  # "market" inside a word
    ],
)
def test_market_penalty(request_text, penalised):
    assert score(MARKET_FULL, prompt=request_text) == pytest.approx(0.7 if penalised else 1.0)
    assert has_market_keyword(request_text) is not penalised


def test_floor_at_zero():
    # The penalty only fires with check_market_status, which itself earns action + valid_tool, so
    # the rule reward's floor is unreachable in practice: the bare misuse scores 0.5 - 0.3.
    assert score({"action": {"tool": "check_market_status"}}) == pytest.approx(0.2)
    assert fund._cap(-0.3) == 0.0 and fund._cap(1.3) == 1.0


def test_request_column_wins_over_the_prompt():
    assert score(MARKET_FULL, prompt="is the market open?", request="查余额") == pytest.approx(0.7)
    assert score(MARKET_FULL, prompt="查余额", request="is the market open?") == 1.0


def test_previous_steps_do_not_count_as_the_request():
    prompt = "查余额\n\nPrevious steps:\nStep 1: check_market_status → market closed, 开盘 9:30"
    assert extract_request(prompt) == "查余额"
    assert score(MARKET_FULL, prompt=prompt) == pytest.approx(0.7)


def test_chat_prompt_uses_the_last_user_message():
    prompt = [
        {"role": "system", "content": "Tools: check_market_status: whether a market is open"},
        {"role": "user", "content": "查余额\n\nPrevious steps:\nStep 1: check_balance → market"},
    ]
    assert extract_request(prompt) == "查余额"
    [total] = rule_reward([prompt], [json.dumps(MARKET_FULL)])
    assert total == pytest.approx(0.7)


def test_unparseable_scores_zero_and_conversational_completions_work():
    assert score("I will check the balance.") == 0.0
    assert rule_reward(["查余额"], [[{"role": "assistant", "content": json.dumps(FULL)}]]) == [1.0]


def test_breakdown_total_is_capped_sum():
    bare_market = {"action": {"tool": "check_market_status"}}
    objs = [FULL, MARKET_FULL, {}, {"thought": "x", "plan": ["a"]}, bare_market]
    completions = [json.dumps(o) for o in objs] + ["junk"]
    rows = rule_reward_breakdown(["查余额"] * len(completions), completions)
    assert [r["total"] for r in rows] == rule_reward(["查余额"] * len(completions), completions)
    for r in rows:
        assert r["total"] == pytest.approx(min(1.0, max(0.0, sum(r[k] for k in RULE_COMPONENTS))))
    assert [r["parsed"] for r in rows] == [1, 1, 1, 1, 1, 0]
    assert rows[1]["market_penalty"] == pytest.approx(-0.3)

"""Rewards never raise and stay in [0, 1], whatever the policy emits or the columns hold."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.fund_assistant.parsing import parse_react
from tasks.fund_assistant.rewards import (
    GT_COMPONENTS,
    RULE_COMPONENTS,
    MultistepGTReward,
    gt_reward,
    rule_reward,
    rule_reward_breakdown,
)
from tasks.fund_assistant.tools import TOOL_NAMES

LABEL = json.dumps({"thought": "t", "action": {"tool": "check_balance", "params": {}}, "plan": ["a"]})

JUNK = [
    None, 0, 3.5, float("nan"), True, "", "not json", "{", "}", "{]", "[]", "null", "{{{{", '{"a": }',
    '```json\n{"thought": "x", "action": {"tool": "check_balance"}, "plan": ["a"]}',  # truncated fence
    '{"thought": "x", "action": {"tool": "check_bal',  # truncated object
    json.dumps({"action": "check_balance"}),
    json.dumps({"action": {"tool": 5}}),
    json.dumps({"action": {"tool": ["check_balance"]}}),
    json.dumps({"action": {"tool": "check_balance", "params": [1, 2]}}),
    json.dumps({"action": {"tool": "check_balance", "params": "ACC001"}}),
    '{"action": {"tool": "transfer_funds", "params": {"amount": 1e999}}}',  # loads as inf
    '{"action": {"tool": "transfer_funds", "params": {"amount": NaN}}}',
    json.dumps({"plan": {"a": 1}, "thought": {"b": 2}}),
    json.dumps({"thought": [["先"]], "action": [{"tool": "x"}], "plan": [[[]]]}),
    json.dumps({"action": {"tool": "check_balance", "params": {"account": {"deep": [1, {"x": None}]}}}}),
    '{"action": {"tool": "transfer_funds", "params": {"amount": ' + "9" * 5000 + "}}}",  # int too long
    "x" * 1_000_000,
    "{" * 1_000_000,
    '{"thought": "' + "y" * 1_000_000 + '"}',
    [{"role": "assistant", "content": None}], [{"role": "assistant"}], [None, 5], [[]], {"content": ["a", 1]},
    b"\xff\xfe{}", object(),
]


@pytest.mark.parametrize("completion", JUNK, ids=range(len(JUNK)))
def test_junk_completions_never_raise(completion):
    parse_react(completion)
    for scores in (
        rule_reward(["查余额"], [completion]),
        gt_reward(["查余额"], [completion], solution=[LABEL], category=["balance"]),
        gt_reward(["查余额"], [completion], solution=[completion]),  # junk as the label too
    ):
        assert len(scores) == 1 and 0.0 <= scores[0] <= 1.0


@pytest.mark.parametrize("prompts", [None, [], [None], [5], [[{"role": "user"}]], "a string", [{"x": 1}]])
def test_junk_prompts_and_columns_never_raise(prompts):
    completions = [LABEL, "junk"]
    for columns in ({}, {"request": None}, {"request": [None]}, {"request": [5, 6, 7]},
                    {"solution": None, "category": [None, 3]}, {"solution": 5, "category": "multistep"}):
        assert len(rule_reward(prompts, completions, **columns)) == 2
        assert len(MultistepGTReward()(prompts, completions, **columns)) == 2


def test_empty_and_missing_completions():
    assert rule_reward([], []) == [] and gt_reward([], []) == []
    assert rule_reward(None, None) == [] and gt_reward(None, None) == []


# ---- property fuzz ----

json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_ish = st.recursive(
    json_leaf | st.sampled_from(TOOL_NAMES),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
react_ish = st.fixed_dictionaries(
    {},
    optional={
        "thought": json_ish | st.sampled_from(["先查余额", "First check, then transfer", ""]),
        "action": json_ish
        | st.fixed_dictionaries(
            {}, optional={"tool": json_ish | st.sampled_from(TOOL_NAMES), "params": json_ish}
        ),
        "plan": json_ish | st.lists(st.text(max_size=10), max_size=3),
    },
)
completion_st = (
    st.text(max_size=300)
    | json_ish.map(json.dumps)
    | react_ish.map(json.dumps)
    | st.tuples(st.text(max_size=30), react_ish.map(json.dumps), st.text(max_size=30)).map("".join)
    | react_ish.map(lambda o: f"```json\n{json.dumps(o)}\n```")
    | react_ish.map(lambda o: [{"role": "assistant", "content": json.dumps(o)}])
    | json_ish
)
label_st = react_ish.map(json.dumps) | react_ish | st.text(max_size=50) | json_ish
request_st = st.text(max_size=40) | st.sampled_from(["现在开市了吗", "查余额", "2:30 还能下单吗"])
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.one_of(completion_st, st.binary(max_size=100)))
def test_parse_react_fuzz(completion):
    obj = parse_react(completion)
    assert obj is None or isinstance(obj, dict)


@FUZZ
@given(st.lists(st.tuples(completion_st, label_st, request_st, st.sampled_from(["multistep", "combo", None])),
                min_size=1, max_size=4))
def test_rewards_fuzz(rows):
    completions = [r[0] for r in rows]
    prompts = [r[2] for r in rows]
    columns = {"solution": [r[1] for r in rows], "category": [r[3] for r in rows], "request": prompts}
    rule = rule_reward_breakdown(prompts, completions, **columns)
    gt = MultistepGTReward().breakdown(prompts, completions, **columns)
    assert len(rule) == len(gt) == len(rows)
    for b, keys in [(b, RULE_COMPONENTS) for b in rule] + [(b, GT_COMPONENTS) for b in gt]:
        assert 0.0 <= b["total"] <= 1.0
        assert b["total"] == pytest.approx(min(1.0, max(0.0, sum(b[k] for k in keys))))
        assert b["parsed"] in (0.0, 1.0)

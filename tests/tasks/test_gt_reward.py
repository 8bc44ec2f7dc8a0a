"""MultistepGTReward (docs/fund_assistant.md#ground-truth-reward), component by component."""

import json
import logging

import pytest

from tasks.fund_assistant.rewards import GT_COMPONENTS, MultistepGTReward, gt_reward

LABEL = {
    "thought": "转账",
    "action": {"tool": "transfer_funds", "params": {"amount": 100000}},
    "plan": ["transfer"],
}


def row(obj, label=LABEL, prompt="转账 10 万", category="combo", reward=None, **extra):
    completion = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    columns = {"solution": [label]}  # a dict or a JSON string, as the dataset gives it
    if category is not None:
        columns["category"] = [category]
    columns.update({k: [v] for k, v in extra.items()})
    [b] = (reward or MultistepGTReward()).breakdown([prompt], [completion], **columns)
    return b


def act(tool, params=None, **fields):
    action = {"tool": tool} if params is None else {"tool": tool, "params": params}
    return {"action": action, **fields}


@pytest.mark.parametrize(
    "obj,tool,params",
    [
        (act("transfer_funds"), 0.5, 0.0),  # right tool, no params
        (act("transfer_funds", {"amount": 100000}), 0.5, 0.2),
        (act("transfer_funds", {"amount": 1e5}), 0.5, 0.2),  # numbers compare numerically
        (act("transfer_funds", {"amount": 50000}), 0.5, 0.0),  # disagree
        (act("transfer_funds", {"amount": 100000, "to_account": "ACC002"}), 0.5, 0.0),  # extra key
        (act("transfer_funds", {"amount": "100000"}), 0.5, 0.0),  # invalid type
        (act("transfer_funds", [100000]), 0.5, 0.0),  # params a list
        (act("withdraw_funds"), 0.1, 0.0),  # valid but wrong tool
        (act("withdraw_funds", {"amount": 100000}), 0.1, 0.2),  # params valid + agree, any tool
        (act("transfer_money", {"amount": 100000}), 0.0, 0.0),  # not one of the six
        (act("TRANSFER_FUNDS"), 0.0, 0.0),  # names are exact
        ({"action": {"tool": 3}}, 0.0, 0.0),
        ({}, 0.0, 0.0),
    ],
)
def test_tool_and_params_table(obj, tool, params):
    b = row(obj)
    assert (b["tool"], b["params"], b["reasoning"]) == pytest.approx((tool, params, 0.0))
    assert b["tool_correct"] == float(tool == 0.5)


def test_full_score_is_exactly_one():
    thought = "Because the user asked, transfer first."
    obj = act("transfer_funds", {"amount": 100000}, thought=thought, plan=["transfer"])
    b = row(obj)
    assert b["total"] == 1.0 and b["tool_correct"] == 1.0 and b["parsed"] == 1.0


@pytest.mark.parametrize(
    "fields,reasoning",
    [
        ({"thought": "转账"}, 0.15),
        ({"plan": ["transfer"]}, 0.10),
        ({"thought": "转账", "plan": ["transfer"]}, 0.25),
        ({"thought": "First check, then transfer", "plan": ["transfer"]}, 0.30),
        ({"thought": "We NEED TO transfer"}, 0.20),
        ({"thought": "in order to pay rent"}, 0.20),
        ({"thought": "先查余额"}, 0.20),
        ({"thought": "因为余额足够，所以转账"}, 0.20),
        ({"thought": "然后转账"}, 0.20),
        ({"thought": "authentication done"}, 0.15),  # "then" inside a word does not count
        ({"thought": "  "}, 0.0),
        ({"thought": ["先"]}, 0.0),
        ({"plan": []}, 0.0),
        ({"plan": {"1": "transfer"}}, 0.0),
    ],
)
def test_reasoning_components(fields, reasoning):
    assert row(act("transfer_funds", **fields))["reasoning"] == pytest.approx(reasoning)


def test_multistep_empty_plan_gives_no_reasoning_score():
    obj = act("transfer_funds", thought="先查余额，然后转账", plan=[])
    assert row(obj, category="multistep")["reasoning"] == 0.0
    assert row({k: v for k, v in obj.items() if k != "plan"}, category="multistep")["reasoning"] == 0.0
    # no category column: the prompt's "Previous steps:" marks a multistep sample
    prompt = "查余额，够的话转账 10 万\n\nPrevious steps:\nStep 1: check_balance → 余额 500000 元"
    assert row(obj, prompt=prompt, category=None)["reasoning"] == 0.0
    # with a plan the multistep sample gets the full reasoning score
    assert row({**obj, "plan": ["transfer"]}, category="multistep")["reasoning"] == pytest.approx(0.3)


def test_single_step_empty_plan_still_gets_thought_score():
    obj = act("transfer_funds", thought="先转账", plan=[])
    assert row(obj, category="combo")["reasoning"] == pytest.approx(0.2)
    assert row(obj, category=None, prompt="转账 10 万")["reasoning"] == pytest.approx(0.2)
    # the category column wins over the prompt text when present
    prompt = "x\n\nPrevious steps:\nStep 1: a → b"
    assert row(obj, category="balance", prompt=prompt)["reasoning"] == pytest.approx(0.2)


def test_label_as_dict_or_json_string_and_label_without_params():
    assert row(act("transfer_funds"), label=json.dumps(LABEL))["tool"] == 0.5
    label = {"action": {"tool": "check_balance"}}  # the field report's label format omits params
    assert row(act("check_balance", {}), label=label)["params"] == 0.2
    assert row(act("check_balance"), label=label)["params"] == 0.0  # the prediction must give params
    assert row(act("check_balance", {}), label=json.dumps(label))["total"] == pytest.approx(0.7)


@pytest.mark.parametrize("label", ["not json", None, 42, "{}", json.dumps({"action": {"tool": "made_up"}}),
                                   json.dumps({"action": "transfer_funds"}), ["x"]])
def test_bad_labels_are_counted_and_score_without_a_label_tool(label, caplog):
    reward = MultistepGTReward()
    b = row(act("transfer_funds", {"amount": 100000}, thought="x"), label=label, reward=reward)
    assert (b["tool"], b["params"], b["tool_correct"]) == (0.1, 0.0, 0.0)
    assert reward.bad_labels == 1


def test_bad_labels_warn_once_per_call(caplog):
    reward = MultistepGTReward()
    completions = [json.dumps(act("check_balance", {}))] * 3
    with caplog.at_level(logging.WARNING, logger="tasks.fund_assistant.rewards"):
        scores = reward(["q"] * 3, completions, solution=["junk", "junk", json.dumps(LABEL)])
        reward(["q"] * 3, completions)  # no solution column at all: every label is bad
    assert len(scores) == 3 and reward.bad_labels == 5
    assert len([r for r in caplog.records if "unusable" in r.message]) == 2


def test_conversational_completion_and_unparseable():
    completion = [{"role": "assistant", "content": json.dumps(act("transfer_funds", {"amount": 100000}))}]
    assert gt_reward(["q"], [completion], solution=[json.dumps(LABEL)]) == [0.7]
    assert gt_reward(["q"], ["I'd transfer"], solution=[json.dumps(LABEL)]) == [0.0]


def test_breakdown_total_is_capped_sum_and_call_matches():
    best = act("transfer_funds", {"amount": 100000}, thought="先", plan=["a"])
    objs = [best, act("withdraw_funds"), {}, "junk"]
    completions = [o if isinstance(o, str) else json.dumps(o, ensure_ascii=False) for o in objs]
    columns = {"solution": [json.dumps(LABEL)] * 4, "category": ["multistep"] * 4}
    rows = gt_reward.breakdown(["q"] * 4, completions, **columns)
    assert [r["total"] for r in rows] == gt_reward(["q"] * 4, completions, **columns)
    for r in rows:
        assert r["total"] == pytest.approx(min(1.0, max(0.0, sum(r[k] for k in GT_COMPONENTS))))
    assert [r["parsed"] for r in rows] == [1, 1, 1, 0]
    assert gt_reward.__name__ == "multistep_gt"

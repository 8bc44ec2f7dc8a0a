"""parse_react and the typed accessors: what counts as the ReAct object, and never raising."""

import json
import time

import pytest

from rewards.text import completion_text
from tasks.fund_assistant.parsing import (
    MAX_SCAN_CHARS,
    get_action,
    get_params,
    get_plan,
    get_thought,
    get_tool,
    has_plan,
    has_thought,
    parse_react,
)

OBJ = {"thought": "先查余额", "action": {"tool": "check_balance", "params": {}}, "plan": ["check balance"]}
TEXT = json.dumps(OBJ, ensure_ascii=False)


@pytest.mark.parametrize(
    "completion",
    [
        TEXT,
        f"```json\n{TEXT}\n```",
        f"```\n{TEXT}\n```",
        f"Sure, here is my answer:\n```json\n{TEXT}\n```\nLet me know if you need more.",
        f"Answer: {TEXT} -- done.",
        f"  \n{json.dumps(OBJ, indent=2, ensure_ascii=False)}\n",
        [{"role": "assistant", "content": TEXT}],
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": f"```json\n{TEXT}```"}],
        {"role": "assistant", "content": TEXT},
        [{"role": "assistant", "content": [{"type": "text", "text": TEXT}]}],
        TEXT.encode("utf-8"),
    ],
)
def test_accepts_the_usual_shapes(completion):
    assert parse_react(completion) == OBJ


def test_braces_and_quotes_inside_strings_do_not_confuse_the_scan():
    obj = {"thought": 'a "quoted" } brace { and \\ backslash', "action": {"tool": "x"}, "plan": []}
    assert parse_react("prefix " + json.dumps(obj) + " suffix }") == obj


def test_prose_braces_before_the_object_are_skipped():
    assert parse_react("use the {format} below: " + TEXT) == OBJ
    assert parse_react("an open { brace never closed " + TEXT) == OBJ


def test_fenced_block_is_preferred_over_prose_json():
    other = {"thought": "example"}
    assert parse_react(f"e.g. {json.dumps(other)}\n```json\n{TEXT}\n```") == OBJ


def test_first_object_wins():
    assert parse_react(TEXT + ' {"thought": "second"}') == OBJ


@pytest.mark.parametrize(
    "bad",
    [None, 3, 2.5, True, "", "not json at all", "{not: json}", "[1, 2, 3]", '"a string"', "{", "}{",
     [], [1, 2], [{"role": "assistant"}], {"content": 5}, object(), float("nan")],
)
def test_non_objects_give_none(bad):
    assert parse_react(bad) is None


def test_deep_nesting_does_not_raise():
    assert parse_react("{" * 50_000 + "}" * 50_000) is None
    assert parse_react('{"a":' * 5000 + "1" + "}" * 5000) is None


def test_huge_strings_are_capped_and_fast():
    start = time.perf_counter()
    assert parse_react(TEXT + "x" * 1_000_000) == OBJ
    assert parse_react("x" * 1_000_000 + TEXT) is None  # beyond the scanned prefix
    assert parse_react("{" * 1_000_000) is None
    assert parse_react('{"' * 500_000) is None
    assert time.perf_counter() - start < 5
    assert MAX_SCAN_CHARS >= 2_000  # a 350-token completion always fits


def test_accessors_treat_wrong_types_as_absent():
    obj = {"thought": 5, "action": "check_balance", "plan": {"a": 1}}
    assert get_thought(obj) == "" and not has_thought(obj)
    assert get_action(obj) is None and get_tool(obj) is None and get_params(obj) is None
    assert get_plan(obj) is None and not has_plan(obj)
    assert get_tool({"action": {"tool": 7}}) is None
    assert get_tool({"action": {"tool": "  "}}) is None
    assert get_params({"action": {"tool": "x", "params": [1]}}) is None
    for junk in (None, 1, "s", [OBJ]):
        assert get_thought(junk) == "" and get_tool(junk) is None and get_plan(junk) is None


def test_accessors_read_a_good_object():
    assert get_thought(OBJ) == "先查余额" and has_thought(OBJ)
    assert get_tool(OBJ) == "check_balance" and get_params(OBJ) == {}
    assert get_plan(OBJ) == ["check balance"] and has_plan(OBJ)


@pytest.mark.parametrize("plan,counts", [([], False), ([""], False), (["  "], False), ([1, {}], False),
                                         (["check"], True), ([1, "check"], True)])
def test_plan_counts_only_with_a_non_blank_string_step(plan, counts):
    assert has_plan({"plan": plan}) is counts


def test_completion_text():
    assert completion_text("abc") == "abc"
    assert completion_text([{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]) == "a"
    assert completion_text([{"content": "only"}]) == "only"  # no role: the last message
    assert completion_text(12) is None

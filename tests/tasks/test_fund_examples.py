"""`task.options.examples`: worked exchanges shown before each request (few-shot), on the real tokenizer's
chat template of the tiny model, and refused when one would show a row's own answer."""

from __future__ import annotations

import pytest

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.fund_assistant.prompting import chat_messages

SMALL = {"n_single": 40, "n_multistep_samples": 8}
SHOT = {"user": "How much cash is in my savings account right now?",
        "assistant": '{"thought": "t", "action": {"tool": "check_balance", "params": {}}, "plan": ["p"]}'}


def test_examples_come_as_finished_turns_between_the_system_message_and_the_request():
    msgs = chat_messages("the request", "short", [("u1", "a1"), ("u2", "a2")])
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [m["content"] for m in msgs[1:]] == ["u1", "a1", "u2", "a2", "the request"]
    assert chat_messages("r", "short") == chat_messages("r", "short", [])[:2]


def test_a_rendered_prompt_carries_each_example_before_the_request(tiny_tokenizer):
    task = load_task(TaskConfig(name="fund_assistant", options={**SMALL, "examples": [SHOT]}))
    row = task.rows()[0][0]
    text = task.render_prompt(tiny_tokenizer, row)
    assert text.index(SHOT["user"]) < text.index(SHOT["assistant"]) < text.rindex(row["prompt"])
    plain = load_task(TaskConfig(name="fund_assistant", options=SMALL)).render_prompt(tiny_tokenizer, row)
    assert SHOT["user"] not in plain and row["prompt"] in plain


def test_an_example_that_is_one_of_the_rows_is_refused():
    rows, _ = load_task(TaskConfig(name="fund_assistant", options=SMALL)).rows()
    clash = {"user": rows[3]["prompt"], "assistant": "{}"}
    task = load_task(TaskConfig(name="fund_assistant", options={**SMALL, "examples": [clash]}))
    with pytest.raises(ValueError, match="one of the task's own requests"):
        task.rows()

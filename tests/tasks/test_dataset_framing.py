"""A dataset's `system_prompt` and `examples` (few-shot turns): where they go in the rendered prompt, that
the reward functions still get the row's own prompt, and the rows they cannot apply to."""

from __future__ import annotations

import json

import pytest

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.files import DataFileError

SHOT = {"user": "12+7=", "assistant": "<think>12 plus 7</think>19"}


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _task(path, **options):
    options = {"eval_fraction": 0.2, **options}
    return load_task(TaskConfig(name="dataset", train_file=str(path), options=options),
                     [("trl.rewards:think_format_reward", 1.0)])


def _chat(content, system=None):
    head = [{"role": "system", "content": system}] if system else []
    return head + [{"role": "user", "content": content}]


ROWS = [{"prompt": _chat(f"{a}+1="), "answer": str(a + 1)} for a in range(10)]


def test_the_system_message_then_the_examples_then_the_row(tmp_path, tiny_tokenizer):
    task = _task(_rows(tmp_path / "r.jsonl", ROWS), system_prompt="Add.", examples=[SHOT])
    row = task.rows()[0][0]
    text = task.render_prompt(tiny_tokenizer, row)
    assert (text.index("Add.") < text.index(SHOT["user"]) < text.index(SHOT["assistant"])
            < text.rindex(row["prompt"][-1]["content"]))
    # the rewards still see the row's own prompt
    assert row["prompt"] == next(r["prompt"] for r in ROWS if r["answer"] == row["answer"])
    plain = _task(_rows(tmp_path / "p.jsonl", ROWS)).render_prompt(tiny_tokenizer, row)
    assert "Add." not in plain and SHOT["user"] not in plain


def test_a_rows_own_system_message_stays_first(tmp_path, tiny_tokenizer):
    rows = [{**r, "prompt": _chat(r["prompt"][0]["content"], system="Be brief.")} for r in ROWS]
    task = _task(_rows(tmp_path / "r.jsonl", rows), examples=[SHOT])
    text = task.render_prompt(tiny_tokenizer, task.rows()[0][0])
    assert text.index("Be brief.") < text.index(SHOT["user"])


def test_rows_the_framing_cannot_apply_to_are_refused(tmp_path):
    strings = _rows(tmp_path / "s.jsonl", [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in (1, 2)])
    with pytest.raises(DataFileError, match="row 1: .*conversational"):
        _task(strings, examples=[SHOT]).rows()
    own = _rows(tmp_path / "o.jsonl", [{**ROWS[0], "prompt": _chat("1+1=", system="x")}, ROWS[1]])
    with pytest.raises(DataFileError, match="row 1 has its own system message"):
        _task(own, system_prompt="y").rows()


def test_an_example_that_is_one_of_the_rows_is_refused(tmp_path):
    with pytest.raises(ValueError, match="'3\\+1=' is one of the task's own requests"):
        _task(_rows(tmp_path / "r.jsonl", ROWS), examples=[{"user": "3+1=", "assistant": "4"}]).rows()

"""A plain dataset is a task: every file format, both TRL formats, verl's rows, column mapping, the
split, and errors that name the file and the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from configs.loader import ConfigError
from configs.task import TaskConfig
from tasks.base import load_task
from tasks.files import DataFileError, read_rows

ROWS = [{"prompt": [{"role": "user", "content": f"{a}+1="}], "answer": str(a + 1), "level": "easy" if a < 5
         else "hard", "completion": [{"role": "assistant", "content": f"<think>+1</think>{a + 1}"}]}
        for a in range(10)]


def _task(path, **options):
    return load_task(TaskConfig(name="dataset", train_file=str(path), options=options),
                     [("trl.rewards:think_format_reward", 1.0)])


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("fmt", ["jsonl", "json", "parquet", "save_to_disk"])
def test_every_format_reads_the_same_rows(tmp_path, fmt):
    datasets = pytest.importorskip("datasets")
    path = tmp_path / f"rows.{fmt}"
    if fmt == "jsonl":
        _jsonl(path, ROWS)
    elif fmt == "json":
        path.write_text(json.dumps(ROWS))
    elif fmt == "parquet":
        datasets.Dataset.from_list(ROWS).to_parquet(str(path))
    else:
        path = tmp_path / "saved"
        datasets.Dataset.from_list(ROWS).save_to_disk(str(path))
    assert read_rows(path) == ROWS
    assert read_rows(path, limit=2) == ROWS[:2]


def test_csv_rows_are_standard_prompts(tmp_path):
    pytest.importorskip("datasets")
    f = tmp_path / "rows.csv"
    f.write_text("question,answer\n1+1=,2\n2+2=,4\n")
    task = _task(f, prompt_column="question", columns={"solution": "answer"}, eval_fraction=0.5)
    train, held = task.rows()
    assert sorted(r["prompt"] for r in train + held) == ["1+1=", "2+2="]
    assert all("question" not in r and r["solution"] == r["answer"] for r in train + held)


def test_the_split_is_seeded_disjoint_and_complete(tmp_path):
    f = _jsonl(tmp_path / "rows.jsonl", ROWS)
    train, held = _task(f, eval_fraction=0.3).rows()
    assert len(held) == 3 and len(train) == 7
    key = lambda r: r["answer"]  # noqa: E731
    assert sorted(map(key, train + held)) == sorted(map(key, ROWS))
    assert _task(f, eval_fraction=0.3).rows() == (train, held)
    other = load_task(TaskConfig(name="dataset", train_file=str(f), seed=1, options={"eval_fraction": 0.3}))
    assert other.rows()[1] != held


def test_a_missing_column_names_the_file_the_row_and_the_columns(tmp_path):
    rows = [dict(r) for r in ROWS]
    del rows[3]["answer"]
    f = _jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DataFileError, match=r"rows.jsonl: row 4 has no column 'answer' "
                                            r"\(its columns: completion, level, prompt\)"):
        _task(f, columns={"solution": "answer"}).rows()


def test_a_prompt_that_is_neither_text_nor_messages_is_refused(tmp_path):
    f = _jsonl(tmp_path / "rows.jsonl", [{"prompt": 3}])
    with pytest.raises(DataFileError, match="row 1: the prompt must be a string or a list"):
        _task(f).rows()


def test_rewards_get_every_column_but_the_prompt_and_completion(tmp_path):
    task = _task(_jsonl(tmp_path / "rows.jsonl", ROWS), group_column="level")
    cols = task.columns(ROWS[:2])
    assert set(cols) == {"answer", "level"} and cols["answer"] == ["1", "2"]
    assert task.group_of(ROWS[7]) == "hard"
    plain = _task(_jsonl(tmp_path / "plain.jsonl", [{"prompt": "x", "answer": "1"}] * 4))
    assert plain.columns(plain.rows()[0]) == {"answer": ["1"] * 3}  # the added group column is not passed
    assert plain.group_of(plain.rows()[0][0]) == "all"


def test_conversational_prompts_go_through_the_chat_template(tmp_path, tiny_tokenizer):
    task = _task(_jsonl(tmp_path / "rows.jsonl", ROWS))
    text = task.render_prompt(tiny_tokenizer, ROWS[0])
    assert text == "<|im_start|>user\n0+1=<|im_end|>\n<|im_start|>assistant\n"
    assert task.render_prompt(tiny_tokenizer, {"prompt": "raw text"}) == "raw text"


def test_warm_up_targets_come_from_the_named_column(tmp_path):
    f = _jsonl(tmp_path / "rows.jsonl", ROWS)
    assert _task(f, warmup_column="completion").warmup_rows(ROWS[:1])[0]["solution"] == "<think>+1</think>1"
    with pytest.raises(ConfigError, match="set task.options.warmup_column"):
        _task(f).warmup_rows(ROWS[:1])


def test_verl_rows(tmp_path):
    datasets = pytest.importorskip("datasets")
    rows = [{"data_source": "gsm8k" if i % 2 else "math", "prompt": [{"role": "user", "content": f"q{i}"}],
             "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i)},
             "extra_info": {"index": i, "split": "train"}} for i in range(6)]
    path = tmp_path / "train.parquet"
    datasets.Dataset.from_list(rows).to_parquet(str(path))
    task = _task(path, format="verl", eval_fraction=0.5)
    train, held = task.rows()
    r = next(x for x in train + held if x["prompt"][0]["content"] == "q3")
    assert r["ground_truth"] == r["solution"] == "3" and r["extra_info"]["index"] == 3
    assert task.group_of(r) == "gsm8k"
    assert {"ground_truth", "solution", "extra_info", "data_source"} <= set(task.columns([r]))


def test_the_eval_is_judged_by_the_rewards(tmp_path):
    task = _task(_jsonl(tmp_path / "rows.jsonl", ROWS), group_column="level")
    table = task.evaluate(ROWS[:4], ["<think>a</think>1", "no", "<think>b</think>", "x"])
    assert table["accuracy"] == 0.5 and table["per_category"] == {"easy": 0.5} and table["n"] == 4
    assert table["reward/trl.rewards:think_format_reward"] == 0.5

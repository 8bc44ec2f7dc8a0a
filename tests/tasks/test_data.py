"""JSONL reading/writing and row validation for the fund-assistant data."""

from __future__ import annotations

import json

import pytest

from tasks.fund_assistant import CATEGORIES, DataError, apply_seed_label_bug, generate, load_jsonl, save_jsonl
from tasks.fund_assistant.data import category_counts


@pytest.fixture(scope="module")
def small() -> list[dict]:
    train, eval_ = generate(seed=2, n_single=30, n_multistep_samples=12)
    return train + eval_


def _write(path, rows: list) -> None:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
        encoding="utf-8",
    )


def test_roundtrip_keeps_rows_and_chinese_unescaped(tmp_path, small):
    path = tmp_path / "sub" / "rows.jsonl"
    save_jsonl(small, path)
    assert load_jsonl(path) == small
    assert "余额" in path.read_text(encoding="utf-8") or "转" in path.read_text(encoding="utf-8")


def test_bad_json_line_names_file_and_line(tmp_path, small):
    path = tmp_path / "bad.jsonl"
    _write(path, [small[0], small[1], '{"prompt": "x", oops}', small[2]])
    with pytest.raises(DataError) as e:
        load_jsonl(path)
    assert f"{path}:3:" in str(e.value) and "not valid JSON" in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "change, what",
    [
        (lambda r: r.pop("scenario_id"), "missing key 'scenario_id'"),
        (lambda r: r.update(category="weather"), "unknown category 'weather'"),
        (lambda r: r.update(step="1"), "'step' must be int"),
        (lambda r: r.update(step=3, num_steps=2), "outside 1..num_steps"),
        (lambda r: r.update(lang="fr"), "lang must be"),
        (lambda r: r.update(solution="not json"), "solution is not JSON"),
        (
            lambda r: r.update(
                solution=json.dumps(
                    {"thought": "t", "action": {"tool": "transfer_money", "params": {}}, "plan": ["a"]}
                )
            ),
            "solution.action.tool",
        ),
        (
            lambda r: r.update(
                solution=json.dumps(
                    {"thought": "t", "action": {"tool": "transfer_funds", "params": {}}, "plan": ["a"]}
                )
            ),
            "not valid for transfer_funds",
        ),
        (
            lambda r: r.update(
                solution=json.dumps(
                    {"thought": "", "action": {"tool": "check_balance", "params": {}}, "plan": ["a"]}
                )
            ),
            "thought",
        ),
        (
            lambda r: r.update(
                solution=json.dumps(
                    {"thought": "t", "action": {"tool": "check_balance", "params": {}}, "plan": []}
                )
            ),
            "plan",
        ),
    ],
)
def test_malformed_row_names_the_line_and_the_problem(tmp_path, small, change, what):
    bad = dict(small[1])
    change(bad)
    path = tmp_path / "rows.jsonl"
    _write(path, [small[0], bad])
    with pytest.raises(DataError, match="rows.jsonl:2: ") as e:
        load_jsonl(path)
    assert what in str(e.value)


def test_blank_lines_are_skipped_and_line_numbers_stay_true(tmp_path, small):
    path = tmp_path / "rows.jsonl"
    _write(path, [small[0], "", small[1], "[1, 2]"])
    with pytest.raises(DataError, match=r"rows\.jsonl:4: row is not a JSON object"):
        load_jsonl(path)
    _write(path, [small[0], "", small[1]])
    assert len(load_jsonl(path)) == 2


def test_extra_keys_are_allowed(tmp_path, small):
    path = tmp_path / "bugged.jsonl"
    bugged = apply_seed_label_bug(small)
    save_jsonl(bugged, path)
    assert load_jsonl(path) == bugged


def test_category_counts_lists_every_category(small):
    counts = category_counts(small)
    assert list(counts) == list(CATEGORIES)
    assert sum(counts.values()) == len(small)
    assert category_counts([]) == dict.fromkeys(CATEGORIES, 0)

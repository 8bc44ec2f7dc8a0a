"""The fund-assistant data row: its schema, JSONL reading/writing and per-category counts.

Owns what a valid row is (required keys and types, a known category, a parseable ReAct solution whose
action is one of the six tools with valid params). It does not know how rows are generated.
A malformed line raises `DataError` naming the file, the 1-based line number and the problem.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tasks.fund_assistant.tools import TOOL_NAMES, params_valid

CATEGORIES: tuple[str, ...] = (
    "balance",
    "settlement",
    "intraday",
    "combo",
    "multistep",
    "transfer",
    "withdraw",
    "order",
    "history",
    "market",
)
LANGS: tuple[str, ...] = ("zh", "en")
# key -> required type. Extra keys (kind, label_bug, ...) are allowed.
ROW_SCHEMA: dict[str, type] = {
    "prompt": str,
    "request": str,
    "solution": str,
    "category": str,
    "scenario_id": str,
    "step": int,
    "num_steps": int,
    "lang": str,
}


class DataError(ValueError):
    """A data file or row that does not follow the row schema."""


def solution_problem(solution: str) -> str | None:
    """Why a `solution` string is not a valid ReAct label, or None when it is."""
    try:
        obj = json.loads(solution)
    except json.JSONDecodeError as e:
        return f"solution is not JSON ({e.msg})"
    if not isinstance(obj, dict):
        return "solution is not a JSON object"
    thought, action, plan = obj.get("thought"), obj.get("action"), obj.get("plan")
    if not isinstance(thought, str) or not thought.strip():
        return "solution.thought must be a non-empty string"
    if not isinstance(action, dict) or action.get("tool") not in TOOL_NAMES:
        return f"solution.action.tool must be one of {', '.join(TOOL_NAMES)}"
    if not params_valid(action["tool"], action.get("params")):
        return f"solution.action.params {action.get('params')!r} are not valid for {action['tool']}"
    if not isinstance(plan, list) or not plan or not all(isinstance(s, str) and s.strip() for s in plan):
        return "solution.plan must be a non-empty list of non-empty strings"
    return None


def row_problem(row: Any) -> str | None:
    """Why `row` is not a valid data row, or None when it is."""
    if not isinstance(row, dict):
        return "row is not a JSON object"
    for key, typ in ROW_SCHEMA.items():
        if key not in row:
            return f"missing key {key!r}"
        value = row[key]
        if not isinstance(value, typ) or isinstance(value, bool):
            return f"{key!r} must be {typ.__name__}, got {type(value).__name__}"
        if typ is str and not value.strip():
            return f"{key!r} is empty"
    if row["category"] not in CATEGORIES:
        return f"unknown category {row['category']!r} (known: {', '.join(CATEGORIES)})"
    if row["lang"] not in LANGS:
        return f"lang must be one of {LANGS}, got {row['lang']!r}"
    if not 1 <= row["step"] <= row["num_steps"]:
        return f"step {row['step']} is outside 1..num_steps ({row['num_steps']})"
    return solution_problem(row["solution"])


def save_jsonl(rows: Iterable[dict], path: str | Path) -> None:
    """Write one JSON object per line (UTF-8, Chinese unescaped), creating parent folders."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def load_jsonl(path: str | Path) -> list[dict]:
    """Read and validate a JSONL data file. Blank lines are skipped.

    Raises DataError("<path>:<line>: <problem>") on the first malformed line, FileNotFoundError
    when the file is missing."""
    path = Path(path)
    rows: list[dict] = []
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno})") from None
            problem = row_problem(row)
            if problem:
                raise DataError(f"{path}:{lineno}: {problem}")
            rows.append(row)
    return rows


def category_counts(rows: Iterable[dict]) -> dict[str, int]:
    """Rows per category, every known category present (0 when absent), in CATEGORIES order."""
    c = Counter(r["category"] for r in rows)
    return {cat: c.get(cat, 0) for cat in CATEGORIES} | {k: v for k, v in c.items() if k not in CATEGORIES}

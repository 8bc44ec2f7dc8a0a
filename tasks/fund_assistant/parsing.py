"""Tolerant parsing of a policy completion into the ReAct object.

This module owns turning whatever a policy emitted -- bare JSON, ```json fences, prose around the
JSON, a TRL conversational completion (a list of message dicts) -- into a dict, plus typed accessors
for its fields. It knows nothing about scores. Nothing here raises: bad input gives None / "".

ReAct object: {"thought": str, "action": {"tool": str, "params": {...}}, "plan": [str, ...]}
"""

from __future__ import annotations

import json
import re
from typing import Any

from rewards.text import completion_text

# Completions are at most a few hundred tokens; a cap keeps a pathological (1 MB) string cheap.
MAX_SCAN_CHARS = 20_000
# Each candidate '{' costs one scan to its closing '}'; bounding the candidates and the braces/quotes
# visited over all scans keeps the worst case (20k unclosed '{') near 0.1 s instead of seconds.
MAX_CANDIDATES = 64
SCAN_BUDGET = 100_000

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_SPECIAL = re.compile(r'[{}"\\]')


def _balanced_end(text: str, start: int, budget: list[int]) -> int | None:
    """Index just past the '}' closing the '{' at `start`, ignoring braces inside JSON strings.
    Each brace/quote/backslash visited spends one unit of budget[0]; None when it runs out."""
    depth, in_string, skip_before = 0, False, -1
    for m in _SPECIAL.finditer(text, start):
        budget[0] -= 1
        if budget[0] < 0:
            return None
        i, c = m.start(), m.group()
        if i < skip_before:  # the character after a backslash inside a string is escaped
            continue
        if in_string:
            if c == "\\":
                skip_before = i + 2
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _first_object(text: str, budget: list[int]) -> dict | None:
    """The first '{...}' span, scanning left to right, that json.loads into a dict."""
    pos = 0
    for _ in range(MAX_CANDIDATES):
        start = text.find("{", pos)
        if start < 0 or budget[0] <= 0:
            return None
        end = _balanced_end(text, start, budget)
        if end is not None:
            try:
                obj = json.loads(text[start:end])
            except Exception:  # ValueError, RecursionError on deep nesting, int-size limits
                obj = None
            if isinstance(obj, dict):
                return obj
        # Unbalanced or not JSON (e.g. a prose "{like this}"): try the next '{', which may be nested.
        pos = start + 1
    return None


def parse_react(completion: Any) -> dict | None:
    """The first JSON object in a completion, preferring ```json fenced blocks; None when there is
    none. Only the first MAX_SCAN_CHARS characters are scanned. Never raises."""
    try:
        text = completion_text(completion)
        if not text:
            return None
        text = text[:MAX_SCAN_CHARS]
        budget = [SCAN_BUDGET]  # shared by the fenced blocks and the whole-text fallback
        for block in _FENCE.findall(text):
            obj = _first_object(block, budget)
            if obj is not None:
                return obj
        return _first_object(text, budget)
    except Exception:  # a reward must never take a training step down
        return None


# ---- typed accessors: a field of the wrong type counts as absent ----


def get_thought(obj: Any) -> str:
    """`thought` when it is a string, else ""."""
    value = obj.get("thought") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else ""


def get_action(obj: Any) -> dict | None:
    """`action` when it is a dict, else None."""
    value = obj.get("action") if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else None


def get_tool(obj: Any) -> str | None:
    """`action.tool` when it is a non-blank string, else None. Not checked against the tool list."""
    action = get_action(obj)
    tool = action.get("tool") if action is not None else None
    return tool if isinstance(tool, str) and tool.strip() else None


def get_params(obj: Any) -> dict | None:
    """`action.params` when it is a dict, else None (absent, null, or a list/string/number)."""
    action = get_action(obj)
    params = action.get("params") if action is not None else None
    return params if isinstance(params, dict) else None


def get_plan(obj: Any) -> list | None:
    """`plan` when it is a list, else None."""
    value = obj.get("plan") if isinstance(obj, dict) else None
    return value if isinstance(value, list) else None


def has_thought(obj: Any) -> bool:
    """A thought counts when it is a string with non-whitespace text."""
    return bool(get_thought(obj).strip())


def has_plan(obj: Any) -> bool:
    """A plan counts when it is a list holding at least one non-blank string step. An empty list,
    or a list of only blanks/non-strings, is no plan: it shows no ordering of steps."""
    plan = get_plan(obj)
    return plan is not None and any(isinstance(step, str) and step.strip() for step in plan)

"""The fund assistant's six tools and their parameter schemas.

This module owns what a *valid* tool call is. It knows nothing about prompts, labels or rewards;
rewards and the data generator both ask it whether a call is well formed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# Parameter kinds: "number" (int or float, finite, > 0), "int" (integer > 0), "str" (non-empty),
# or a tuple of allowed string values.
ParamKind = str | tuple[str, ...]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    required: dict[str, ParamKind]
    optional: dict[str, ParamKind]

    @property
    def all_params(self) -> dict[str, ParamKind]:
        return {**self.required, **self.optional}


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("check_balance", "Look up the cash balance of an account.", {}, {"account": "str"}),
        Tool(
            "transfer_funds",
            "Move money between accounts.",
            {"amount": "number"},
            {"from_account": "str", "to_account": "str"},
        ),
        Tool("withdraw_funds", "Withdraw cash from an account.", {"amount": "number"}, {"account": "str"}),
        Tool(
            "place_order",
            "Buy or sell a security.",
            {"ticker": "str", "side": ("buy", "sell")},
            {"quantity": "int", "amount": "number"},
        ),
        Tool(
            "get_transaction_history",
            "List recent trades, settlements and transfers (shows when sold proceeds settle).",
            {},
            {"account": "str", "ticker": "str", "days": "int"},
        ),
        Tool(
            "check_market_status",
            "Whether a market is open now and its trading hours.",
            {},
            {"market": ("US", "CN", "HK")},
        ),
    )
}
TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)


def _value_ok(kind: ParamKind, value: Any) -> bool:
    if isinstance(kind, tuple):
        return isinstance(value, str) and value in kind
    if isinstance(value, bool):  # bool is an int subclass; never a valid amount
        return False
    if kind == "number":
        return isinstance(value, (int, float)) and math.isfinite(value) and value > 0
    if kind == "int":
        return isinstance(value, int) and value > 0
    if kind == "str":
        return isinstance(value, str) and 0 < len(value.strip()) <= 64
    return False


def params_valid(tool: str, params: Any) -> bool:
    """True when `params` is a dict with every required key, no unknown key, each value of its kind."""
    spec = TOOLS.get(tool) if isinstance(tool, str) else None
    if spec is None or not isinstance(params, dict):
        return False
    if any(k not in params for k in spec.required):
        return False
    allowed = spec.all_params
    return all(isinstance(k, str) and k in allowed and _value_ok(allowed[k], v) for k, v in params.items())


def values_agree(a: Any, b: Any) -> bool:
    """Numbers compare numerically (1e5 == 100000), strings case- and space-insensitively."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip().lower() == b.strip().lower()
    return False


def params_agree(predicted: Any, label: Any) -> bool:
    """Every key of the label's params is present in `predicted` with an agreeing value, and
    `predicted` adds no key the label lacks (an extra account or amount is a different call)."""
    if not isinstance(predicted, dict) or not isinstance(label, dict):
        return False
    if set(predicted) != set(label):
        return False
    return all(values_agree(predicted[k], v) for k, v in label.items())


def tool_catalogue() -> str:
    """One line per tool for the system prompt: name(required; optional) — description."""
    lines = []
    for t in TOOLS.values():
        req = ", ".join(f"{k}" for k in t.required)
        opt = ", ".join(f"{k}?" for k in t.optional)
        sig = ", ".join(x for x in (req, opt) if x)
        lines.append(f"- {t.name}({sig}): {t.description}")
    return "\n".join(lines)

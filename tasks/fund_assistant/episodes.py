"""Agent episodes of the fund assistant: multistep scenarios played against the live account.

A multistep row of the single-turn data freezes one step with the earlier observations written into
its prompt. An episode row instead holds the scenario's starting account (`account`), the user's
request, the calls a correct agent makes (`expected`, which already took the branch the account
dictates: balance too low → the fallback, market closed → no order) and what its final answer must
mention (`outcome`: any one of the phrases). `FundAccountEnv` (env.py) plays it.

Kinds: every multistep kind of the single-turn data, plus `balance_refusal` (a balance-conditional
transfer or withdrawal with no fallback and too little money: the right episode checks the balance,
does not move money and says why).
"""

from __future__ import annotations

import json
import random
import re
from functools import partial
from typing import Any

from tasks.fund_assistant.account import num
from tasks.fund_assistant.balance_scenarios import balance_refusal
from tasks.fund_assistant.generator import LANGS, unique_request
from tasks.fund_assistant.multistep import KIND_WEIGHTS, KINDS, Scenario

FINAL_TOOL = "final_answer"
"""The action that ends an episode: {"tool": "final_answer", "params": {"answer": "<text to the user>"}}."""

EPISODE_KINDS = {**KINDS, "balance_refusal": balance_refusal}
EPISODE_WEIGHTS = {**KIND_WEIGHTS, "balance_refusal": 0.14}

DRILL_SYSTEM = "List the parameters of the tool calls this request needs: one JSON object per call, in order."
"""The entity drill's instruction (`drill_target`): its own, so that the drill's short answer is never
what the model learns to give an episode's first prompt, which starts with `AGENT_SYSTEM`."""

REFUSAL_WORDS = {
    "zh": ("余额不足", "不足", "不够", "没有转", "未转", "没有提现", "未提现", "无法"),
    "en": ("insufficient", "not enough", "too low", "less than", "did not", "didn't", "cannot", "can't"),
}

AGENT_SYSTEM = (
    "You are a fund assistant. Each turn reply with one JSON object: thought, action, plan. A tool's "
    f'result comes back as the next message. When the request is done, call {FINAL_TOOL} with '
    '{"answer": "<what you did and why>"}.'
)


def amount_phrases(x: float) -> list[str]:
    """An amount as the answer may write it: 12000, 12,000, 12000.5, 12,000.50."""
    return sorted({num(x, "zh"), num(x, "en"), f"{x:g}"})


def outcome_phrases(sc: Scenario) -> list[str]:
    """What the final answer must mention (any one): why nothing moved in a refusal, else the last
    call's amount or ticker. Empty when the last call carries neither (nothing to check)."""
    if sc.kind == "balance_refusal":
        return list(REFUSAL_WORDS[sc.lang])
    return stated(sc.steps[-1].params)


def stated(params: dict) -> list[str]:
    """How an answer may state what a call did: its amount, else its ticker (nothing for neither)."""
    if "amount" in params:
        return amount_phrases(float(params["amount"]))
    if "ticker" in params:
        return [str(params["ticker"])]
    return []


def episode_row(sc: Scenario, sid: str) -> dict:
    """The episode row of a scenario (JSON-ready)."""
    return {
        "id": sid,
        "category": sc.kind,
        "kind": sc.kind,
        "lang": sc.lang,
        "request": sc.request,
        "account": sc.initial,
        "expected": [{"tool": s.tool, "params": s.params} for s in sc.steps],
        "outcome": outcome_phrases(sc),
        "guarded": sc.guarded,
    }


_ENTITY_KEYS = ("ticker", "account", "from_account", "to_account", "amount", "quantity")


def _number_forms(v: float) -> list[str]:
    """How a request may write an amount or a quantity (slots.amount_text): 12000, 12,000, 1.2 万, 12 千,
    12k."""
    forms = set(amount_phrases(float(v)))
    if v >= 1000 and v % 1000 == 0:
        forms |= {f"{v / 10000:g} 万", f"{v / 10000:g}万", f"{v // 1000:g} 千", f"{v // 1000:g}k"}
    return sorted(forms)


def named_in(request: str, key: str, value: Any) -> bool:
    """Whether the request itself names a parameter's value. Keys that are not entities (side, market)
    follow from its meaning; an entity must be written in it, as a number or verbatim."""
    if key not in _ENTITY_KEYS:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return any(re.search(rf"(?<![\d,.]){re.escape(f)}(?![\d])", request) for f in _number_forms(value))
    return str(value) in request


def drill_target(row: dict) -> str:
    """The parameters of the calls whose entities the request names (not those a tool's result decides,
    such as the holdings to sell or the balance to withdraw), as JSON objects in call order ('' when
    none): written as the calls write them (`compact_solution`), so a drilled lookup is one a call makes."""
    calls = [c["params"] for c in row["expected"] if c["params"]]
    named = [p for p in calls if all(named_in(row["request"], k, v) for k, v in p.items())]
    return " ".join(json.dumps(p, ensure_ascii=False) for p in named)


def episode_rows(seed: int, n: int, kinds: list[str] | None = None, stream: str = "episodes") -> list[dict]:
    """`n` episodes over every kind, or over `kinds` (weighted as the multistep data, plus refusals),
    languages alternating, no request twice; `stream` names an independent random stream of them."""
    rng = random.Random(f"fund-assistant/{seed}/{stream}")
    kinds = [k for k in EPISODE_WEIGHTS if kinds is None or k in kinds]
    weights = [EPISODE_WEIGHTS[k] for k in kinds]
    seen: set[str] = set()
    rows = []
    for i in range(n):
        kind = rng.choices(kinds, weights)[0]
        sc = unique_request(partial(EPISODE_KINDS[kind], rng, LANGS[i % 2], None), seen)
        rows.append(episode_row(sc, f"episode-{i:04d}"))
    return rows

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

import random
from functools import partial

from tasks.fund_assistant.account import num
from tasks.fund_assistant.balance_scenarios import balance_refusal
from tasks.fund_assistant.generator import LANGS, unique_request
from tasks.fund_assistant.multistep import KIND_WEIGHTS, KINDS, Scenario

FINAL_TOOL = "final_answer"
"""The action that ends an episode: {"tool": "final_answer", "params": {"answer": "<text to the user>"}}."""

EPISODE_KINDS = {**KINDS, "balance_refusal": balance_refusal}
EPISODE_WEIGHTS = {**KIND_WEIGHTS, "balance_refusal": 0.14}

REFUSAL_WORDS = {
    "zh": ("余额不足", "不足", "不够", "没有转", "未转", "没有提现", "未提现", "无法"),
    "en": ("insufficient", "not enough", "too low", "less than", "did not", "didn't", "cannot", "can't"),
}

AGENT_SYSTEM = (
    "You are a fund assistant. Each turn reply with one JSON object: thought, action, plan. A tool's "
    f'result comes back as the next message. When the request is done, call {FINAL_TOOL} with '
    '{"answer": "<what you did and why>"}.'
)


def _amount_phrases(x: float) -> list[str]:
    """An amount as the answer may write it: 12000, 12,000, 12000.5, 12,000.50."""
    return sorted({num(x, "zh"), num(x, "en"), f"{x:g}"})


def outcome_phrases(sc: Scenario) -> list[str]:
    """What the final answer must mention (any one): why nothing moved in a refusal, else the last
    call's amount or ticker. Empty when the last call carries neither (nothing to check)."""
    if sc.kind == "balance_refusal":
        return list(REFUSAL_WORDS[sc.lang])
    last = sc.steps[-1].params
    if "amount" in last:
        return _amount_phrases(float(last["amount"]))
    if "ticker" in last:
        return [str(last["ticker"])]
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


def episode_rows(seed: int, n: int, kinds: list[str] | None = None) -> list[dict]:
    """`n` episodes over every kind, or over `kinds` (weighted as the multistep data, plus refusals),
    languages alternating, no request twice."""
    rng = random.Random(f"fund-assistant/{seed}/episodes")
    kinds = [k for k in EPISODE_WEIGHTS if kinds is None or k in kinds]
    weights = [EPISODE_WEIGHTS[k] for k in kinds]
    seen: set[str] = set()
    rows = []
    for i in range(n):
        kind = rng.choices(kinds, weights)[0]
        sc = unique_request(partial(EPISODE_KINDS[kind], rng, LANGS[i % 2], None), seen)
        rows.append(episode_row(sc, f"episode-{i:04d}"))
    return rows

"""Single-step samples: one request, one labelled action.

Owns the label of every single-step category (balance, settlement, intraday, combo, transfer,
withdraw, order, history, market) and its thought/plan text. Label rules are in LABELS.md; the
wording is in templates.py. Each builder is deterministic given the `random.Random` it is handed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tasks.fund_assistant import templates as T
from tasks.fund_assistant.slots import describe, fill, params_from


@dataclass
class Labelled:
    """One labelled turn: the request, the action for this turn, the thought and the remaining plan."""

    request: str
    tool: str
    params: dict[str, Any]
    thought: str
    plan: list[str]
    kind: str
    extra: dict[str, Any] = field(default_factory=dict)


def _pick(rng: random.Random, lang: str, table: dict[str, list[str]]) -> str:
    return rng.choice(table[lang])


def _one(tool: str, params: dict, lang: str, request: str, kind: str, zh: str, en: str) -> Labelled:
    """A single call whose plan is just that call. `zh`/`en` are thought templates over {d} (describe)."""
    d = describe(tool, params, lang)
    return Labelled(request, tool, params, (zh if lang == "zh" else en).format(d=d), [d], kind)


def balance(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.BALANCE), rng, lang)
    return _one(
        "check_balance",
        params_from("check_balance", v),
        lang,
        req,
        "balance",
        "用户想知道账户里有多少钱，所以调用 check_balance：{d}。",
        "The user asks how much cash is available, so I call check_balance first: {d}.",
    )


def settlement(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.SETTLEMENT), rng, lang)
    return _one(
        "get_transaction_history",
        params_from("get_transaction_history", v),
        lang,
        req,
        "settlement",
        "卖出的资金按 T+1 交收（港股 T+2），周末不算交收日，"
        "所以先查交易记录看成交日和交收日，而不是查余额：{d}。",
        "Sale proceeds settle T+1 (T+2 in Hong Kong) and weekends do not count, so I first check the "
        "transaction history for the trade and settlement dates rather than the balance: {d}.",
    )


def intraday(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.INTRADAY), rng, lang)
    return _one(
        "check_market_status",
        params_from("check_market_status", v),
        lang,
        req,
        "intraday",
        "能不能成交取决于交易时间规则（午休、收盘、周末），所以先查询市场状态：{d}。",
        "Whether an order can go through now depends on trading hours (lunch break, close, weekend), "
        "so I need to check the market status first: {d}.",
    )


def transfer(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.TRANSFER), rng, lang)
    return _one(
        "transfer_funds",
        params_from("transfer_funds", v),
        lang,
        req,
        "transfer",
        "用户明确要求转账，没有附加条件，所以直接执行：{d}。",
        "Because the user explicitly asks for a transfer with no condition, I do it directly: {d}.",
    )


def withdraw(rng: random.Random, lang: str, i: int) -> Labelled:
    """Plain, explicit look-alikes of the withdraw ambiguity (still withdraw_funds), or conditional on the
    balance (check_balance)."""
    kind = (
        "withdraw_plain",
        "withdraw_explicit",
        "withdraw_plain",
        "withdraw_conditional",
        "withdraw_explicit",
    )[i % 5]
    if kind == "withdraw_conditional":
        req, v = fill(_pick(rng, lang, T.WITHDRAW_CONDITIONAL), rng, lang)
        check = params_from("check_balance", {k: v[k] for k in ("acc",) if k in v})
        amount = v.get("amt", v.get("small"))
        later = describe("withdraw_funds", params_from("withdraw_funds", v), lang)
        cond = f"余额够 {amount} 则{later}" if lang == "zh" else f"{later} if the balance covers {amount}"
        thought = (
            "用户说余额够才提现，提现是有条件的，所以先查余额，然后再决定是否提现。"
            if lang == "zh"
            else "The user makes the withdrawal conditional on the balance, so I first check the balance, "
            "then decide whether to withdraw."
        )
        return Labelled(
            req, "check_balance", check, thought, [describe("check_balance", check, lang), cond], kind
        )
    table = T.WITHDRAW_PLAIN if kind == "withdraw_plain" else T.WITHDRAW_EXPLICIT
    req, v = fill(_pick(rng, lang, table), rng, lang)
    return _one(
        "withdraw_funds",
        params_from("withdraw_funds", v),
        lang,
        req,
        kind,
        "用户明确要求提现且没有附加条件，因为这是一个无条件的单一请求，所以直接调用 withdraw_funds：{d}。",
        "The user explicitly asks to withdraw and sets no condition; because it is an unconditional "
        "single request, I call withdraw_funds directly: {d}.",
    )


def order(rng: random.Random, lang: str, i: int) -> Labelled:
    template, side = rng.choice(T.ORDER[lang])
    req, v = fill(template, rng, lang)
    return _one(
        "place_order",
        params_from("place_order", v, {"side": side}),
        lang,
        req,
        "order",
        "用户给出了明确的下单指令，所以直接下单：{d}。",
        "Because the user gives an explicit order instruction, I place it directly: {d}.",
    )


def history(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.HISTORY), rng, lang)
    return _one(
        "get_transaction_history",
        params_from("get_transaction_history", v),
        lang,
        req,
        "history",
        "用户要看交易记录，所以调用 get_transaction_history：{d}。",
        "Because the user wants to see past activity, I call get_transaction_history: {d}.",
    )


def market(rng: random.Random, lang: str, i: int) -> Labelled:
    req, v = fill(_pick(rng, lang, T.MARKET), rng, lang)
    return _one(
        "check_market_status",
        params_from("check_market_status", v),
        lang,
        req,
        "market",
        "用户问的是开市、收盘或交易时间，所以调用 check_market_status：{d}。",
        "Because the user asks about market hours, open or close, I call check_market_status: {d}.",
    )


# A combo never STARTS with check_balance: its label would equal the field report's wrong label
# (`apply_seed_label_bug`), so the label error could not be seen or repaired on such rows.
# check_balance still appears as the second operation.
COMBO_FIRST: tuple[str, ...] = (
    "transfer_funds",
    "withdraw_funds",
    "place_order",
    "get_transaction_history",
)
COMBO_SECOND: tuple[str, ...] = (*COMBO_FIRST, "check_balance")


def _combo_op(rng: random.Random, lang: str, tool: str) -> tuple[str, dict[str, Any]]:
    phrase, fixed = rng.choice(T.COMBO_OPS[lang][tool])
    text, v = fill(phrase, rng, lang)
    return text, params_from(tool, v, fixed)


def combo(rng: random.Random, lang: str, i: int) -> Labelled:
    """Two unconditional operations; the label is the FIRST one (the field report's warm-up bug labelled these
    check_balance, see `generator.apply_seed_label_bug`). The first tool cycles so it varies."""
    first = COMBO_FIRST[i % len(COMBO_FIRST)]
    second = rng.choice([t for t in COMBO_SECOND if t != first])
    a, pa = _combo_op(rng, lang, first)
    b, pb = _combo_op(rng, lang, second)
    req = rng.choice(T.COMBO_JOIN[lang]).format(a=a, b=b)
    req = req[0].upper() + req[1:]
    d1, d2 = describe(first, pa, lang), describe(second, pb, lang)
    thought = (
        f"用户一句话里有两步操作：先{d1}，然后{d2}。两步没有条件关系，所以当前先执行第一步。"
        if lang == "zh"
        else f"The request has two steps: first {d1}, then {d2}. Neither depends on the other, so I "
        f"start with the first one now."
    )
    return Labelled(req, first, pa, thought, [d1, d2], f"combo_{first}")


BUILDERS: dict[str, Callable[[random.Random, str, int], Labelled]] = {
    "balance": balance,
    "settlement": settlement,
    "intraday": intraday,
    "combo": combo,
    "transfer": transfer,
    "withdraw": withdraw,
    "order": order,
    "history": history,
    "market": market,
}
# Share of the single-step rows per category (454 in the seed data set; weights sum to 454).
SINGLE_WEIGHTS: dict[str, int] = {
    "balance": 50,
    "settlement": 55,
    "intraday": 55,
    "combo": 60,
    "transfer": 45,
    "withdraw": 55,
    "order": 45,
    "history": 45,
    "market": 44,
}

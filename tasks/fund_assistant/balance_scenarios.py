"""Balance-conditional scenarios: "check the balance; if it covers the amount, transfer (or withdraw)
it, else do what the user said instead".

Two steps each: check_balance, then the operation or the fallback, decided from the account state the
scenario set up (LABELS.md §4). `multistep.KINDS` lists these builders beside the other kinds.
"""

from __future__ import annotations

import math
import random
from typing import Any

from tasks.fund_assistant import scenario_templates as T
from tasks.fund_assistant.account import num
from tasks.fund_assistant.scenario import (
    Run,
    Scenario,
    cond_plan,
    new_account,
    pick_else,
    round100,
    with_,
    zh_en,
)
from tasks.fund_assistant.slots import MAKERS, amount_text, describe, fill


def _balance_then(kind: str, rng: random.Random, lang: str, withdraw: bool, refuse: bool = False) -> Scenario:
    """Check the balance; if it covers the amount, transfer/withdraw it; else the stated fallback.
    `refuse`: the request states no fallback and the balance falls short, so the only step is the
    check (an agent episode then answers that it did not act, and why; no single-step row has this)."""
    mains, elses = (T.MS_BALANCE_WITHDRAW if withdraw else T.MS_BALANCE_TRANSFER)[lang]
    else_text, branch = ("", "") if refuse else pick_else(rng, elses)
    amt, amt_text = MAKERS["amt"](rng, lang, {})
    amt2 = round100(amt * rng.choice([0.3, 0.5]))
    preset = {"amt": (amt, amt_text), "amt2": (amt2, amount_text(amt2, lang, rng))}
    req, v = fill(rng.choice(mains) + else_text, rng, lang, preset)
    amount = v.get("small", amt)
    acc, dst = v.get("acc"), v.get("dst")
    enough = not refuse and (branch == "" or rng.random() < 0.5)
    if enough:
        bal = math.ceil(amount * rng.uniform(1.2, 8.0) / 100.0) * 100
    elif branch == "smaller":
        bal = rng.randrange(amt2, amount, 50)
    else:
        bal = max(1, int(amount * rng.uniform(0.05, 0.95)))
    acct = new_account(rng, lang)
    src = acc or acct.default
    acct.ensure(src, bal)
    # The account named in a conditional request is the source of the later call (LABELS.md §4).
    op_tool = "withdraw_funds" if withdraw else "transfer_funds"
    op = (
        with_({"amount": amount}, account=acc)
        if withdraw
        else with_({"amount": amount}, from_account=acc, to_account=dst)
    )
    fallback: tuple[str, dict[str, Any]] | None = {
        "history": ("get_transaction_history", with_({}, account=acc)),
        "smaller": ("transfer_funds", with_({"amount": amt2}, from_account=acc, to_account=dst)),
        "all": ("withdraw_funds", with_({"amount": bal}, account=acc)),
    }.get(branch)
    check = with_({}, account=acc)
    run = Run(kind, lang, req, acct)
    run.sc.guarded = {"tool": op_tool, "params": op}
    then, other = describe(op_tool, op, lang), describe(*fallback, lang) if fallback else None
    if branch == "all":
        other = zh_en(lang, "提现全部余额", "withdraw the whole balance")
    cond = zh_en(lang, f"余额够 {num(amount, lang)}", f"the balance covers {num(amount, lang)}")
    run.step(
        "check_balance",
        check,
        zh_en(
            lang,
            "用户的操作以余额为条件，所以先查余额，然后再决定下一步。",
            "The request depends on the balance, so I first check the balance before acting.",
        ),
        [describe("check_balance", check, lang), cond_plan(lang, cond, then, other)],
    )
    if not refuse:
        _after_balance(run, lang, num(bal, lang), num(amount, lang), (op_tool, op, then) if enough else None,
                       fallback, other)
    return run.sc


def _after_balance(run: Run, lang: str, b: str, a: str, op: tuple[str, dict, str] | None,
                   fallback: tuple[str, dict[str, Any]] | None, other: str | None) -> None:
    """Step 2 of a balance-conditional request: the operation when the balance `b` covers the amount
    `a` (`op` = tool, params, description), else the user's fallback."""
    if op is not None:
        op_tool, params, then = op
        run.step(
            op_tool,
            params,
            zh_en(
                lang,
                f"上一步查到余额 {b}，足够 {a}，所以现在执行：{then}。",
                f"The balance is {b}, which covers {a}, therefore I now {then}.",
            ),
            [then],
        )
        return
    tool, params = fallback  # type: ignore[misc]
    d = describe(tool, params, lang)
    run.step(
        tool,
        params,
        zh_en(
            lang,
            f"余额只有 {b}，不够 {a}；因为用户说不够就{other}，所以现在执行：{d}。",
            f"The balance is only {b}, less than {a}; because the user said otherwise to "
            f"{other}, I now {d}.",
        ),
        [d],
    )


def balance_transfer(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    return _balance_then("balance_transfer", rng, lang, withdraw=False)


def balance_withdraw(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    return _balance_then("balance_withdraw", rng, lang, withdraw=True)


def balance_refusal(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """A balance-conditional transfer or withdrawal without a fallback, whose balance falls short."""
    withdraw = rng.random() < 0.5
    return _balance_then("balance_refusal", rng, lang, withdraw=withdraw, refuse=True)

"""The scenario machinery shared by the multistep kinds: a Scenario, the Run that executes labelled
steps against the simulated account, and small helpers (bilingual text, optional params, branch draws,
account set-ups for sales with a given settlement state).

Owns no labels and no wording; multistep.py does.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from tasks.fund_assistant.account import (
    SETTLE_LAG,
    Account,
    Trade,
    add_business_days,
    is_business_day,
    market_of,
)
from tasks.fund_assistant.single import Labelled
from tasks.fund_assistant.slots import WEEKDAYS
from tasks.fund_assistant.tools import params_valid


@dataclass
class Scenario:
    kind: str
    lang: str
    request: str
    steps: list[Labelled] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)  # observations[i] is what step i returned
    # the account before step 1 (`Account.to_dict`): episodes start here
    initial: dict = field(default_factory=dict)
    # A conditional request: the call its first step's check guards ({"tool", "params"}; the balance
    # covers the transfer, the market is open for the order, the sale settled for the withdrawal)
    guarded: dict | None = None


class Run:
    """Executes labelled steps against the account, recording each observation."""

    def __init__(self, kind: str, lang: str, request: str, acct: Account) -> None:
        self.sc, self.acct = Scenario(kind, lang, request, initial=acct.to_dict()), acct

    def step(self, tool: str, params: dict[str, Any], thought: str, plan: list[str]) -> str:
        if not params_valid(tool, params):  # a generator bug, never a data property
            raise AssertionError(f"invalid label {tool}{params} in {self.sc.kind}")
        self.sc.steps.append(Labelled(self.sc.request, tool, params, thought, plan, self.sc.kind))
        obs = self.acct.observe(tool, params)
        self.sc.observations.append(obs)
        return obs


def zh_en(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


def with_(params: dict[str, Any], **maybe: Any) -> dict[str, Any]:
    """params plus every keyword whose value is not None."""
    return {**params, **{k: v for k, v in maybe.items() if v is not None}}


def new_account(rng: random.Random, lang: str) -> Account:
    return Account.random(rng.randrange(2**31), lang)


def pick_else(rng: random.Random, elses: list[tuple[str, str]], p_none: float = 0.35) -> tuple[str, str]:
    """An else-branch, or none: a condition with no fallback is only ever drawn true (LABELS.md §4)."""
    return ("", "") if rng.random() < p_none else rng.choice(elses)


def cond_plan(lang: str, cond: str, then: str, otherwise: str | None) -> str:
    if lang == "zh":
        return f"{cond}则{then}" + (f"，否则{otherwise}" if otherwise else "")
    return f"{then} if {cond}" + (f", otherwise {otherwise}" if otherwise else "")


def money(x: float) -> int | float:
    """Whole amounts as int (100000, not 100000.0) so labels read like the request."""
    return int(x) if float(x).is_integer() else round(float(x), 2)


def round100(x: float) -> int:
    return max(100, round(x / 100.0) * 100)


def sale_days(ticker: str, settled: bool) -> list[tuple[int, int]]:
    """(today, sale day) pairs, sale within the last 7 days, whose settlement state is `settled`."""
    lag, out = SETTLE_LAG[market_of(ticker)], []
    for today in range(7, 14):
        for d in range(today - 6, today + 1):
            if is_business_day(d) and (add_business_days(d, lag) <= today) == settled:
                out.append((today, d))
    return out


def account_with_sale(
    rng: random.Random, lang: str, ticker: str, settled: bool, preset: dict
) -> tuple[Account, Trade]:
    """A fresh account whose only sale is `ticker`, on a day whose settlement state is `settled`.
    Pins preset["weekday"] to the sale's weekday so a request naming the day names the right one."""
    acct = new_account(rng, lang)
    acct.trades = [t for t in acct.trades if t.side == "buy" and t.ticker != ticker]  # one line for `ticker`
    acct.holdings = [h for h in acct.holdings if h.ticker != ticker]
    acct.today, day = rng.choice(sale_days(ticker, settled))
    preset["weekday"] = (day % 7, rng.choice(WEEKDAYS[lang][day % 7]))
    sale = acct.add_sale(
        ticker, rng.choice([100, 200, 500] if market_of(ticker) != "US" else [10, 25, 50, 100]), day
    )
    acct.ensure(acct.default, max(acct.balances[acct.default], math.ceil(sale.amount) + 1000))
    return acct, sale

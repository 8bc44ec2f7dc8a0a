"""Multistep scenarios (docs/fund_assistant.md#multistep-scenarios): conditional and sequential requests run
against a simulated account.

Owns the scenario kinds, how each sets up the account so a branch is exercised, and the label of every
step: a step's label is decided from the account state (never by parsing observation text), and its
observation comes from `Account.observe`. Branch rules are documented in LABELS.md §4.
The generator expands each Scenario into one sample per step.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from tasks.fund_assistant import scenario_templates as T
from tasks.fund_assistant.account import (
    CURRENCY,
    MARKET_NAME,
    SETTLE_LAG,
    day_name,
    is_open,
    market_of,
    num,
)
from tasks.fund_assistant.balance_scenarios import balance_transfer, balance_withdraw
from tasks.fund_assistant.scenario import (
    Run,
    Scenario,
    account_with_sale,
    cond_plan,
    money,
    new_account,
    pick_else,
    with_,
    zh_en,
)
from tasks.fund_assistant.slots import (
    ALL_TICKERS,
    MARKET_SYNONYMS,
    describe,
    fill,
)


def market_order(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """Check a market; if open, place the order; else the stated fallback (balance / ticker history)."""
    mains, elses = T.MS_MARKET_ORDER[lang]
    main, side = rng.choice(mains)
    else_text, branch = pick_else(rng, elses)
    ticker = rng.choice(ALL_TICKERS)
    m = market_of(ticker)
    preset = {"ticker": (ticker, ticker), "mkt": (m, rng.choice(MARKET_SYNONYMS[lang][m]))}
    req, v = fill(main + else_text, rng, lang, preset)
    want_open = branch == "" or rng.random() < 0.5
    acct = new_account(rng, lang)
    while is_open(m, acct.today, acct.minute) != want_open:  # redraw the clock until the branch holds
        acct.today, acct.minute = rng.randint(7, 13), rng.randrange(8 * 60, 18 * 60, 5)
    order = {"ticker": ticker, "side": side, "quantity": v["qty"]}
    fallback = {
        "balance": ("check_balance", {}),
        "history": ("get_transaction_history", {"ticker": ticker}),
    }.get(branch)
    name = MARKET_NAME[lang][m]
    run = Run("market_order", lang, req, acct)
    run.sc.guarded = {"tool": "place_order", "params": order}
    then = describe("place_order", order, lang)
    other = describe(*fallback, lang) if fallback else None
    run.step(
        "check_market_status",
        {"market": m},
        zh_en(
            lang,
            f"下单的前提是{name}开市，所以先查询市场状态，然后再决定。",
            f"The order only makes sense if the {name} is open, so I first check the market status.",
        ),
        [
            describe("check_market_status", {"market": m}, lang),
            cond_plan(lang, zh_en(lang, "开市", "it is open"), then, other),
        ],
    )
    if want_open:
        run.step(
            "place_order",
            order,
            zh_en(lang, f"{name}正在交易，所以现在{then}。", f"The {name} is open, therefore I now {then}."),
            [then],
        )
    else:
        tool, params = fallback  # type: ignore[misc]
        run.step(
            tool,
            params,
            zh_en(
                lang,
                f"{name}现在休市，因为用户说休市就{other}，所以不下单。",
                f"The {name} is closed; because the user asked to {other} in that case, I do "
                f"that instead of ordering.",
            ),
            [other or ""],
        )
    return run.sc


def holdings_sell(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """Read holdings (transaction history), then sell every position above the threshold, in listed order."""
    req, v = fill(rng.choice(T.MS_HOLDINGS_SELL[lang]), rng, lang)
    pct, acc = v["pct"], v.get("acc")
    acct = new_account(rng, lang)
    if acc:
        acct.ensure(acc)
    sold = {t.ticker for t in acct.trades if t.side == "sell"}
    acct.holdings, acct.trades = [], [t for t in acct.trades if t.side == "sell"]
    n_win = (length - 1) if length else rng.choice([1, 2])
    n_lose = rng.randint(1, 3 - n_win)  # <= 3 holdings + 1 sale: the observation lists all 4 lines
    tickers = rng.sample([t for t in ALL_TICKERS if t not in sold], n_win + n_lose)
    flags = [True] * n_win + [False] * n_lose
    rng.shuffle(flags)
    for t, win in zip(tickers, flags, strict=True):
        pnl = rng.uniform(pct + 1, pct + 30) if win else rng.uniform(-15, pct - 1)
        acct.add_holding(
            t, rng.choice([100, 200, 500] if market_of(t) != "US" else [10, 20, 50, 100]), pnl, rng
        )
    by_day = [t.ticker for t in sorted(acct.trades, key=lambda t: t.day) if t.side == "buy"]
    held = {h.ticker: h for h in acct.holdings}
    winners = [held[t] for t in by_day if held[t].pnl_pct > pct]
    sells = [{"ticker": h.ticker, "side": "sell", "quantity": h.quantity} for h in winners]
    plans = [describe("place_order", s, lang) for s in sells]
    hist = with_({}, account=acc)
    run = Run("holdings_sell", lang, req, acct)
    run.step(
        "get_transaction_history",
        hist,
        zh_en(
            lang,
            f"要卖出盈利超过 {pct}% 的持仓，需要先查交易记录看持仓和盈亏，然后再决定卖哪些。",
            f"To sell positions up more than {pct}%, I first need the transaction history with holdings and "
            f"profit, then I decide what to sell.",
        ),
        [
            describe("get_transaction_history", hist, lang),
            zh_en(lang, f"卖出盈利超过 {pct}% 的持仓", f"sell holdings up more than {pct}%"),
        ],
    )
    names = ", ".join(f"{h.ticker} ({h.pnl_pct:+.1f}%)" for h in winners)
    for k, (s, h) in enumerate(zip(sells, winners, strict=True)):
        if k == 0:
            thought = zh_en(
                lang,
                f"持仓中超过 {pct}% 的是 {names}，所以先{plans[0]}。",
                f"Holdings above {pct}%: {names}. So first I {plans[0]}.",
            )
        else:
            thought = zh_en(
                lang,
                f"{winners[k - 1].ticker} 已处理，然后{plans[k]}（盈利 {h.pnl_pct:+.1f}%）。",
                f"{winners[k - 1].ticker} is done; then I {plans[k]} (up {h.pnl_pct:+.1f}%).",
            )
        run.step("place_order", s, thought, plans[k:])
    return run.sc


def history_withdraw(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """Read the history, then withdraw the (settled) sale proceeds it shows."""
    held = rng.choice(ALL_TICKERS)
    preset: dict = {"ticker": (held, held)}
    acct, sale = account_with_sale(rng, lang, held, True, preset)
    req, v = fill(rng.choice(T.MS_HISTORY_WITHDRAW[lang]), rng, lang, preset)
    acc = v.get("acc")
    if acc:
        acct.ensure(acc, max(acct.balances[acct.default], math.ceil(sale.amount) + 1000))
    hist = with_({}, account=acc, ticker=v.get("ticker"))
    wd = with_({"amount": money(sale.amount)}, account=acc)
    run = Run("history_withdraw", lang, req, acct)
    then = describe("withdraw_funds", wd, lang)
    run.step(
        "get_transaction_history",
        hist,
        zh_en(
            lang,
            "提现金额要从交易记录里的卖出所得来定，所以先查交易记录，然后再提现。",
            "The amount to withdraw comes from the sale in the "
            "history, so I first check the history, then withdraw.",
        ),
        [
            describe("get_transaction_history", hist, lang),
            zh_en(lang, "提现卖出所得", "withdraw the sale proceeds"),
        ],
    )
    cur = CURRENCY[lang][market_of(sale.ticker)]
    run.step(
        "withdraw_funds",
        wd,
        zh_en(
            lang,
            f"记录显示卖出 {sale.ticker} 所得 {num(sale.amount, lang)} {cur} 已到账，所以现在{then}。",
            f"The history shows {num(sale.amount, lang)} {cur} from selling {sale.ticker}, "
            f"already settled; therefore I now {then}.",
        ),
        [then],
    )
    return run.sc


def settle_withdraw(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """Has a sale settled (T+1, HK T+2, weekends skipped)? If so withdraw it, else check the balance."""
    ticker, settled = rng.choice(ALL_TICKERS), rng.random() < 0.5
    preset: dict = {"ticker": (ticker, ticker)}
    acct, sale = account_with_sale(rng, lang, ticker, settled, preset)
    req, _ = fill(rng.choice(T.MS_SETTLE_WITHDRAW[lang]), rng, lang, preset)
    hist, wd = {"ticker": ticker}, {"amount": money(sale.amount)}
    lag, when = SETTLE_LAG[market_of(ticker)], day_name(sale.settle_day, acct.today, lang)
    run = Run("settle_withdraw", lang, req, acct)
    run.sc.guarded = {"tool": "withdraw_funds", "params": wd}
    then, other = describe("withdraw_funds", wd, lang), describe("check_balance", {}, lang)
    run.step(
        "get_transaction_history",
        hist,
        zh_en(
            lang,
            f"卖出资金按 T+{lag} 交收、周末不算，需要先查交易记录确认是否到账，然后决定提现还是查余额。",
            f"Proceeds settle T+{lag} with weekends skipped, so I first check the history to see whether the "
            f"money has arrived, then either withdraw or check the balance.",
        ),
        [
            describe("get_transaction_history", hist, lang),
            cond_plan(lang, zh_en(lang, "已到账", "it has settled"), then, other),
        ],
    )
    if settled:
        run.step(
            "withdraw_funds",
            wd,
            zh_en(
                lang,
                f"这笔钱{when}已交收到账，所以现在{then}。",
                f"The money settled {when}, therefore I now {then}.",
            ),
            [then],
        )
    else:
        run.step(
            "check_balance",
            {},
            zh_en(
                lang,
                f"这笔钱要{when}才交收，还没到账，所以按用户要求查余额。",
                f"It only settles {when}, so it has not arrived; therefore I check the balance as asked.",
            ),
            [other],
        )
    return run.sc


def seq3(rng: random.Random, lang: str, length: int | None = None) -> Scenario:
    """Three unconditional operations in order; labels do not depend on the observations."""
    template, ops = rng.choice(T.MS_SEQ3[lang])
    req, v = fill(template, rng, lang)
    acct = new_account(rng, lang)
    acct.ensure(acct.default, max(acct.balances[acct.default], v.get("amt", 0) + v.get("amt2", 0) + 1000))
    calls = [(tool, {**{p: v[s] for p, s in pmap.items()}, **fixed}) for tool, pmap, fixed in ops]
    plans = [describe(t, p, lang) for t, p in calls]
    run = Run("seq3", lang, req, acct)
    thoughts = [
        zh_en(
            lang,
            f"用户要求按顺序做三件事：先{plans[0]}，然后{plans[1]}，最后{plans[2]}，所以现在执行第一步。",
            f"Three steps in order: first {plans[0]}, then "
            f"{plans[1]}, then {plans[2]}. I start with the first.",
        ),
        zh_en(lang, f"第一步已完成，然后执行第二步：{plans[1]}。", f"Step 1 is done, so then I {plans[1]}."),
        zh_en(
            lang,
            f"前两步已完成，所以最后{plans[2]}。",
            f"The first two steps are done, so finally I {plans[2]}.",
        ),
    ]
    for k, (tool, params) in enumerate(calls):
        run.step(tool, params, thoughts[k], plans[k:])
    return run.sc


# (rng, lang, length): `length` asks for a number of steps where the kind can vary (holdings_sell: 2 or 3);
# the other kinds have a fixed length and ignore it.
Builder = Callable[[random.Random, str, int | None], Scenario]
KINDS: dict[str, Builder] = {
    "balance_transfer": balance_transfer,
    "balance_withdraw": balance_withdraw,
    "market_order": market_order,
    "holdings_sell": holdings_sell,
    "history_withdraw": history_withdraw,
    "settle_withdraw": settle_withdraw,
    "seq3": seq3,
}
KIND_WEIGHTS: dict[str, float] = {
    "balance_transfer": 0.18,
    "balance_withdraw": 0.14,
    "market_order": 0.18,
    "holdings_sell": 0.14,
    "history_withdraw": 0.10,
    "settle_withdraw": 0.12,
    "seq3": 0.14,
}
# Fixed at two steps: the generator ends with these (and seq3) to hit an exact row count.
TWO_STEP_KINDS: tuple[str, ...] = (
    "balance_transfer",
    "balance_withdraw",
    "market_order",
    "history_withdraw",
    "settle_withdraw",
)

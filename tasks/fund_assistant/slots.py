"""Slot values for request templates, and how a filled slot becomes a tool parameter.

Owns the vocabulary (accounts, tickers, amounts, clock times, weekdays, market names), the way each is
written in Chinese or English ("10 万", "$5,000", "3:45 pm"), the slot -> parameter mapping of the
label policy in LABELS.md, and `describe`, the one-line text of a call used in `plan`.
It knows nothing about categories or scenarios.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from string import Formatter
from typing import Any

from tasks.fund_assistant.account import MARKET_NAME, market_of, num
from tasks.fund_assistant.tools import TOOLS

TICKERS: dict[str, tuple[str, ...]] = {
    "US": ("AAPL", "AMZN", "TSLA", "MSFT", "NVDA", "GOOGL"),
    "CN": ("600519", "000001", "601318", "300750"),
    "HK": ("0700.HK", "9988.HK", "3690.HK", "1810.HK"),
}
ALL_TICKERS: tuple[str, ...] = tuple(t for ts in TICKERS.values() for t in ts)
ACCOUNT_IDS: tuple[str, ...] = tuple(f"ACC{i:03d}" for i in range(1, 1000))  # what `_account` draws from
# How users name a market. None of these is itself a market keyword: templates carry the keyword.
MARKET_SYNONYMS: dict[str, dict[str, tuple[str, ...]]] = {
    "zh": {
        "US": ("美股", "纳斯达克", "纽交所"),
        "CN": ("A股", "沪深", "上交所"),
        "HK": ("港股", "港交所", "恒生"),
    },
    "en": {
        "US": ("US", "NYSE", "Nasdaq", "American"),
        "CN": ("China A-share", "Shanghai", "Shenzhen"),
        "HK": ("Hong Kong", "HK", "HKEX"),
    },
}
WEEKDAYS: dict[str, tuple[tuple[str, ...], ...]] = {
    "zh": (
        ("周一", "星期一"),
        ("周二", "星期二"),
        ("周三", "星期三"),
        ("周四", "星期四"),
        ("周五", "星期五"),
        ("周六", "星期六"),
        ("周日", "星期天"),
    ),
    "en": (("Monday",), ("Tuesday",), ("Wednesday",), ("Thursday",), ("Friday",), ("Saturday",), ("Sunday",)),
}
# Clock times near the session edges and lunch breaks, where the trading-hours rules decide.
CLOCK_MINUTES: tuple[int, ...] = (
    530,
    555,
    565,
    585,
    640,
    680,
    695,
    705,
    735,
    755,
    770,
    790,
    810,
    870,
    895,
    905,
    930,
    945,
    955,
    970,
    1000,
    1230,
)
SLOT_PARAM: dict[str, str] = {
    "acc": "account",
    "src": "from_account",
    "dst": "to_account",
    "amt": "amount",
    "small": "amount",
    "ticker": "ticker",
    "qty": "quantity",
    "days": "days",
    "mkt": "market",
}
# A slot the user states that the chosen tool cannot take is a template bug, except for these
# (context the tool does not need: a quantity in "I sold 50 TSLA, when does the cash arrive?").
_CONTEXT_SLOTS = {"qty", "ticker", "days", "mkt", "time", "weekday", "anyday", "pct"}

Slot = tuple[Any, str]  # (value, how it is written)


def amount_text(v: int, lang: str, rng: random.Random) -> str:
    if lang == "zh":
        forms = [f"{v} 元"]
        if v % 10000 == 0 or (v >= 10000 and v % 5000 == 0):
            forms += [f"{v / 10000:g} 万", f"{v / 10000:g}万元"]
        elif v % 1000 == 0:
            forms += [f"{v // 1000} 千"]
        return rng.choice(forms)
    forms = [f"${v:,}", f"{v:,} USD", f"{v:,} dollars"]
    if v % 1000 == 0:
        forms.append(f"{v // 1000}k")
    return rng.choice(forms)


def _amt(rng: random.Random, lang: str, _: dict) -> Slot:
    if lang == "zh":
        v = rng.choice(
            [
                500,
                1000,
                2000,
                3000,
                5000,
                8000,
                10000,
                20000,
                25000,
                30000,
                50000,
                80000,
                100000,
                150000,
                200000,
                500000,
            ]
        )
    else:
        v = rng.choice([200, 500, 800, 1000, 1500, 2000, 2500, 3000, 5000, 8000, 10000, 12000, 20000, 50000])
    return v, amount_text(v, lang, rng)


def _small(rng: random.Random, lang: str, _: dict) -> Slot:
    # The field report's withdraw look-alikes (docs/fund_assistant.md#the-withdraw-ambiguity): small sums in
    # rupees / 块.
    v = rng.choice([50, 75, 80, 120, 200, 300, 450, 600, 1200])
    if lang == "zh":
        return v, rng.choice([f"{v} 块", f"{v} 块钱", f"{v} 元"])
    return v, rng.choice([f"{v} rupees", f"{v:,} rupees", f"Rs {v}"])


def _account(rng: random.Random, _lang: str, values: dict) -> Slot:
    taken = {values.get(k) for k in ("acc", "src", "dst")}
    while True:
        a = f"ACC{rng.randint(1, 999):03d}"
        if a not in taken:
            return a, a


def _ticker(rng: random.Random, _lang: str, _: dict) -> Slot:
    t = rng.choice(ALL_TICKERS)
    return t, t


def _qty(rng: random.Random, _lang: str, values: dict) -> Slot:
    market = market_of(values["ticker"]) if "ticker" in values else "US"
    q = rng.choice([100, 200, 300, 500, 1000, 2000] if market != "US" else [5, 10, 20, 25, 50, 100, 200])
    return q, str(q)


def _days(rng: random.Random, _lang: str, _: dict) -> Slot:
    d = rng.choice([3, 5, 7, 10, 14, 30, 60, 90])
    return d, str(d)


def _time(rng: random.Random, lang: str, _: dict) -> Slot:
    m = rng.choice(CLOCK_MINUTES)
    h, mm = divmod(m, 60)
    h12 = h - 12 if h > 12 else h
    if lang == "zh":
        half = "上午" if h < 12 else ("中午" if h < 13 else ("下午" if h < 18 else "晚上"))
        return m, rng.choice([f"{h}:{mm:02d}", f"{half} {h12}:{mm:02d}", f"{half}{h12}:{mm:02d}"])
    ampm = "am" if h < 12 else "pm"
    return m, rng.choice([f"{h}:{mm:02d}", f"{h12}:{mm:02d} {ampm}", f"{h12}:{mm:02d}{ampm}"])


def _weekday(rng: random.Random, lang: str, _: dict, days: int = 5) -> Slot:
    d = rng.randrange(days)
    return d, rng.choice(WEEKDAYS[lang][d])


def _mkt(rng: random.Random, lang: str, _: dict) -> Slot:
    m = rng.choice(("US", "CN", "HK"))
    return m, rng.choice(MARKET_SYNONYMS[lang][m])


def _pct(rng: random.Random, _lang: str, _: dict) -> Slot:
    p = rng.choice([5, 8, 10, 15, 20, 30])
    return p, str(p)


MAKERS: dict[str, Callable[[random.Random, str, dict], Slot]] = {
    "amt": _amt,
    "amt2": _amt,
    "small": _small,
    "acc": _account,
    "src": _account,
    "dst": _account,
    "ticker": _ticker,
    "qty": _qty,
    "days": _days,
    "time": _time,
    "weekday": _weekday,
    "anyday": lambda rng, lang, v: _weekday(rng, lang, v, 7),
    "mkt": _mkt,
    "pct": _pct,
}


def fields(template: str) -> list[str]:
    """The slot names of a template, tickers first (a quantity's lot size depends on the ticker)."""
    names = list(dict.fromkeys(f for _, f, _, _ in Formatter().parse(template) if f))
    return sorted(names, key=lambda f: f != "ticker")


def fill(
    template: str, rng: random.Random, lang: str, preset: dict[str, Slot] | None = None
) -> tuple[str, dict[str, Any]]:
    """Fill every slot; return (text, {slot: value}). `preset` pins some slots to (value, text)."""
    values: dict[str, Any] = {}
    texts: dict[str, str] = {}
    for f in fields(template):
        value, text = (preset or {}).get(f) or MAKERS[f](rng, lang, values)
        values[f], texts[f] = value, text
    return template.format(**texts), values


def params_from(tool: str, values: dict[str, Any], fixed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The label's params: exactly the values the user stated that `tool` takes (LABELS.md §2).

    check_market_status is the one inference: a named ticker implies its market."""
    allowed = TOOLS[tool].all_params
    out = dict(fixed or {})
    for slot, v in values.items():
        key = SLOT_PARAM.get(slot)
        if key in allowed:
            out[key] = v
        elif key is not None and slot not in _CONTEXT_SLOTS:
            raise ValueError(f"template bug: slot {slot!r} has no parameter in {tool}")
    if tool == "check_market_status" and "market" not in out and "ticker" in values:
        out["market"] = market_of(values["ticker"])
    return out


def describe(tool: str, params: dict[str, Any], lang: str) -> str:
    """One plan entry for a call, e.g. '转账 100000 元到 ACC005' / 'transfer 100000 to ACC005'."""
    p, zh = params, lang == "zh"
    amt = num(p["amount"], "zh") if "amount" in p else ""
    acc = p.get("account")
    if tool == "check_balance":
        return (
            (f"查询 {acc} 余额" if acc else "查询余额")
            if zh
            else (f"check {acc} balance" if acc else "check balance")
        )
    if tool == "transfer_funds":
        src = (
            (f"从 {p['from_account']} " if zh else f" from {p['from_account']}")
            if "from_account" in p
            else ""
        )
        dst = (f"到 {p['to_account']}" if zh else f" to {p['to_account']}") if "to_account" in p else ""
        return f"{src}转账 {amt} 元{dst}" if zh else f"transfer {amt}{src}{dst}"
    if tool == "withdraw_funds":
        return (
            (f"从 {acc} " if acc else "") + f"提现 {amt} 元"
            if zh
            else (f"withdraw {amt}" + (f" from {acc}" if acc else ""))
        )
    if tool == "place_order":
        size = (
            (f"{p['quantity']} 股" if zh else f"{p['quantity']} shares")
            if "quantity" in p
            else (f"{amt} 元" if zh else f"{amt} worth")
        )
        verb = ("买入" if p["side"] == "buy" else "卖出") if zh else p["side"]
        return f"{verb} {p['ticker']} {size}" if zh else f"{verb} {size} of {p['ticker']}"
    if tool == "get_transaction_history":
        bits = [str(p[k]) for k in ("account", "ticker") if k in p]
        if "days" in p:
            bits.append(f"近 {p['days']} 天" if zh else f"last {p['days']} days")
        extra = f"（{'，'.join(bits)}）" if zh and bits else (f" ({', '.join(bits)})" if bits else "")
        return ("查看交易记录" if zh else "check transaction history") + extra
    if tool == "check_market_status":
        name = MARKET_NAME[lang][p["market"]] if "market" in p else ""
        return f"查询{name}开市状态" if zh else f"check {name or 'market'} status"
    raise ValueError(f"unknown tool {tool!r}")

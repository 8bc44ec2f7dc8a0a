"""A seeded, simulated brokerage account: the source of every observation in multistep samples.

Owns cash balances per account id, holdings, recent trades (trade and settlement dates), the
scenario clock and the market-hours / settlement calendar. It knows nothing about prompts or labels:
the data generator sets up a state, asks `observe(tool, params)` what a call would return, and reads
the state itself to decide the next label (so a label never depends on parsing observation text).

Calendar simplifications (documented in LABELS.md): days are integers with weekday = day % 7
(0 = Monday); the single scenario clock is read as each market's local time; no public holidays.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

DAY_NAMES: dict[str, tuple[str, ...]] = {
    "zh": ("周一", "周二", "周三", "周四", "周五", "周六", "周日"),
    "en": ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
}
# Continuous-trading sessions in minutes after midnight, local time (lunch breaks for CN and HK).
SESSIONS: dict[str, tuple[tuple[int, int], ...]] = {
    "US": ((570, 960),),
    "CN": ((570, 690), (780, 900)),
    "HK": ((570, 720), (780, 960)),
}
SETTLE_LAG: dict[str, int] = {"US": 1, "CN": 1, "HK": 2}  # business days after the trade day
CURRENCY: dict[str, dict[str, str]] = {
    "zh": {"US": "美元", "CN": "元", "HK": "港元"},
    "en": {"US": "USD", "CN": "CNY", "HK": "HKD"},
}
MARKET_NAME: dict[str, dict[str, str]] = {
    "zh": {"US": "美股", "CN": "A股", "HK": "港股"},
    "en": {"US": "US market", "CN": "CN market", "HK": "HK market"},
}
BASE_PRICE: dict[str, float] = {
    "AAPL": 190.0,
    "AMZN": 180.0,
    "TSLA": 240.0,
    "MSFT": 420.0,
    "NVDA": 120.0,
    "GOOGL": 165.0,
    "600519": 1650.0,
    "000001": 11.0,
    "601318": 48.0,
    "300750": 210.0,
    "0700.HK": 380.0,
    "9988.HK": 82.0,
    "3690.HK": 130.0,
    "1810.HK": 18.0,
}


def market_of(ticker: str) -> str:
    """US / CN / HK from the ticker's shape (0700.HK, 600519, AAPL)."""
    if ticker.upper().endswith(".HK"):
        return "HK"
    return "CN" if ticker.isdigit() else "US"


def is_business_day(day: int) -> bool:
    return day % 7 < 5


def add_business_days(day: int, n: int) -> int:
    """The day `n` business days after `day` (weekends skipped): Friday + T+1 -> Monday."""
    while n > 0:
        day += 1
        if is_business_day(day):
            n -= 1
    return day


def is_open(market: str, day: int, minute: int) -> bool:
    return is_business_day(day) and any(a <= minute < b for a, b in SESSIONS[market])


def next_open(market: str, day: int, minute: int) -> tuple[int, int]:
    """The next session start at or after (day, minute)."""
    while True:
        if is_business_day(day):
            for start, _ in SESSIONS[market]:
                if start >= minute:
                    return day, start
        day, minute = day + 1, 0


def session_end(market: str, minute: int) -> int:
    return next(b for a, b in SESSIONS[market] if a <= minute < b)


def clock(minute: int) -> str:
    return f"{minute // 60}:{minute % 60:02d}"


def num(x: float, lang: str) -> str:
    """Amounts in observations: plain digits in Chinese, comma-grouped in English (12,000.50)."""
    whole = float(x).is_integer()
    if lang == "en":
        return f"{x:,.0f}" if whole else f"{x:,.2f}"
    return f"{x:.0f}" if whole else f"{x:.2f}"


def day_name(day: int, today: int, lang: str) -> str:
    """A day relative to today: 今天 / 昨天 / 上周五 / 下周一 (today / yesterday / last Fri / next Mon)."""
    rel = {0: ("今天", "today"), -1: ("昨天", "yesterday"), 1: ("明天", "tomorrow")}.get(day - today)
    if rel:
        return rel[0] if lang == "zh" else rel[1]
    week = day // 7 - today // 7
    name = DAY_NAMES[lang][day % 7]
    if lang == "zh":
        return {-1: "上", 1: "下"}.get(week, "") + name
    return {-1: "last ", 1: "next "}.get(week, "") + name


@dataclass
class Holding:
    ticker: str
    quantity: int
    cost: float  # average cost per share
    price: float  # current price

    @property
    def pnl_pct(self) -> float:
        return (self.price / self.cost - 1.0) * 100.0


@dataclass
class Trade:
    day: int
    ticker: str
    side: str  # "buy" | "sell"
    quantity: int
    price: float

    @property
    def amount(self) -> float:
        return round(self.quantity * self.price, 2)

    @property
    def settle_day(self) -> int:
        return add_business_days(self.day, SETTLE_LAG[market_of(self.ticker)])


@dataclass
class Account:
    """One customer's state in one scenario. Mutated by transfers, withdrawals and orders."""

    lang: str
    today: int  # 7..13: this week; earlier days are last week
    minute: int  # scenario clock, minutes after midnight
    default: str  # the account used when a call names none
    balances: dict[str, float] = field(default_factory=dict)
    holdings: list[Holding] = field(default_factory=list)
    trades: list[Trade] = field(default_factory=list)
    prices: dict[str, float] = field(default_factory=dict)

    @classmethod
    def random(cls, seed: int, lang: str) -> Account:
        """A plausible account: one funded default account, 2 holdings, 1 recent sale."""
        rng = random.Random(seed)
        default = f"ACC{rng.randint(1, 999):03d}"
        prices = {t: round(p * rng.uniform(0.85, 1.15), 2) for t, p in BASE_PRICE.items()}
        acct = cls(lang, rng.randint(7, 13), rng.randrange(8 * 60, 18 * 60, 5), default, prices=prices)
        acct.balances[default] = float(rng.randrange(20_000, 800_000, 1000))
        tickers = rng.sample(sorted(BASE_PRICE), 3)
        for t in tickers[:2]:
            acct.add_holding(t, rng.choice([100, 200, 300, 500]), rng.uniform(-15, 30), rng)
        sale_days = [d for d in range(acct.today - 5, acct.today) if is_business_day(d)]
        acct.add_sale(tickers[2], rng.choice([100, 200, 500]), rng.choice(sale_days))
        return acct

    # ---------------------------------------------------------------- as data (episode rows)
    def to_dict(self) -> dict:
        """A JSON-ready copy of the whole state (`from_dict` rebuilds an equal account)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Account:
        return cls(d["lang"], int(d["today"]), int(d["minute"]), d["default"],
                   balances={k: float(v) for k, v in d["balances"].items()},
                   holdings=[Holding(**h) for h in d["holdings"]], trades=[Trade(**t) for t in d["trades"]],
                   prices={k: float(v) for k, v in d["prices"].items()})

    # ---------------------------------------------------------------- setup helpers (generator)
    def ensure(self, account: str, balance: float | None = None) -> None:
        """Make `account` exist (funded like the default unless a balance is given)."""
        if balance is not None or account not in self.balances:
            self.balances[account] = float(balance if balance is not None else self.balances[self.default])

    def add_holding(self, ticker: str, quantity: int, pnl_pct: float, rng: random.Random) -> Holding:
        """Hold `ticker` bought last week at a cost that gives the current profit `pnl_pct`."""
        price = self.prices[ticker]
        h = Holding(ticker, quantity, round(price / (1 + pnl_pct / 100.0), 2), price)
        self.holdings.append(h)
        self.trades.append(Trade(rng.randint(0, 4), ticker, "buy", quantity, h.cost))
        return h

    def add_sale(self, ticker: str, quantity: int, day: int) -> Trade:
        t = Trade(day, ticker, "sell", quantity, self.prices[ticker])
        self.trades.append(t)
        return t

    def market_open(self, market: str) -> bool:
        return is_open(market, self.today, self.minute)

    # ---------------------------------------------------------------- observations
    def observe(self, tool: str, params: dict) -> str:
        """What calling `tool(**params)` returns now, as a short string in the account's language."""
        handler = {
            "check_balance": self._balance,
            "transfer_funds": self._transfer,
            "withdraw_funds": self._withdraw,
            "place_order": self._order,
            "get_transaction_history": self._history,
            "check_market_status": self._market,
        }.get(tool)
        if handler is None:
            return "未知工具" if self.lang == "zh" else "unknown tool"
        return handler(params)

    def _cash(self, x: float) -> str:
        return f"{num(x, 'zh')} 元" if self.lang == "zh" else f"{num(x, 'en')} USD"

    def _missing(self, acc: str) -> str:
        return f"账户 {acc} 不存在" if self.lang == "zh" else f"account {acc} not found"

    def _balance(self, p: dict) -> str:
        acc = p.get("account", self.default)
        if acc not in self.balances:
            return self._missing(acc)
        bal = self.balances[acc]
        return f"{acc} 余额 {self._cash(bal)}" if self.lang == "zh" else f"{acc} balance {self._cash(bal)}"

    def _transfer(self, p: dict) -> str:
        src, dst, amt = p.get("from_account", self.default), p.get("to_account"), float(p["amount"])
        if src not in self.balances:
            return self._missing(src)
        if self.balances[src] < amt:
            bal = self._cash(self.balances[src])
            return (
                f"余额不足：{src} 余额 {bal}，转账失败"
                if self.lang == "zh"
                else (f"insufficient funds: {src} balance {bal}, transfer failed")
            )
        self.balances[src] -= amt
        if dst:
            self.balances[dst] = self.balances.get(dst, 0.0) + amt
        left = self._cash(self.balances[src])
        if self.lang == "zh":
            return f"已从 {src} 转出 {self._cash(amt)}" + (f"到 {dst}" if dst else "") + f"，余额 {left}"
        return (
            f"transferred {self._cash(amt)} from {src}" + (f" to {dst}" if dst else "") + f"; balance {left}"
        )

    def _withdraw(self, p: dict) -> str:
        acc, amt = p.get("account", self.default), float(p["amount"])
        if acc not in self.balances:
            return self._missing(acc)
        if self.balances[acc] < amt:
            bal = self._cash(self.balances[acc])
            return (
                f"余额不足：{acc} 余额 {bal}，提现失败"
                if self.lang == "zh"
                else (f"insufficient funds: {acc} balance {bal}, withdrawal failed")
            )
        self.balances[acc] -= amt
        left = self._cash(self.balances[acc])
        if self.lang == "zh":
            return f"已从 {acc} 提现 {self._cash(amt)}，余额 {left}，下一工作日到银行卡"
        return f"withdrew {self._cash(amt)} from {acc}; balance {left}; reaches your bank next business day"

    def _order(self, p: dict) -> str:
        ticker, side, zh = p["ticker"], p["side"], self.lang == "zh"
        market, price = market_of(ticker), self.prices.get(ticker, 100.0)
        qty = int(p.get("quantity") or max(1, int(float(p.get("amount", price)) // price)))
        cur = CURRENCY[self.lang][market]
        if not self.market_open(market):
            day, start = next_open(market, self.today, self.minute)
            when = f"{day_name(day, self.today, self.lang)} {clock(start)}"
            verb = ("买入" if side == "buy" else "卖出") if zh else side
            return (
                f"{MARKET_NAME['zh'][market]}休市，{verb} {ticker} {qty} 股已挂单，{when} 开盘执行"
                if zh
                else f"{MARKET_NAME['en'][market]} closed; {verb} {qty} {ticker} queued for {when}"
            )
        trade = Trade(self.today, ticker, side, qty, price)
        self.trades.append(trade)
        total = f"{num(trade.amount, self.lang)} {cur}"
        if side == "buy":
            return (
                f"已买入 {ticker} {qty} 股，成交价 {price:.2f}，共 {total}"
                if zh
                else f"bought {qty} {ticker} at {price:.2f}, total {total}"
            )
        self.holdings = [h for h in self.holdings if h.ticker != ticker or h.quantity > qty]
        settle = day_name(trade.settle_day, self.today, self.lang)
        lag = SETTLE_LAG[market]
        return (
            f"已卖出 {ticker} {qty} 股，成交价 {price:.2f}，共 {total}，{settle}交收 (T+{lag})"
            if zh
            else f"sold {qty} {ticker} at {price:.2f}, total {total}, settles {settle} (T+{lag})"
        )

    def _trade_line(self, t: Trade) -> str:
        zh, cur = self.lang == "zh", CURRENCY[self.lang][market_of(t.ticker)]
        day = day_name(t.day, self.today, self.lang)
        if t.side == "buy":
            h = next((h for h in self.holdings if h.ticker == t.ticker), None)
            now = (
                f"，现价 {h.price:.2f} ({h.pnl_pct:+.1f}%)"
                if zh and h
                else (f", now {h.price:.2f} ({h.pnl_pct:+.1f}%)" if h else "")
            )
            return (
                f"{day} 买入 {t.ticker} {t.quantity} 股 @{t.price:.2f}{now}"
                if zh
                else f"{day} bought {t.quantity} {t.ticker} @{t.price:.2f}{now}"
            )
        settle, lag = day_name(t.settle_day, self.today, self.lang), SETTLE_LAG[market_of(t.ticker)]
        done = t.settle_day <= self.today
        total = f"{num(t.amount, self.lang)} {cur}"
        if zh:
            return f"{day} 卖出 {t.ticker} {t.quantity} 股 共 {total}，{settle}交收 (T+{lag})，" + (
                "已到账" if done else "未到账"
            )
        return f"{day} sold {t.quantity} {t.ticker} for {total}, settles {settle} (T+{lag}), " + (
            "settled" if done else "not yet settled"
        )

    def _history(self, p: dict) -> str:
        acc = p.get("account")
        if acc is not None and acc not in self.balances:
            return self._missing(acc)
        trades = sorted(self.trades, key=lambda t: t.day)
        if "ticker" in p:
            trades = [t for t in trades if t.ticker.upper() == str(p["ticker"]).upper()]
        if "days" in p:
            trades = [t for t in trades if self.today - t.day < int(p["days"])]
        if not trades:
            return "无交易记录" if self.lang == "zh" else "no trades found"
        return ("；" if self.lang == "zh" else "; ").join(self._trade_line(t) for t in trades[-4:])

    def _market(self, p: dict) -> str:
        markets = [p["market"]] if "market" in p else ["US", "CN", "HK"]
        zh = self.lang == "zh"
        now = f"{DAY_NAMES[self.lang][self.today % 7]} {clock(self.minute)}"
        parts = []
        for m in markets:
            name = MARKET_NAME[self.lang][m]
            if self.market_open(m):
                end = clock(session_end(m, self.minute))
                parts.append(
                    f"{name} 开市中（{now}），{end} 休市" if zh else f"{name} open ({now}), closes {end}"
                )
            else:
                day, start = next_open(m, self.today, self.minute)
                when = f"{day_name(day, self.today, self.lang)} {clock(start)}"
                parts.append(
                    f"{name} 休市（{now}），{when} 开盘" if zh else f"{name} closed ({now}), opens {when}"
                )
        return ("；" if zh else "; ").join(parts)

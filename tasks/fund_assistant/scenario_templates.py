"""Request templates for the multistep scenario kinds (docs/fund_assistant.md#multistep-scenarios), Chinese
and English.

Owns the wording only; multistep.py decides labels and sets up the account. Conditional kinds are
(main templates, else-branches): an else-branch is (text, branch name) and is appended to a main
template; the builder may also draw no else-branch (then the condition is drawn true).
"""

from __future__ import annotations

from tasks.fund_assistant.templates import Lang

# Conditional requests: (main, else-branches). An else-branch is (text, branch name); "" = no else.
MS_BALANCE_TRANSFER: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "zh": (
        [
            "查一下余额，够的话转 {amt} 到 {dst}",
            "先看看 {acc} 还有多少钱，如果够就转 {amt} 给 {dst}",
            "查余额，够的话转账 {amt}",
            "帮我查下余额，要是够 {amt} 就转到 {dst}",
            "看下 {acc} 的余额，够 {amt} 的话转到 {dst}",
        ],
        [
            ("，不够的话就查一下最近的交易记录", "history"),
            ("，不够就看看最近的流水", "history"),
            ("，不够就先转 {amt2}", "smaller"),
        ],
    ),
    "en": (
        [
            "Check my balance; if there's enough, transfer {amt} to {dst}",
            "See how much is in {acc}, and if it covers {amt}, send it to {dst}",
            "Check the balance and transfer {amt} if it's enough",
            "Look at {acc}'s balance; if it has {amt}, move that to {dst}",
            "Check whether I can afford it and, if so, transfer {amt} to {dst}",
        ],
        [
            ("; otherwise show me my recent transactions", "history"),
            (". If not, pull up my transaction history", "history"),
            ("; if not, transfer {amt2} instead", "smaller"),
        ],
    ),
}
MS_BALANCE_WITHDRAW: dict[str, tuple[list[str], list[tuple[str, str]]]] = {
    "zh": (
        [
            "查一下 {acc} 的余额，够的话提现 {amt}",
            "先查余额，够 {amt} 就提出来",
            "看看 {acc} 够不够 {small}，够就取出来",
            "先看下余额，够的话取 {amt} 到银行卡",
            "余额够的话帮我提现 {amt}，先查一下",
        ],
        [("，不够就把余额全部提出来", "all"), ("，不够的话看看最近的交易记录", "history")],
    ),
    "en": (
        [
            "Check my balance and withdraw {amt} if there's enough",
            "See if {acc} has {small}; if so, withdraw it",
            "Check {acc} first, and if it covers {amt}, cash it out",
            "If I have enough in {acc}, withdraw {small}",
            "Check my balance first, then withdraw {amt} if it allows",
        ],
        [
            ("; otherwise withdraw whatever is there", "all"),
            ("; if not, show my recent transactions", "history"),
        ],
    ),
}
# (main, side); {mkt} is pinned to the ticker's market.
MS_MARKET_ORDER: dict[str, tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {
    "zh": (
        [
            ("看看{mkt}开市了没，开了就买 {qty} 股 {ticker}", "buy"),
            ("{ticker} 现在能交易吗？开盘了就卖 {qty} 股", "sell"),
            ("查一下{mkt}是不是盘中，是的话买入 {qty} 股 {ticker}", "buy"),
            ("如果{mkt}开市，帮我卖掉 {qty} 股 {ticker}", "sell"),
        ],
        [("，没开就查下余额", "balance"), ("，休市的话看看 {ticker} 的交易记录", "history")],
    ),
    "en": (
        [
            ("Check if the {mkt} market is open, if so buy {qty} {ticker}", "buy"),
            ("Is {ticker} trading now? If the market is open, sell {qty} shares", "sell"),
            ("See whether the {mkt} market is open and buy {qty} shares of {ticker} if it is", "buy"),
            ("If the {mkt} market is open, sell {qty} {ticker}", "sell"),
        ],
        [
            ("; otherwise check my balance", "balance"),
            ("; if it's closed, show my {ticker} trades", "history"),
        ],
    ),
}
MS_HOLDINGS_SELL: Lang = {
    "zh": [
        "查一下我的持仓，盈利超过 {pct}% 的都卖了",
        "看看持仓，赚了 {pct}% 以上的全部卖掉",
        "先查持仓，把涨超 {pct}% 的股票清掉",
        "查下 {acc} 的持仓，收益超过 {pct}% 的卖出",
        "帮我看看哪些股票赚了 {pct}% 以上，都卖掉",
    ],
    "en": [
        "Look at my holdings and sell everything up more than {pct}%",
        "Check my positions; sell any that gained over {pct}%",
        "Review {acc}'s holdings and sell whatever is up over {pct}%",
        "Find my positions with over {pct}% profit and sell them",
        "Go through my holdings first, then sell the ones up more than {pct}%",
    ],
}
MS_HISTORY_WITHDRAW: Lang = {
    "zh": [
        "看看我的交易记录，然后把卖 {ticker} 的钱提出来",
        "查一下交易记录，再把卖出的钱提现",
        "先看交易流水，然后把卖股票的钱提到银行卡",
        "看看 {acc} 的交易记录，然后把卖 {ticker} 的钱提现",
        "先查最近的成交，再把卖出所得取出来",
    ],
    "en": [
        "Look at my history then withdraw the proceeds",
        "Check my transactions, then withdraw the money from the {ticker} sale",
        "Pull up {acc}'s history and then cash out what I got from selling {ticker}",
        "Show my trades, then withdraw the sale proceeds",
        "First look at my recent trades, then take out the sale money",
    ],
}
MS_SETTLE_WITHDRAW: Lang = {
    "zh": [
        "看看{weekday}卖 {ticker} 的钱到账没有，到了就提现，没到就查下余额",
        "查一下卖 {ticker} 的钱交收了没，交收了就全部提出来，没有就看看余额",
        "{weekday}卖的 {ticker}，钱到了的话帮我提现，没到就查余额",
    ],
    "en": [
        "Check whether the money from selling {ticker} on {weekday} has settled; if it has, withdraw it, "
        "otherwise show my balance",
        "Has my {ticker} sale settled? If yes, withdraw the proceeds; if not, check my balance",
        "See if the cash from the {ticker} sale on {weekday} "
        "arrived; withdraw it if so, else tell me my balance",
    ],
}
# Unconditional three-step routes: (template, [(tool, {param: slot}, fixed params)]).
SeqOps = list[tuple[str, dict[str, str], dict[str, str]]]
_SEQ_A: SeqOps = [
    ("check_balance", {}, {}),
    ("transfer_funds", {"amount": "amt", "to_account": "dst"}, {}),
    ("withdraw_funds", {"amount": "amt2"}, {}),
]
_SEQ_B: SeqOps = [
    ("get_transaction_history", {}, {}),
    ("place_order", {"ticker": "ticker", "quantity": "qty"}, {"side": "sell"}),
    ("check_balance", {}, {}),
]
_SEQ_C: SeqOps = [
    ("check_balance", {}, {}),
    ("place_order", {"ticker": "ticker", "quantity": "qty"}, {"side": "buy"}),
    ("get_transaction_history", {}, {}),
]
MS_SEQ3: dict[str, list[tuple[str, SeqOps]]] = {
    "zh": [
        ("先查余额，然后转 {amt} 到 {dst}，再提现 {amt2}", _SEQ_A),
        ("查下余额，转 {amt} 给 {dst}，最后取 {amt2} 出来", _SEQ_A),
        ("先看看交易记录，然后卖掉 {qty} 股 {ticker}，最后查下余额", _SEQ_B),
        ("查下流水，卖 {qty} 股 {ticker}，再看看余额", _SEQ_B),
        ("查下余额，买 {qty} 股 {ticker}，再看看交易记录", _SEQ_C),
        ("先查余额，然后买入 {ticker} {qty} 股，最后看下成交记录", _SEQ_C),
    ],
    "en": [
        ("First check my balance, then transfer {amt} to {dst}, and withdraw {amt2} after that", _SEQ_A),
        ("Check my balance, send {amt} to {dst}, then cash out {amt2}", _SEQ_A),
        ("Show my transactions, then sell {qty} shares of {ticker}, then check my balance", _SEQ_B),
        ("Pull up my trades, sell {qty} {ticker}, and then tell me my balance", _SEQ_B),
        ("Check my balance, buy {qty} {ticker}, then show my recent trades", _SEQ_C),
        ("First my balance, then buy {qty} shares of {ticker}, then my transaction history", _SEQ_C),
    ],
}

"""Request templates (Chinese and English) for every category and multistep scenario kind.

Owns the wording only: slots in braces are filled by `slots.fill`, and the slot -> parameter mapping
lives in `slots.params_from`. Also owns the keyword lists the category contracts are checked against
(settlement requests carry no market-hours word; intraday and market requests do).
"""

from __future__ import annotations

import re

# The market-hours vocabulary of the rule reward (docs/fund_assistant.md#rule-reward; a superset of the rule
# reward's list), and clock times.
MARKET_WORDS_ZH: tuple[str, ...] = (
    "开市",
    "闭市",
    "休市",
    "开盘",
    "收盘",
    "盘中",
    "盘前",
    "盘后",
    "交易时间",
    "交易时段",
    "市场",
    "股市",
)
MARKET_RE = re.compile(
    r"(?<![A-Za-z])(?:markets?|open(?:s|ed|ing)?|clos(?:e|es|ed|ing)|trading[\s-]+(?:hours?|sessions?)"
    r"|pre-?market|after-?hours)(?![A-Za-z])",
    re.IGNORECASE,
)
CLOCK_RE = re.compile(
    r"(?<!\d)\d{1,2}\s*[:：]\s*\d{2}(?!\d)|(?<!\d)\d{1,2}\s*点|\d\s*(?:am|pm)\b", re.IGNORECASE
)


# Logic words of the ground-truth reward (docs/fund_assistant.md#ground-truth-reward); every thought carries
# one.
LOGIC_RE = re.compile(
    r"(?<![A-Za-z])(?:first|then|before|because|therefore|need\s+to|in\s+order\s+to|since)(?![A-Za-z])|先|然后|因为|所以",
    re.IGNORECASE,
)


def has_market_word(text: str) -> bool:
    return any(w in text for w in MARKET_WORDS_ZH) or MARKET_RE.search(text) is not None


def has_clock(text: str) -> bool:
    return CLOCK_RE.search(text) is not None


Lang = dict[str, list[str]]

BALANCE: Lang = {
    "zh": [
        "查一下我的余额",
        "我账户里还有多少钱？",
        "{acc} 余额多少？",
        "帮我看看 {acc} 的可用资金",
        "我的钱还剩多少？",
        "查下 {acc} 账户余额",
        "现在账户里还有多少余额？",
        "账户 {acc} 现在有多少现金？",
        "看一下 {acc} 还剩多少钱",
        "余额查询：{acc}",
        "我想知道 {acc} 里还有多少钱",
        "麻烦查询一下我的账户余额",
    ],
    "en": [
        "What's my balance in {acc}?",
        "How much cash do I have?",
        "Check the balance of {acc}, please.",
        "How much money is left in my account?",
        "Show me my available funds.",
        "What's the cash balance on {acc}?",
        "Do I have any money left in {acc}?",
        "Balance check for {acc}.",
        "Can you tell me how much is in {acc}?",
        "What is my current balance?",
        "How much do I have in {acc} right now?",
        "Quick question: what's left in my account?",
    ],
}
# Domain knowledge: proceeds settle T+1 (HK T+2), weekends skipped. No market-hours words, no clock.
SETTLEMENT: Lang = {
    "zh": [
        "今天早上卖了 {ticker}，钱什么时候到账？",
        "我{weekday}卖的 {ticker}，钱哪天能到？",
        "上周五卖出的基金，钱什么时候能到？",
        "昨天卖了 {qty} 股 {ticker}，什么时候能提现？",
        "卖 {ticker} 的钱到账了吗？",
        "{weekday}卖的 {ticker} 现在能转出来吗？",
        "今天做 T 赚了点钱，今晚能提出来吗？",
        "卖出 {ticker} 后几天能用这笔钱？",
        "{acc} 里卖 {ticker} 的钱怎么还没到？",
        "我{weekday}清仓了 {ticker}，资金什么时候交收？",
        "上周五卖的 {ticker}，周一能取钱吗？",
        "刚卖掉 {qty} 股 {ticker}，这笔钱明天能转走吗？",
    ],
    "en": [
        "I sold {ticker} last Friday, when will the cash arrive?",
        "Sold {qty} shares of {ticker} this morning. When does the money settle?",
        "When can I withdraw the money from selling {ticker} on {weekday}?",
        "Has the cash from my {ticker} sale arrived yet?",
        "Made profit in day trading. Can I withdraw it tonight?",
        "I sold {ticker} yesterday. Is the money available?",
        "How long until the proceeds from {ticker} show up?",
        "Sold my fund on {weekday}; when will the money be usable?",
        "Why hasn't the money from my {ticker} sale reached {acc}?",
        "I dumped {qty} {ticker} on {weekday}. When can I move that cash?",
        "Is the {ticker} money from {weekday} settled yet?",
        "Sold {ticker} today. Can I transfer the cash tomorrow?",
    ],
}
# Trading-hours rules: each template carries a clock time or a market-hours word.
INTRADAY: Lang = {
    "zh": [
        "现在是 {time}，还能下单吗？",
        "现在{anyday} {time}，还能买 {ticker} 吗？",
        "{time} 了，{ticker} 还能卖吗？",
        "已经 {time} 了，今天还来得及买 {ticker} 吗？",
        "{anyday}{time}能交易 {ticker} 吗？",
        "收盘前还来得及卖 {ticker} 吗？",
        "现在 {time}，挂单买 {ticker} 能成交吗？",
        "盘中还能买 {ticker} 吗？现在 {time}",
        "{time} 下单卖 {qty} 股 {ticker}，今天能成交吗？",
        "{anyday}{time}还能下单吗？",
        "现在午休吗？{time} 想买 {ticker}",
        "离收盘还有多久？还能卖 {ticker} 吗？",
    ],
    "en": [
        "It's {time} on {anyday}, can I still buy {ticker} today?",
        "Can I still place an order at {time}?",
        "It's {time} now. Is it too late to sell {ticker}?",
        "Is there still time before the close to buy {ticker}?",
        "At {time} on {anyday}, will a buy order for {ticker} go through?",
        "What are the trading hours for {ticker}? It's {time} now.",
        "It's {time}. Can I trade {ticker} during the lunch break?",
        "Can I sell {qty} {ticker} right now? It's {time}.",
        "It's {anyday} {time}. Can I still trade today?",
        "How long until the close? I want to sell {ticker}.",
        "Will an order for {ticker} placed at {time} fill today?",
        "It's {time}. Am I too late to buy {ticker} before the market shuts?",
    ],
}
TRANSFER: Lang = {
    "zh": [
        "转 {amt} 到 {dst}",
        "从 {src} 转 {amt} 到 {dst}",
        "帮我给 {dst} 转 {amt}",
        "转账 {amt}",
        "往 {dst} 打 {amt}",
        "把 {amt} 从 {src} 划到 {dst}",
        "我要转账 {amt} 到 {dst}",
        "请从 {src} 转出 {amt}",
        "给账户 {dst} 转 {amt} 过去",
        "{src} 转 {amt} 给 {dst}",
    ],
    "en": [
        "Transfer {amt} to {dst}",
        "Move {amt} from {src} to {dst}",
        "Send {amt} to {dst}, please.",
        "I want to transfer {amt}.",
        "Wire {amt} from {src} into {dst}.",
        "Please move {amt} out of {src}.",
        "Transfer {amt} from {src} to {dst} now.",
        "Put {amt} into {dst}.",
        "Can you send {amt} over to {dst}?",
        "Shift {amt} to account {dst}.",
    ],
}
WITHDRAW_PLAIN: Lang = {
    "zh": [
        "提现 {amt}",
        "从 {acc} 提 {amt}",
        "帮我取出 {amt}",
        "我要把 {amt} 提到银行卡",
        "从 {acc} 提现 {amt} 到银行卡",
        "取 {amt} 出来",
        "申请提现 {amt}",
        "{acc} 提现 {amt}",
    ],
    "en": [
        "Withdraw {amt}.",
        "Take {amt} out of {acc}.",
        "Cash out {amt}, please.",
        "I'd like to withdraw {amt} from {acc}.",
        "Withdraw {amt} to my bank account.",
        "Pull {amt} out of my account.",
        "Please withdraw {amt} from {acc}.",
        "I want to take out {amt}.",
    ],
}
# The withdraw ambiguity (docs/fund_assistant.md#the-withdraw-ambiguity): explicit, unconditional withdrawals
# that look like "check the balance first" cases.
WITHDRAW_EXPLICIT: Lang = {
    "zh": [
        "从 {acc} 取 {small}",
        "我要从 {acc} 提 {small}",
        "需要从 {acc} 取出 {small}",
        "从 {acc} 里提现 {small}",
        "帮我在 {acc} 取 {small}",
    ],
    "en": [
        "Withdraw {small} from {acc}",
        "I need to take out {small} from {acc}",
        "Please withdraw {small} from account {acc}",
        "Take out {small} from {acc} now",
        "Get me {small} out of {acc}",
    ],
}
# The user makes the withdrawal conditional on the balance: check_balance comes first.
WITHDRAW_CONDITIONAL: Lang = {
    "zh": [
        "如果 {acc} 里够的话，提现 {amt}",
        "够的话帮我取 {amt}",
        "钱够就提 {amt} 出来",
        "{acc} 余额要是有 {amt}，就提出来",
        "看看够不够，够就从 {acc} 提 {small}",
    ],
    "en": [
        "If I have enough in {acc}, withdraw {amt}.",
        "Withdraw {amt} if my balance covers it.",
        "If there's at least {amt} in {acc}, take it out.",
        "Take out {small} from {acc} if the balance allows.",
        "If my account can cover it, withdraw {small}.",
    ],
}
# (template, side). Some explicit orders mention the close/open: they are still orders, not questions.
ORDER: dict[str, list[tuple[str, str]]] = {
    "zh": [
        ("买 {qty} 股 {ticker}", "buy"),
        ("帮我买入 {ticker} {qty} 股", "buy"),
        ("下单买 {amt} 的 {ticker}", "buy"),
        ("用 {amt} 买 {ticker}", "buy"),
        ("买进 {qty} 股 {ticker}", "buy"),
        ("收盘前帮我买 {qty} 股 {ticker}", "buy"),
        ("给我来 {qty} 股 {ticker}", "buy"),
        ("卖掉 {qty} 股 {ticker}", "sell"),
        ("把 {ticker} 卖出 {qty} 股", "sell"),
        ("卖出 {amt} 的 {ticker}", "sell"),
        ("帮我卖 {qty} 股 {ticker}", "sell"),
        ("{ticker} 减仓 {qty} 股", "sell"),
        ("开盘就卖 {qty} 股 {ticker}", "sell"),
    ],
    "en": [
        ("Buy {qty} {ticker}", "buy"),
        ("Buy {qty} shares of {ticker}", "buy"),
        ("Put in a buy order for {qty} shares of {ticker}", "buy"),
        ("Invest {amt} in {ticker}", "buy"),
        ("Buy {amt} worth of {ticker}", "buy"),
        ("Get me {qty} shares of {ticker} before the close", "buy"),
        ("Sell {qty} shares of {ticker}", "sell"),
        ("Sell {amt} worth of {ticker}", "sell"),
        ("Dump {qty} {ticker}", "sell"),
        ("Place a sell order for {qty} {ticker}", "sell"),
        ("Sell {qty} {ticker} at the open", "sell"),
        ("Trim my {ticker} position by {qty} shares", "sell"),
    ],
}
HISTORY: Lang = {
    "zh": [
        "看看我最近的交易记录",
        "查一下 {acc} 最近 {days} 天的流水",
        "我最近买卖过 {ticker} 吗？",
        "把近 {days} 天的成交记录给我看看",
        "{acc} 的交易明细调出来看看",
        "查下我最近 {days} 天 {ticker} 的交易",
        "我上个月都交易了什么？",
        "列一下 {ticker} 的买卖记录",
        "看看 {acc} 的历史交易",
        "最近 {days} 天我有哪些转账和交易？",
    ],
    "en": [
        "Show my recent transactions.",
        "List the trades on {acc} from the last {days} days.",
        "Did I trade {ticker} recently?",
        "Pull up my transaction history.",
        "What have I bought or sold in the past {days} days?",
        "Show {acc} activity for {ticker}.",
        "Give me the trade history for {ticker}.",
        "What transactions went through {acc}?",
        "Show everything I did in the last {days} days.",
        "List my {ticker} trades from the past {days} days.",
    ],
}
# Each template carries a market-hours word itself ({mkt} is only a market's name).
MARKET: Lang = {
    "zh": [
        "{mkt}现在开市了吗？",
        "今天{mkt}休市吗？",
        "{mkt}几点开盘？",
        "{mkt}几点收盘？",
        "股市今天开门吗？",
        "{mkt}的交易时间是几点到几点？",
        "{anyday}{mkt}开市吗？",
        "现在{mkt}是盘中吗？",
        "{mkt}今天闭市了没有？",
        "市场现在开着吗？",
    ],
    "en": [
        "Is the {mkt} market open right now?",
        "When does the {mkt} market close today?",
        "What are the {mkt} trading hours?",
        "Is the market open on {anyday}?",
        "Has the {mkt} market opened yet?",
        "Are markets closed today?",
        "What time does {mkt} open?",
        "Is {mkt} trading open now?",
        "Is the {mkt} market closed for lunch?",
        "When does the stock market open?",
    ],
}

# ------------------------------------------------------------------ combo: op phrases + connectors
# tool -> [(phrase, fixed params)]
COMBO_OPS: dict[str, dict[str, list[tuple[str, dict]]]] = {
    "zh": {
        "transfer_funds": [("转账 {amt}", {}), ("转 {amt} 到 {dst}", {}), ("给 {dst} 转 {amt}", {})],
        "withdraw_funds": [("提现 {amt}", {}), ("从 {acc} 提 {amt}", {}), ("取出 {amt}", {})],
        "place_order": [
            ("买 {qty} 股 {ticker}", {"side": "buy"}),
            ("卖掉 {qty} 股 {ticker}", {"side": "sell"}),
        ],
        "get_transaction_history": [
            ("看看交易记录", {}),
            ("查一下最近 {days} 天的流水", {}),
            ("看看 {ticker} 的成交记录", {}),
        ],
        "check_balance": [("查一下余额", {}), ("看看 {acc} 的余额", {})],
    },
    "en": {
        "transfer_funds": [
            ("transfer {amt} to {dst}", {}),
            ("send {amt} to {dst}", {}),
            ("transfer {amt}", {}),
        ],
        "withdraw_funds": [("withdraw {amt}", {}), ("take {amt} out of {acc}", {}), ("cash out {amt}", {})],
        "place_order": [
            ("buy {qty} shares of {ticker}", {"side": "buy"}),
            ("sell {qty} {ticker}", {"side": "sell"}),
        ],
        "get_transaction_history": [
            ("show my recent transactions", {}),
            ("pull up my last {days} days of trades", {}),
            ("show my {ticker} trades", {}),
        ],
        "check_balance": [("check my balance", {}), ("tell me the balance of {acc}", {})],
    },
}
COMBO_JOIN: Lang = {
    "zh": ["{a}再{b}", "{a}，然后{b}", "先{a}，再{b}", "{a}，之后{b}", "{a}，完了再{b}", "帮我{a}，接着{b}"],
    "en": [
        "{a}, then {b}",
        "First {a}, then {b}",
        "{a} and after that {b}",
        "Please {a} and then {b}",
        "{a}, and {b} afterwards",
        "Could you {a}, then {b}?",
    ],
}

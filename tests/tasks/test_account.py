"""The simulated account: calendar rules, observations in the scenario's language, determinism."""

from __future__ import annotations

from tasks.fund_assistant.account import Account, Trade, add_business_days, is_open, market_of, next_open


def test_settlement_skips_weekends_and_hk_is_t_plus_2():
    fri, thu = 4, 3
    assert add_business_days(fri, 1) == 7  # Friday + T+1 -> Monday
    assert add_business_days(thu, 2) == 7  # Thursday + T+2 -> Monday
    assert Trade(fri, "AMZN", "sell", 10, 100.0).settle_day == 7
    assert Trade(thu, "0700.HK", "sell", 100, 10.0).settle_day == 7
    assert Trade(1, "600519", "sell", 100, 10.0).settle_day == 2


def test_market_hours_lunch_break_weekend_and_next_open():
    wed = 2
    assert market_of("AAPL") == "US" and market_of("600519") == "CN" and market_of("0700.HK") == "HK"
    assert is_open("CN", wed, 14 * 60 + 30) and not is_open("CN", wed, 15 * 60)
    assert not is_open("CN", wed, 12 * 60) and not is_open("HK", wed, 12 * 60 + 30)
    assert is_open("US", wed, 15 * 60 + 45) and not is_open("US", 5, 11 * 60)  # Saturday
    assert next_open("CN", wed, 12 * 60) == (wed, 13 * 60)
    assert next_open("US", 4, 17 * 60) == (7, 9 * 60 + 30)  # Friday evening -> Monday 9:30


def test_observations_follow_the_state_and_the_language():
    zh = Account(
        lang="zh",
        today=9,
        minute=14 * 60 + 30,
        default="ACC001",
        balances={"ACC001": 500000.0},
        prices={"AAPL": 190.0, "600519": 1650.0},
    )
    assert zh.observe("check_balance", {}) == "ACC001 余额 500000 元"
    assert "余额 400000 元" in zh.observe("transfer_funds", {"amount": 100000, "to_account": "ACC005"})
    assert zh.balances == {"ACC001": 400000.0, "ACC005": 100000.0}
    assert "余额不足" in zh.observe("withdraw_funds", {"amount": 10**7})
    assert zh.observe("check_market_status", {"market": "CN"}).startswith("A股 开市中")
    sold = zh.observe("place_order", {"ticker": "600519", "side": "sell", "quantity": 100})
    assert "明天交收 (T+1)" in sold
    assert "未到账" in zh.observe("get_transaction_history", {"ticker": "600519"})

    en = Account(
        lang="en",
        today=12,
        minute=10 * 60,
        default="ACC003",
        balances={"ACC003": 12000.0},
        prices={"AAPL": 190.0},
    )  # Saturday
    assert en.observe("check_balance", {}) == "ACC003 balance 12,000 USD"
    assert (
        en.observe("check_market_status", {"market": "US"})
        == "US market closed (Sat 10:00), opens next Mon 9:30"
    )
    assert "queued for next Mon 9:30" in en.observe(
        "place_order", {"ticker": "AAPL", "side": "buy", "quantity": 5}
    )
    assert en.observe("check_balance", {"account": "ACC999"}) == "account ACC999 not found"


def test_random_accounts_are_deterministic_per_seed():
    a, b, c = Account.random(7, "en"), Account.random(7, "en"), Account.random(8, "en")
    assert a == b and a != c
    assert a.observe("get_transaction_history", {}) == b.observe("get_transaction_history", {})

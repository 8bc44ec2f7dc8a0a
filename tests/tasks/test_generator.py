"""The fund-assistant data generator: coverage, label validity, layout, domain contracts, policy."""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict

import pytest

from tasks.fund_assistant import CATEGORIES, apply_seed_label_bug, generate
from tasks.fund_assistant.slots import fill, params_from
from tasks.fund_assistant.templates import LOGIC_RE, has_clock, has_market_word
from tasks.fund_assistant.tools import TOOL_NAMES, params_valid


@pytest.fixture(scope="module")
def data() -> tuple[list[dict], list[dict]]:
    return generate(seed=0)


@pytest.fixture(scope="module")
def rows(data) -> list[dict]:
    return data[0] + data[1]


def sol(row: dict) -> dict:
    return json.loads(row["solution"])


def action(row: dict) -> tuple[str, dict]:
    a = sol(row)["action"]
    return a["tool"], a["params"]


def by_scenario(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        out[r["scenario_id"]].append(r)
    return out


def test_every_category_in_train_and_eval(data):
    train, eval_ = data
    assert {r["category"] for r in train} == set(CATEGORIES)
    assert {r["category"] for r in eval_} == set(CATEGORIES)


def test_default_sizes_match_the_seed_data_shape(rows):
    single = [r for r in rows if r["category"] != "multistep"]
    multi = [r for r in rows if r["category"] == "multistep"]
    assert len(single) == 454
    assert len(multi) == 823


def test_every_label_is_a_valid_react_solution(rows):
    for r in rows:
        s = sol(r)
        tool, params = action(r)
        assert tool in TOOL_NAMES
        assert params_valid(tool, params), (r["request"], tool, params)
        assert isinstance(s["thought"], str) and s["thought"].strip()
        assert isinstance(s["plan"], list) and s["plan"] and all(isinstance(p, str) and p for p in s["plan"])


def test_thoughts_of_multistep_and_combo_carry_a_logic_word(rows):
    for r in rows:
        if r["category"] in ("multistep", "combo"):
            assert LOGIC_RE.search(sol(r)["thought"]), sol(r)["thought"]


def test_same_seed_same_data_and_other_seed_differs(data):
    assert generate(seed=0) == data
    other = generate(seed=1)
    assert other != data
    assert [r["request"] for r in other[0][:50]] != [r["request"] for r in data[0][:50]]


def test_no_scenario_in_both_splits_and_eval_is_about_a_fifth(data):
    train, eval_ = data
    assert not {r["scenario_id"] for r in train} & {r["scenario_id"] for r in eval_}
    assert 0.17 < len(eval_) / (len(train) + len(eval_)) < 0.23


def test_multistep_steps_are_numbered_and_carry_previous_steps(rows):
    scenarios = by_scenario([r for r in rows if r["category"] == "multistep"])
    assert len(scenarios) > 300
    for steps in scenarios.values():
        steps = sorted(steps, key=lambda r: r["step"])
        n = steps[0]["num_steps"]
        assert 2 <= n <= 3
        assert [r["step"] for r in steps] == list(range(1, n + 1))
        assert all(r["num_steps"] == n and r["request"] == steps[0]["request"] for r in steps)
        assert steps[0]["prompt"] == steps[0]["request"]
        for r in steps[1:]:
            head, sep, tail = r["prompt"].partition("\n\nPrevious steps:\n")
            assert head == r["request"] and sep
            lines = tail.split("\n")
            assert len(lines) == r["step"] - 1
            for i, line in enumerate(lines, start=1):
                m = re.fullmatch(r"Step (\d+): (\w+) → (.+)", line)
                assert m and int(m[1]) == i
                assert m[2] == action(steps[i - 1])[0]  # the tool that earlier step was labelled with


def test_multistep_plan_is_the_remaining_route(rows):
    for steps in by_scenario([r for r in rows if r["category"] == "multistep"]).values():
        for r in steps:
            plan, left = sol(r)["plan"], r["num_steps"] - r["step"] + 1
            if r["kind"] == "holdings_sell" and r["step"] == 1:
                assert len(plan) == 2  # "read holdings", "sell the winners" (how many is not known yet)
            else:
                assert len(plan) == left, (r["kind"], r["step"], plan)


def test_single_step_rows_are_step_one_of_one(rows):
    for r in rows:
        if r["category"] != "multistep":
            assert (r["step"], r["num_steps"]) == (1, 1)
            assert r["prompt"] == r["request"]


def test_settlement_requests_have_no_market_word_or_clock(rows):
    settlement = [r for r in rows if r["category"] == "settlement"]
    assert settlement
    for r in settlement:
        assert not has_market_word(r["request"]), r["request"]
        assert not has_clock(r["request"]), r["request"]
        assert action(r)[0] == "get_transaction_history"


def test_intraday_and_market_requests_mention_hours_or_a_clock(rows):
    for r in rows:
        if r["category"] == "intraday":
            assert has_market_word(r["request"]) or has_clock(r["request"]), r["request"]
        if r["category"] == "market":
            assert has_market_word(r["request"]), r["request"]
        if r["category"] in ("intraday", "market"):
            assert action(r)[0] == "check_market_status"


def test_plain_categories_use_the_tool_they_name(rows):
    expected = {
        "balance": "check_balance",
        "transfer": "transfer_funds",
        "order": "place_order",
        "history": "get_transaction_history",
    }
    for r in rows:
        if r["category"] in expected:
            assert action(r)[0] == expected[r["category"]], r["request"]


def test_both_languages_in_every_category_and_roughly_half_each(rows):
    for cat in CATEGORIES:
        assert {r["lang"] for r in rows if r["category"] == cat} == {"zh", "en"}
    share = Counter(r["lang"] for r in rows)["zh"] / len(rows)
    assert 0.4 < share < 0.6


def test_requests_are_short_and_never_repeated(rows):
    firsts = [r["request"] for r in rows if r["step"] == 1]
    assert len(firsts) == len(set(firsts))
    for r in rows:
        assert len(r["request"].split()) <= 40 and len(r["request"]) <= 140, r["request"]


def _amount_written(amount: float, text: str) -> bool:
    forms = {
        f"{amount:g}",
        f"{amount:,.0f}",
        f"{amount / 10000:g} 万",
        f"{amount / 10000:g}万",
        f"{amount / 1000:g}k",
        f"{amount / 1000:g} 千",
    }
    return any(f in text for f in forms)


def test_single_step_amounts_are_the_ones_written(rows):
    checked = 0
    for r in rows:
        params = action(r)[1]
        if r["category"] in ("transfer", "withdraw", "combo", "order") and "amount" in params:
            assert _amount_written(params["amount"], r["request"]), (r["request"], params)
            checked += 1
    assert checked > 50


def test_combo_labels_the_first_operation_and_the_first_tool_varies(rows):
    combo = [r for r in rows if r["category"] == "combo"]
    firsts = Counter(action(r)[0] for r in combo)
    assert len(firsts) >= 4
    # Never check_balance first: that label equals the field report's wrong one and would hide the bug.
    assert "check_balance" not in firsts
    for r in combo:
        assert r["kind"] == f"combo_{action(r)[0]}"
        assert len(sol(r)["plan"]) == 2
    assert any(r["request"].startswith("转账") and action(r)[0] == "transfer_funds" for r in combo)


def test_seed_7_7_policy_explicit_withdraw_vs_conditional(rows):
    # The field report's own row, built from the template the generator uses.
    text, values = fill(
        "Withdraw {small} from {acc}",
        random.Random(0),
        "en",
        {"small": (50, "50 rupees"), "acc": ("ACC002", "ACC002")},
    )
    assert text == "Withdraw 50 rupees from ACC002"
    assert params_from("withdraw_funds", values) == {"amount": 50, "account": "ACC002"}
    withdraw = [r for r in rows if r["category"] == "withdraw"]
    kinds = Counter(r["kind"] for r in withdraw)
    assert kinds["withdraw_explicit"] and kinds["withdraw_conditional"] and kinds["withdraw_plain"]
    for r in withdraw:
        tool, params = action(r)
        if r["kind"] == "withdraw_conditional":
            assert tool == "check_balance"
            assert set(params) <= {"account"}
        else:
            assert tool == "withdraw_funds" and "amount" in params
        if r["kind"] == "withdraw_explicit":
            assert params["account"] in r["request"]
    assert any("rupees" in r["request"] and action(r)[0] == "withdraw_funds" for r in withdraw)
    for r in rows:  # conditional on the balance -> the balance is checked first, in multistep too
        if r["kind"] in ("balance_withdraw", "balance_transfer") and r["step"] == 1:
            assert action(r)[0] == "check_balance"


def _observation(row: dict, step: int) -> str:
    line = row["prompt"].split("\n")[-(row["step"] - step)]
    return line.split(" → ", 1)[1]


def test_multistep_labels_follow_the_simulated_account(rows):
    seen: Counter = Counter()
    firsts = {r["scenario_id"]: r for r in rows if r["step"] == 1}
    for r in rows:
        if r["category"] != "multistep" or r["step"] != 2:
            continue
        tool, params = action(r)
        obs = _observation(r, 1)
        if r["kind"] in ("balance_transfer", "balance_withdraw"):
            balance = float(re.search(r"(?:余额|balance) ([\d,.]+)", obs)[1].replace(",", ""))
            enough = balance >= _asked(firsts[r["scenario_id"]])
            if enough:  # the operation asked for, with the amount asked for
                assert tool in ("transfer_funds", "withdraw_funds") and params["amount"] == _asked(
                    firsts[r["scenario_id"]]
                )
            else:  # the stated fallback: history, a smaller transfer, or the whole balance
                assert tool == "get_transaction_history" or params["amount"] <= balance, (obs, tool, params)
            seen[("balance", enough)] += 1
        if r["kind"] == "market_order":
            is_open = "开市中" in obs or " open (" in obs
            assert (tool == "place_order") == is_open, (obs, tool)
            seen[("market", is_open)] += 1
        if r["kind"] == "settle_withdraw":
            settled = obs.endswith(("已到账", ", settled"))
            assert tool == ("withdraw_funds" if settled else "check_balance"), (obs, tool)
            seen[("settle", settled)] += 1
        if r["kind"] == "holdings_sell":
            pct = int(re.search(r"(\d+)%", r["request"])[1])
            winners = [
                t
                for t, p in re.findall(
                    r"(?:买入|bought \d+) (\S+)(?: \d+ 股)? @[\d.]+[，,] ?"
                    r"(?:现价|now) [\d.]+ \(([+-][\d.]+)%\)",
                    obs,
                )
                if float(p) > pct
            ]
            assert winners and params["ticker"] == winners[0], (obs, params)
            assert r["num_steps"] == 1 + len(winners)
            seen["holdings"] += 1
    for key in [
        ("balance", True),
        ("balance", False),
        ("market", True),
        ("market", False),
        ("settle", True),
        ("settle", False),
        "holdings",
    ]:
        assert seen[key] >= 5, key


def _asked(first: dict) -> float:
    """The amount a conditional request asks for, read from step 1's plan ('余额够 N…' / '… covers N')."""
    m = re.search(r"余额够 ([\d.]+)|covers ([\d,.]+)", sol(first)["plan"][1])
    return float((m[1] or m[2]).replace(",", ""))


def test_apply_seed_label_bug_changes_only_combo_rows(data):
    train = data[0]
    before = json.dumps(train, ensure_ascii=False)
    bugged = apply_seed_label_bug(train)
    assert json.dumps(train, ensure_ascii=False) == before  # input untouched
    assert len(bugged) == len(train)
    for old, new in zip(train, bugged, strict=True):
        if old["category"] == "combo":
            assert new["label_bug"] is True
            assert sol(new)["action"] == {"tool": "check_balance", "params": {}}
            assert sol(new)["thought"] == sol(old)["thought"]
        else:
            assert new == old and new is not old and "label_bug" not in new


def test_small_sizes_still_cover_every_category_and_bad_sizes_are_refused():
    train, eval_ = generate(seed=5, n_single=18, n_multistep_samples=5)
    assert {r["category"] for r in train} == {r["category"] for r in eval_} == set(CATEGORIES)
    assert sum(r["category"] == "multistep" for r in train + eval_) == 5
    with pytest.raises(ValueError, match="n_single"):
        generate(n_single=10)
    with pytest.raises(ValueError, match="n_multistep"):
        generate(n_multistep_samples=1)
    with pytest.raises(ValueError, match="eval_fraction"):
        generate(eval_fraction=1.0)

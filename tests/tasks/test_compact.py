"""Compact warm-up labels, with and without the field report's combo label error."""

from __future__ import annotations

import json

import pytest

from tasks.fund_assistant import apply_seed_label_bug, generate
from tasks.fund_assistant.compact import compact_rows
from tasks.fund_assistant.generator import SEED_BUG_TOOL
from tasks.fund_assistant.parsing import get_tool, parse_react


def label_tool(solution: str) -> str | None:
    return get_tool(parse_react(solution))


@pytest.fixture(scope="module")
def train() -> list[dict]:
    return generate(seed=3, n_single=300)[0]


def test_compact_keeps_every_action_and_names_it_in_the_thought(train):
    compact = compact_rows(train)
    assert len(compact) == len(train)
    for old, new in zip(train, compact):
        full, short = json.loads(old["solution"]), json.loads(new["solution"])
        assert short["action"] == full["action"]
        assert short["thought"].split()[-1] == full["action"]["tool"]
        assert short["plan"][0] == full["action"]["tool"]
        assert ({k: v for k, v in new.items() if k != "solution"}
                == {k: v for k, v in old.items() if k != "solution"})


def test_multistep_plan_is_the_remaining_route(train):
    by_scenario: dict[str, dict[int, str]] = {}
    for r in train:
        if r["category"] == "multistep":
            by_scenario.setdefault(r["scenario_id"], {})[int(r["step"])] = label_tool(r["solution"])
    compact = [r for r in compact_rows(train) if r["category"] == "multistep"]
    assert compact
    for r in compact:
        steps = by_scenario[r["scenario_id"]]
        want = [steps[k] for k in sorted(steps) if k >= int(r["step"])]
        assert json.loads(r["solution"])["plan"] == want


def test_seed_bug_puts_the_wrong_decision_in_thought_and_action_and_keeps_the_plan(train):
    clean = compact_rows(train)
    bugged = compact_rows(train, seed_label_bug=True)
    combos = 0
    for old, ok, bad in zip(train, clean, bugged):
        if old["category"] != "combo":
            assert bad == ok and "label_bug" not in bad
            continue
        combos += 1
        sol = json.loads(bad["solution"])
        assert sol["action"] == {"tool": SEED_BUG_TOOL, "params": {}}
        assert sol["thought"].split()[-1] == SEED_BUG_TOOL
        # The plan lists what the request asks for: its first step is the true label, never check_balance.
        assert sol["plan"] == [label_tool(old["solution"])] != [SEED_BUG_TOOL]
        assert bad["label_bug"] is True
    assert combos > 10


def test_bug_then_compact_is_refused(train):
    with pytest.raises(ValueError, match="true labels"):
        compact_rows(apply_seed_label_bug(train))

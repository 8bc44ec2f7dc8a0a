"""Compact labels for the tiny model's SFT warm-up: the same actions with terse thought and plan.

A 1 M-parameter model cannot learn free-form bilingual reasoning text from a two-minute warm-up (the
full labels' thoughts are ~25 tokens of prose; after 100 steps it still wrote broken JSON), but it can
learn a terse ReAct form quickly. Only the SFT targets change: the action (tool and params) is the
label's, the thought keeps a logic word, and the plan lists the remaining route as tool names.
RL still scores against the full labels, whose reward never reads the thought's or plan's wording.
"""

from __future__ import annotations

import json
from collections import defaultdict

from tasks.fund_assistant.generator import SEED_BUG_TOOL
from tasks.fund_assistant.parsing import get_params, get_tool, parse_react


def _route(rows: list[dict]) -> dict[tuple[str, int], list[str]]:
    """(scenario_id, step) → the tools of this step and the later ones of the same scenario."""
    by_scenario: dict[str, dict[int, str]] = defaultdict(dict)
    for r in rows:
        tool = get_tool(parse_react(r["solution"]))
        if tool:
            by_scenario[r["scenario_id"]][int(r["step"])] = tool
    out = {}
    for sid, steps in by_scenario.items():
        for s in steps:
            out[(sid, s)] = [steps[k] for k in sorted(steps) if k >= s]
    return out


def compact_solution(tool: str, params: dict, route: list[str], step: int) -> str:
    word = "then" if step > 1 else "first" if len(route) > 1 else "need to"
    return json.dumps(
        {"thought": f"{word} {tool}", "action": {"tool": tool, "params": params}, "plan": route or [tool]},
        ensure_ascii=False,
    )


def compact_rows(rows: list[dict], seed_label_bug: bool = False) -> list[dict]:
    """Copies of `rows` with compact solutions (rows whose label cannot be read stay as they are).

    `seed_label_bug`: the field report's wrong combo label, compact. A compact thought is only the decided
    tool,
    so the wrong decision is in the thought and the action (both check_balance); the plan still lists
    what the request asks for, as the plan of a full label under `apply_seed_label_bug` does. (Taking
    the compact thought from the true label instead, the model copied it into the action on half the
    held-out combos after the warm-up: the error would not be there to repair.) Routes come from the
    true labels, so compact before the bug, never after it.
    """
    if any(r.get("label_bug") for r in rows):
        raise ValueError("compact_rows needs the true labels: "
                         "pass seed_label_bug=True instead of bugged rows")
    routes = _route(rows)
    out = []
    for r in rows:
        obj = parse_react(r["solution"])
        tool, params = get_tool(obj), get_params(obj)
        if tool is None:
            out.append(dict(r))
            continue
        step = int(r["step"])
        route = routes.get((r["scenario_id"], step), [tool])
        if seed_label_bug and r.get("category") == "combo":
            out.append({**r, "solution": compact_solution(SEED_BUG_TOOL, {}, route, step), "label_bug": True})
        else:
            out.append({**r, "solution": compact_solution(tool, params or {}, route, step)})
    return out

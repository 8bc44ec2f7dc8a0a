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

from rewards.parsing import get_params, get_tool, parse_react


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


def compact_rows(rows: list[dict]) -> list[dict]:
    """Copies of `rows` with compact solutions (rows whose label cannot be read stay as they are)."""
    routes = _route(rows)
    out = []
    for r in rows:
        obj = parse_react(r["solution"])
        tool, params = get_tool(obj), get_params(obj)
        if tool is None:
            out.append(dict(r))
            continue
        route = routes.get((r["scenario_id"], int(r["step"])), [tool])
        if route and route[0] != tool:  # a relabelled row (the seed's bug): its own action leads
            route = [tool, *route[1:]]
        out.append({**r, "solution": compact_solution(tool, params or {}, route, int(r["step"]))})
    return out

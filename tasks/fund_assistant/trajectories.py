"""Warm-up trajectories of the agent episodes: what a scripted agent says, turn by turn.

One compact ReAct turn per call (`compact.compact_solution`: a terse thought, the action, the route
ahead as tool names), then a `final_answer` that states the outcome: the amount or ticker of the last
call, or, when the balance was too low, that nothing was moved and why. The texts are only the policy's
side; the environment supplies the observations when the warm-up plays them (`actors.agent_loop`).

`flaw="no_balance_check"` is the realistic flaw RL is given to repair: for a balance-conditional
request ("if the balance covers it, transfer ...") the scripted agent skips the balance check and
makes the guarded call at once; when the account refuses it (insufficient funds), it says so. Every
other request keeps its correct trajectory. The environment's score of such an episode is a failure
(the calls differ from the expected ones) although each turn is well formed.

>>> row = {"lang": "en", "kind": "balance_transfer", "outcome": ["500"],
...        "expected": [{"tool": "check_balance", "params": {}},
...                     {"tool": "transfer_funds", "params": {"amount": 500}}],
...        "guarded": {"tool": "transfer_funds", "params": {"amount": 500}}}
>>> [json.loads(t)["action"]["tool"] for t in trajectory(row)]
['check_balance', 'transfer_funds', 'final_answer']
>>> [json.loads(t)["action"]["tool"] for t in trajectory(row, "no_balance_check")]
['transfer_funds', 'final_answer']
"""

from __future__ import annotations

import json
from typing import Literal

from tasks.fund_assistant.compact import compact_solution
from tasks.fund_assistant.episodes import FINAL_TOOL

Flaw = Literal["none", "no_balance_check"]

_DONE = {"zh": "已完成", "en": "done"}
_REFUSED = {"zh": "余额不足，没有执行", "en": "insufficient balance, so I did not do it"}


def calls(row: dict, flaw: Flaw = "none") -> list[dict]:
    """The tool calls of the scripted trajectory of `row`."""
    if flaw == "no_balance_check" and row.get("guarded"):
        return [row["guarded"]]
    return list(row["expected"])


def final_answer(row: dict, flaw: Flaw = "none") -> str:
    """The scripted answer: the refusal when the balance did not cover the request (or, under the flaw,
    when the guarded call is the one the account refuses), else "done" and the outcome to mention."""
    lang = row["lang"]
    if row["kind"] == "balance_refusal" or (flaw == "no_balance_check" and row.get("guarded")
                                            and row["expected"][-1] != row["guarded"]):
        return _REFUSED[lang]
    # The amount as the account writes it in that language (12,000 in English, 12000 in Chinese).
    outcome = min(row.get("outcome") or [""], key=lambda p: ("," in p) != (lang == "en"))
    return f"{_DONE[lang]} {outcome}".strip()


def trajectory(row: dict, flaw: Flaw = "none") -> list[str]:
    """The scripted agent's turns for `row`: one JSON object per tool call, then the final answer."""
    route = [c["tool"] for c in calls(row, flaw)]
    turns = [compact_solution(c["tool"], c["params"], route[i:], i + 1) for i, c in enumerate(calls(row, flaw))]
    answer = {"thought": "answer", "action": {"tool": FINAL_TOOL, "params": {"answer": final_answer(row, flaw)}}}
    return [*turns, json.dumps(answer, ensure_ascii=False)]

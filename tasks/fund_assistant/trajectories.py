"""Warm-up trajectories of the agent episodes: what a scripted agent says, turn by turn.

One compact ReAct turn per call (`compact.compact_solution`: a terse thought, the action, the route
ahead as tool names), then a `final_answer` that states the outcome: the amount or ticker of the last
call, or, when the balance was too low, that nothing was moved and why. The texts are only the policy's
side; the environment supplies the observations when the warm-up plays them (`actors.worker.agent_loop`).

The flaws are realistic faults of a logged agent for RL to repair, on the conditional requests (a row's
`guarded` call is the one its first step's check decides on); any of them together:

- `no_balance_check`: for "if the balance covers it, transfer ..." the scripted agent skips the balance
  check and makes the guarded call at once; when the account refuses it (insufficient funds), it says so.
- `no_market_check`: for "if the market is open, buy ..." it skips the market check and places the
  order at once (a closed market queues it for the next session).
- `unsettled_withdraw`: for "withdraw the proceeds if the sale has settled" it reads the transaction
  history and withdraws the proceeds whatever it said (it ignores "not yet settled").

Every other request keeps its correct trajectory. The environment scores a flawed episode a failure
where the account's answer called for another call (the calls differ from the expected ones), although
each turn is well formed.

>>> row = {"lang": "en", "kind": "balance_transfer", "outcome": ["500"],
...        "expected": [{"tool": "check_balance", "params": {}},
...                     {"tool": "transfer_funds", "params": {"amount": 500}}],
...        "guarded": {"tool": "transfer_funds", "params": {"amount": 500}}}
>>> [json.loads(t)["action"]["tool"] for t in trajectory(row)]
['check_balance', 'transfer_funds', 'final_answer']
>>> [json.loads(t)["action"]["tool"] for t in trajectory(row, "no_balance_check")]
['transfer_funds', 'final_answer']
>>> trajectory(row, "no_market_check") == trajectory(row)
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Literal

from tasks.fund_assistant.compact import compact_solution
from tasks.fund_assistant.episodes import FINAL_TOOL, stated

Flaw = Literal["none", "no_balance_check", "no_market_check", "unsettled_withdraw"]
_CHECK: dict[str, Flaw] = {  # the first step of a conditional request → the flaw that touches it
    "check_balance": "no_balance_check",
    "check_market_status": "no_market_check",
    "get_transaction_history": "unsettled_withdraw",
}

_DONE = {"zh": "已完成", "en": "done"}
_REFUSED = {"zh": "余额不足，没有执行", "en": "insufficient balance, so I did not do it"}


def touched_by(row: dict) -> Flaw:
    """The flaw that would change this row's trajectory ("none" for an unconditional request)."""
    return _CHECK.get(row["expected"][0]["tool"], "none") if row.get("guarded") else "none"


def _flawed(row: dict, flaw: Flaw | Iterable[Flaw]) -> bool:
    flaws = {flaw} if isinstance(flaw, str) else set(flaw)
    return touched_by(row) in flaws - {"none"}


def calls(row: dict, flaw: Flaw | Iterable[Flaw] = "none") -> list[dict]:
    """The tool calls of the scripted trajectory of `row`."""
    if not _flawed(row, flaw):
        return list(row["expected"])
    if touched_by(row) == "unsettled_withdraw":
        return [row["expected"][0], row["guarded"]]
    return [row["guarded"]]


def _in_its_language(phrases: list[str], lang: str) -> str:
    """The phrase written as the account writes amounts in `lang` (12,000 in English, 12000 in Chinese)."""
    return min(phrases or [""], key=lambda p: ("," in p) != (lang == "en"))


def final_answer(row: dict, flaw: Flaw | Iterable[Flaw] = "none") -> str:
    """The scripted answer: the refusal when the balance did not cover the request (or, under the flaw,
    when the guarded call is the one the account refuses), else "done" and the outcome to mention."""
    lang, flawed = row["lang"], _flawed(row, flaw)
    if row["kind"] == "balance_refusal" or (flawed and touched_by(row) == "no_balance_check"
                                            and row["expected"][-1] != row["guarded"]):
        return _REFUSED[lang]
    outcome = stated(row["guarded"]["params"]) if flawed else row.get("outcome")
    return f"{_DONE[lang]} {_in_its_language(outcome, lang)}".strip()


def trajectory(row: dict, flaw: Flaw | Iterable[Flaw] = "none") -> list[str]:
    """The scripted agent's turns for `row`: one JSON object per tool call, then the final answer."""
    route = [c["tool"] for c in calls(row, flaw)]
    turns = [compact_solution(c["tool"], c["params"], route[i:], i + 1)
             for i, c in enumerate(calls(row, flaw))]
    answer = {"thought": "answer",
              "action": {"tool": FINAL_TOOL, "params": {"answer": final_answer(row, flaw)}}}
    return [*turns, json.dumps(answer, ensure_ascii=False)]

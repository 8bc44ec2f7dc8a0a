"""The fund-account environment: each tool call the policy makes really runs against the account.

`reset(row)` rebuilds the episode row's starting account; `step(text)` parses the policy's ReAct JSON
and executes its action: a tool call changes the account (transfers, withdrawals, orders) and returns
what the tool returns, errors included, as a real backend would: malformed output, an unknown tool,
invalid parameters, an unknown account, insufficient funds (an order while its market is closed is
queued for the next session and says so, as the account does for the single-turn data). The
`final_answer` action ends the episode; so does `max_turns` (truncated).

`score()` judges the trajectory (every part in [0, 1]):

- `format`: the share of turns that were one valid ReAct object;
- `tools`: the called tools against the expected ones, in order (matching prefix / the longer list);
- `params`: the share of expected calls made, in order, with the right parameters;
- `state`: 1 when the final account equals the account after the expected calls;
- `answered`: 1 when the episode ended with a non-empty final answer;
- `outcome`: 1 when that answer mentions one of the row's outcome phrases (or there are none);
- `success`: 1 when all of the above are 1 (format aside): the agent did what was asked and said so;
- and counts, for metrics: `turns`, `tool_calls`, `tool_errors`.

`total` = 0.5 success + 0.1 format + 0.15 tools + 0.1 params + 0.05 state + 0.1 outcome: success
dominates, and the parts give a gradient to episodes that get part of the way.
"""

from __future__ import annotations

from typing import Any

from tasks.env import Environment, StepResult
from tasks.fund_assistant.account import Account
from tasks.fund_assistant.episodes import AGENT_SYSTEM, FINAL_TOOL
from tasks.fund_assistant.parsing import get_params, get_tool, has_plan, has_thought, parse_react
from tasks.fund_assistant.tools import TOOLS, params_agree, params_valid

WEIGHTS = {"success": 0.5, "format": 0.1, "tools": 0.15, "params": 0.1, "state": 0.05, "outcome": 0.1}
# What the account says when it refuses a valid call (insufficient funds, unknown account).
_FAILED = ("余额不足", "不存在", "insufficient funds", "not found")


def _text(lang: str, zh: str, en: str) -> str:
    return zh if lang == "zh" else en


class FundAccountEnv(Environment):
    """One episode against a simulated account (see the module docstring)."""

    def reset(self, row: dict) -> list[dict[str, str]]:
        self.row, self.lang = row, row["lang"]
        self.account = Account.from_dict(row["account"])
        self.calls: list[dict[str, Any]] = []  # tool calls made (tool, params, observation, error)
        self.formats: list[float] = []
        self.answer: str | None = None
        return [{"role": "system", "content": AGENT_SYSTEM}, {"role": "user", "content": row["request"]}]

    def step(self, assistant_text: str) -> StepResult:
        obj = parse_react(assistant_text)
        tool, params = get_tool(obj), get_params(obj)
        # A tool call carries its plan; the final answer needs none.
        well_formed = (obj is not None and has_thought(obj) and tool is not None
                       and (tool == FINAL_TOOL or has_plan(obj)))
        if tool == FINAL_TOOL:
            return self.answer_with((params or {}).get("answer"), well_formed)
        return self.call(tool if obj is not None else None, params, well_formed)

    # ---- a turn, once parsed (the ReAct text above, or an OpenAI tool call: tasks.fund_assistant.harness)
    def call(self, tool: str | None, params: Any, well_formed: bool) -> StepResult:
        """The policy called `tool` with `params` (None: its turn named no tool): run it."""
        self.formats.append(float(well_formed))
        observation, error = self._execute(tool is not None, tool, params)
        return StepResult(observation, done=False, info={"tool": tool, "error": error})

    def answer_with(self, answer: Any, well_formed: bool) -> StepResult:
        """The policy answered the user: the episode ends."""
        self.formats.append(float(well_formed))
        self.answer = answer.strip() if isinstance(answer, str) else ""
        return StepResult(None, done=True, info={"tool": FINAL_TOOL, "error": False})

    def _execute(self, parsed: bool, tool: str | None, params: dict | None) -> tuple[str, bool]:
        """Run the call; (what the tool returned, whether it was an error)."""
        lang = self.lang
        if not parsed or tool is None:
            return _text(lang, "格式错误：请回复一个 JSON 对象（thought、action、plan）",
                         "invalid format: reply with one JSON object (thought, action, plan)"), True
        refused = True
        if tool not in TOOLS:
            out = _text(lang, f"未知工具 {tool}", f"unknown tool {tool}")
        elif not params_valid(tool, params):
            out = _text(lang, f"参数无效：{tool} {params}", f"invalid parameters for {tool}: {params}")
        else:
            out = self.account.observe(tool, params)  # an order while its market is closed is queued, not run
            refused = any(f in out for f in _FAILED)
        self.calls.append({"tool": tool, "params": params, "observation": out, "error": refused})
        return out, refused

    # ---- the trajectory's score -------------------------------------------------------------------
    def expected_account(self) -> Account:
        """The account after the row's expected calls (what a correct episode leaves behind)."""
        acct = Account.from_dict(self.row["account"])
        for call in self.row["expected"]:
            acct.observe(call["tool"], call["params"])
        return acct

    def score(self) -> dict[str, float]:
        expected = self.row["expected"]
        called = [c["tool"] for c in self.calls]
        prefix = 0
        while prefix < min(len(called), len(expected)) and called[prefix] == expected[prefix]["tool"]:
            prefix += 1
        tools = prefix / max(len(called), len(expected), 1)
        right = sum(params_agree(c["params"], e["params"]) for c, e in zip(self.calls[:prefix], expected))
        params = right / max(len(expected), 1)
        state = float(self.account.to_dict() == self.expected_account().to_dict())
        answered = float(bool(self.answer))
        phrases = self.row.get("outcome") or []
        said = (self.answer or "").lower()
        outcome = float(answered == 1.0 and (not phrases or any(p.lower() in said for p in phrases)))
        fmt = sum(self.formats) / len(self.formats) if self.formats else 0.0
        success = float(tools == 1.0 and params == 1.0 and state == 1.0 and answered == 1.0
                        and outcome == 1.0)
        parts = {"success": success, "format": fmt, "tools": tools, "params": params, "state": state,
                 "answered": answered, "outcome": outcome}
        parts["total"] = sum(w * parts[k] for k, w in WEIGHTS.items())
        parts["turns"] = float(len(self.formats))
        parts["tool_calls"] = float(len(self.calls))
        parts["tool_errors"] = float(sum(c["error"] for c in self.calls))
        return parts

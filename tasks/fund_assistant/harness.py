"""The fund-assistant episodes as an OpenAI harness: the six tools as function tools, the simulated account
behind them, and the model reached only through the OpenAI client (`env: {kind: harness, harness:
tasks.fund_assistant.harness:play}`).

`play(client, row)` is an agent as people write them: it sends the conversation with `tools=`, runs each
tool call the model makes against the row's account (`FundAccountEnv`, the same account and the same
trajectory score as the in-worker episodes), appends the call and the tool's result, and stops when the
model answers without a call (its content is the answer), after `MAX_TURNS` calls, or when the server
refuses a call (the conversation fills the model's context): the episode is then scored as it stands.
It returns the environment's score: `reward` its total, `success` its judge, the parts and counts as
metrics.

A turn is well formed (the score's `format` part) when it is one tool call whose arguments are a JSON
object, or an answer with text. The warm-up teaches the format with the scripted trajectories of the
in-worker episodes, turned into OpenAI messages (`scripted_reply`) and played through `play` itself with a
client that answers from the script (`tasks.scripted_client`), so the conversations it learns are the
ones the harness builds.
"""

from __future__ import annotations

import json
import re
from typing import Any

from openai import BadRequestError

from tasks.env import Environment, StepResult
from tasks.fund_assistant.env import FundAccountEnv
from tasks.fund_assistant.episodes import FINAL_TOOL
from tasks.fund_assistant.tools import TOOLS

MAX_TURNS = 5
SYSTEM = ("You are a fund assistant. Call one tool at a time; its result comes back as the next message. "
          "When the request is done, answer the user without a call: say what you did.")
_KINDS = {"number": {"type": "number"}, "int": {"type": "integer"}, "str": {"type": "string"}}


def tool_specs() -> list[dict]:
    """The six tools as OpenAI function tools (their parameters as JSON schema)."""
    specs = []
    for t in TOOLS.values():
        props = {k: ({"type": "string", "enum": list(kind)} if isinstance(kind, tuple) else _KINDS[kind])
                 for k, kind in t.all_params.items()}
        parameters = {"type": "object", "properties": props, **({"required": list(t.required)} if t.required
                                                                 else {})}
        specs.append({"type": "function", "function": {"name": t.name, "parameters": parameters}})
    return specs


TOOL_SPECS = tool_specs()


async def play(client: Any, row: dict) -> dict:
    """One episode of `row` (see the module docstring)."""
    env = FundAccountEnv(MAX_TURNS)
    messages = [{"role": "system", "content": SYSTEM}, *[m for m in env.reset(row) if m["role"] == "user"]]
    for turn in range(MAX_TURNS):
        try:
            out = await client.chat.completions.create(model="policy", messages=messages, tools=TOOL_SPECS)
        except BadRequestError:  # the conversation no longer fits the model, or ran out of calls
            break
        message = out.choices[0].message
        calls = list(message.tool_calls or [])
        if not calls:
            env.answer_with(message.content or "", well_formed=bool((message.content or "").strip()))
            break
        ids = [c.id or f"call_{turn}_{i}" for i, c in enumerate(calls)]
        messages.append({"role": "assistant", "content": message.content,
                         "tool_calls": [{"id": cid, "type": "function",
                                         "function": {"name": c.function.name,
                                                      "arguments": c.function.arguments}}
                                        for cid, c in zip(ids, calls)]})
        for cid, c in zip(ids, calls):
            params = _arguments(c.function.arguments)
            result = env.call(c.function.name, params, well_formed=len(calls) == 1 and params is not None)
            messages.append({"role": "tool", "tool_call_id": cid, "content": result.observation or ""})
    score = env.score()
    return {"reward": score.pop("total"), **score}


def _arguments(text: str | None) -> dict | None:
    try:
        value = json.loads(text or "")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


# ---- the warm-up: the scripted trajectories as OpenAI conversations --------------------------------------
def scripted_reply(turn: str, index: int) -> dict:
    """A scripted ReAct turn (`tasks.fund_assistant.trajectories`) as the assistant message the gateway
    would return for it: its thought and plan, then the tool call; for `final_answer` the answer."""
    obj = json.loads(turn)
    tool, params = obj["action"]["tool"], obj["action"].get("params") or {}
    if tool == FINAL_TOOL:
        return {"role": "assistant", "content": params.get("answer", ""), "tool_calls": None}
    # The turn's thought and plan as the text before the call (what an agent says as it calls a tool):
    # the call's parameters then follow the tool it names, as in the ReAct turn.
    plan = "plan: " + ", ".join(obj["plan"]) if obj.get("plan") else ""
    said = "; ".join(filter(None, [obj.get("thought"), plan]))
    return {"role": "assistant", "content": said or None, "tool_calls": [
        {"id": f"call_{index}", "type": "function",
         "function": {"name": tool, "arguments": json.dumps(params, ensure_ascii=False)}}]}


# ---- the same episodes in the worker's own agent loop (the gateway benchmark's other side) --------------
_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


class ToolCallEnv(Environment):
    """The harness's episodes as an in-worker environment: the same system turn with the tools listed as
    the `tools` chat template lists them, the model's `<tool_call>` blocks run against the same account,
    the answer as plain text, the same score."""

    def reset(self, row: dict) -> list[dict]:
        from models.tool_template import TOOLS_CHAT_TEMPLATE, render

        head = render(TOOLS_CHAT_TEMPLATE, [{"role": "system", "content": SYSTEM}], TOOL_SPECS, False)
        self.env = FundAccountEnv(self.max_turns)
        user = [m for m in self.env.reset(row) if m["role"] == "user"]
        return [{"role": "system", "content": head.removeprefix("<|im_start|>system\n").removesuffix(
            "<|im_end|>\n")}, *user]

    def step(self, assistant_text: str) -> StepResult:
        calls = _CALL.findall(assistant_text)
        if not calls:
            return self.env.answer_with(assistant_text, bool(assistant_text.strip()))
        try:
            call = json.loads(calls[0])
        except ValueError:
            call = None
        if not isinstance(call, dict):
            return self.env.call(None, None, False)
        params = call.get("arguments") if isinstance(call.get("arguments"), dict) else None
        return self.env.call(call.get("name"), params, len(calls) == 1 and params is not None)

    def score(self) -> dict[str, float]:
        return self.env.score()

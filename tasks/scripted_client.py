"""A stand-in for the OpenAI client that answers from a script: a harness's warm-up conversations.

A harness (`env: {kind: harness}`) builds its conversation itself: its system text, its tools, how it
appends tool results. To teach a model that format before RL, the harness is run with a client whose chat
completions return the next scripted assistant message (no model) and which keeps every request; each
request's messages and the scripted reply are then what the warm-up learns, rendered by the run's chat
template exactly as the gateway renders them (`actors.driver.setup_steps.harness_examples`).

>>> import asyncio
>>> async def harness(client, row):
...     asked = [{"role": "user", "content": row["q"]}]
...     out = await client.chat.completions.create(model="policy", messages=asked)
...     return float(out.choices[0].message.content == "4")
>>> client = ScriptedClient(iter([{"role": "assistant", "content": "4"}]))
>>> asyncio.run(harness(client, {"q": "2+2?"})), [a.messages[-1]["content"] for a in client.asked]
(1.0, ['2+2?'])
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


@dataclass
class Asked:
    """One request a harness made of a `ScriptedClient`: its messages and tools, and the scripted reply."""

    messages: list[dict]
    tools: list[dict] | None
    reply: dict


@dataclass
class ScriptedClient:
    """Enough of `openai.AsyncOpenAI` for a harness, the OpenAI Agents SDK's model included: each chat
    completion answers with the next scripted assistant message (no model) as an `openai` ChatCompletion,
    and every request is kept (`asked`)."""

    replies: Iterator[dict]
    asked: list[Asked] = field(default_factory=list)
    base_url: str = "http://scripted.invalid/v1"

    def __post_init__(self) -> None:
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    async def _create(self, *, messages: Any, tools: Any = None, **_: Any) -> Any:
        from openai.types.chat import ChatCompletion

        reply = next(self.replies, {"role": "assistant", "content": "", "tool_calls": None})
        tools = None if tools is None or not isinstance(tools, list) else tools
        self.asked.append(Asked([dict(m) for m in messages], tools, reply))
        message = {"role": "assistant", "content": reply.get("content"),
                   "tool_calls": reply.get("tool_calls") or None}
        return ChatCompletion.model_validate({
            "id": f"scripted-{len(self.asked)}", "object": "chat.completion", "created": 0, "model": "policy",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message["tool_calls"] else "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}})

"""Whether a chat template keeps a conversation's earlier turns as a prefix, checked at the gateway's start.

A session is one training sample only while each call's prompt extends the previous call's prompt and
reply token for token (`actors.worker.sessions`). That holds when the template renders earlier turns the
same whatever follows them. Templates that drop past reasoning, renumber tool calls or move the system
turn do not, and every session of theirs is cut into one sample per call (each with the session's
reward, none seeing the turns before it as its own). The probe renders a short conversation with a tool
call turn by turn, as an agent would send it, and says at which turn, if any, the prefix breaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TOOL = {"type": "function", "function": {"name": "lookup", "description": "Look a word up.",
                                         "parameters": {"type": "object", "properties": {
                                             "word": {"type": "string"}}, "required": ["word"]}}}
CALL = {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": '{"word": "tide"}'}}
TURNS: list[dict] = [
    {"role": "system", "content": "You answer with the tools you have."},
    {"role": "user", "content": "What does tide mean?"},
    {"role": "assistant", "content": "Let me look it up.", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_0", "content": "the rise and fall of the sea"},
    {"role": "assistant", "content": "The rise and fall of the sea."},
    {"role": "user", "content": "Thanks."},
]


@dataclass
class PrefixProbe:
    keeps_prefix: bool
    broken_at: int | None  # the index in TURNS of the first reply whose next prompt does not extend it
    detail: str


def probe(render: Any, encode: Any) -> PrefixProbe:
    """`render(messages, tools, generation) -> text` (the template; `generation`: with the generation
    prompt) and `encode(text) -> ids`. At each assistant turn: the prompt before it must start the
    conversation ending with that turn (the turn as the model wrote it), and that must start the next
    prompt (after the tool's answer or the user's next message). The check is of the template alone;
    the tokenizer's encoding of a sampled reply is another matter."""
    for i, turn in enumerate(TURNS):
        if turn["role"] != "assistant":
            continue
        prompt = encode(render(TURNS[:i], [TOOL], True))
        written = encode(render(TURNS[: i + 1], [TOOL], False))
        steps = [(prompt, written, "the turn as written does not start with the prompt before it")]
        if i + 2 <= len(TURNS):
            later = encode(render(TURNS[: i + 2], [TOOL], True))
            steps.append((written, later, "the next prompt renders this turn otherwise"))
        for before, after, why in steps:
            if after[: len(before)] != before:
                return PrefixProbe(False, i, f"turn {i} ({turn['role']}): {why}: the template rewrites "
                                   "earlier turns, and each call of a session becomes a sample of its own")
    return PrefixProbe(True, None, "each prompt extends the turns before it")

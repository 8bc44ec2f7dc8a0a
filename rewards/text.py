"""The text of a completion in any of the shapes TRL-style reward functions receive.

A completion reaches a reward as a plain string (what the rollout workers produce), bytes, one chat
message, or a list of chat messages (TRL's conversational format). Never raises: anything else is None.
"""

from __future__ import annotations

from typing import Any


def _content_text(content: Any) -> str | None:
    """A message's content: a string, or a list of parts ({"type": "text", "text": ...} or str)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in content]
        return "".join(p for p in parts if isinstance(p, str))
    return None


def completion_text(completion: Any) -> str | None:
    """The text of a completion: a str, bytes, one message dict, or a list of messages (the last
    assistant message; the last message when none is marked assistant). None for anything else."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (bytes, bytearray)):
        return bytes(completion).decode("utf-8", "replace")
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role") == "assistant"]
        chosen = assistant or messages
        return _content_text(chosen[-1].get("content")) if chosen else None
    return None

"""Few-shot turns (`task.options.examples`): worked exchanges a task puts before each request as earlier
chat turns. A small instruct model copies an answer's shape from a turn it has seen far more readily
than from a description in a system message; no weight is trained on them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import Field

from configs.base import Section


class Example(Section):
    """One worked exchange shown to the model before each request."""

    user: str = Field(min_length=1)
    assistant: str = Field(min_length=1)


def example_turns(examples: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """(user, assistant) pairs as finished chat messages, in order."""
    out: list[dict[str, str]] = []
    for user, assistant in examples:
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    return out


def refuse_example_rows(examples: Sequence[Example], requests: Iterable[str]) -> None:
    """Raises ValueError when an example's request is one of the task's own (training or held out): it
    would show the model that row's answer."""
    shown = {e.user.strip() for e in examples}
    if not shown:
        return
    clash = sorted(shown & {r.strip() for r in requests})
    if clash:
        raise ValueError(f"task.options.examples: {clash[0]!r} is one of the task's own requests (its "
                         "answer would be shown to the model); pick an example request the data lacks")

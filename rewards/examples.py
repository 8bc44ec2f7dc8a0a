"""Example user rewards, to copy. Point a config at one by import path, e.g.
`rewards.examples:keyword_reward` or `rewards.examples:BrevityReward` (a class is instantiated with
no arguments), or register your own with `@register_reward("name")`.

A reward takes `(prompts, completions, **columns)` -- the dataset's other columns arrive as keyword
lists, one entry per completion -- and returns one float per completion. Return values in [0, 1]
so that it combines with the built-ins, and never raise on a malformed completion.
"""

from __future__ import annotations

from typing import Any

from rewards.text import completion_text

DEFAULT_KEYWORDS: tuple[str, ...] = ("because", "therefore", "因为", "所以")


def keyword_reward(prompts: Any, completions: list, **columns: Any) -> list[float]:
    """1.0 when the completion's text contains one of the row's `keywords` (a list of strings in a
    `keywords` column; DEFAULT_KEYWORDS when the dataset has none), case-insensitively, else 0.0."""
    keywords = columns.get("keywords")
    scores = []
    for i, completion in enumerate(completions):
        text = (completion_text(completion) or "").lower()
        row = keywords[i] if isinstance(keywords, list) and i < len(keywords) else None
        words = row if isinstance(row, (list, tuple)) else DEFAULT_KEYWORDS
        scores.append(float(any(isinstance(w, str) and w and w.lower() in text for w in words)))
    return scores


class BrevityReward:
    """1.0 up to `max_chars` characters, falling linearly to 0.0 at twice that. A class example:
    state (here a threshold) set in __init__, scoring in __call__."""

    def __init__(self, max_chars: int = 800) -> None:
        self.max_chars = max(1, int(max_chars))
        self.__name__ = "brevity"

    def __call__(self, prompts: Any, completions: list, **columns: Any) -> list[float]:
        lengths = [len(completion_text(c) or "") for c in completions]
        return [min(1.0, max(0.0, 2.0 - n / self.max_chars)) for n in lengths]

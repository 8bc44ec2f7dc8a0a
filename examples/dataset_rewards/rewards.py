"""This example's own reward, written the way TRL's rewards are: conversational completions are lists of
messages, the dataset's `answer` column arrives as a keyword list, `**kwargs` takes the rest."""

from __future__ import annotations

import re


def exact_answer(completions, answer, **kwargs) -> list[float]:
    """1.0 when the text after `</think>` is the row's answer, else 0.0."""
    scores = []
    for completion, gold in zip(completions, answer, strict=True):
        text = completion[0]["content"]
        final = re.split(r"</think>", text)[-1].strip()
        scores.append(1.0 if final == gold else 0.0)
    return scores

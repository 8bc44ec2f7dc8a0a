"""A format reward a small instruct model can earn from its first step: does the answer end with one
closed, non-empty `<answer>...</answer>` tag? The small-model recipes of GRPO (a format reward beside the
task's score) use one, because a model that never writes the tag scores 0 on every completion and every
group has zero spread: there is nothing to learn from.

    >>> answer_format(None, ["3 + 4 = 7.\\n<answer>7</answer>", "<answer>7</answer> because 3 + 4 = 7",
    ...                      "The answer is 7.", "<answer></answer>", "<answer>7"])
    [1.0, 0.5, 0.0, 0.0, 0.0]

1.0: the tag closes the answer (only white space after it); 0.5: a closed tag with more text after it;
0.0: no closed tag, or an empty one. It says nothing about whether the answer is right: weigh it below
the task's own score (`reward.functions`), so that a right answer always pays more than a tidy one.
"""

from __future__ import annotations

import re
from typing import Any

from rewards.text import completion_text

_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def format_score(text: str | None) -> float:
    """The score of one completion's text (see the module)."""
    found = list(_TAG.finditer(text or ""))
    if not found or not found[-1].group(1).strip():
        return 0.0
    return 1.0 if not (text or "")[found[-1].end():].strip() else 0.5


def answer_format(prompts: Any, completions: list, **columns: Any) -> list[float]:
    """TRL's reward signature: one format score per completion."""
    return [format_score(completion_text(c)) for c in completions]

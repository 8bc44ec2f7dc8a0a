"""A task of your own as a `tasks.base.Task` subclass: here, the parity of a bit string, drawn anew from
the task's seed (no data file). A subclass writes `rows()`; everything else has a default: prompts
(a string as it is, messages through the chat template), the eval (the judge's mean, per group), the
reward columns (every column but the prompt). This one also gives warm-up targets.

    python train.py --config examples/my_task/config.yaml
"""

from __future__ import annotations

import random

from pydantic import Field

from configs.base import Section
from tasks.base import Task


class ParityOptions(Section):
    """`task.options` of the parity task (validated before anything starts)."""

    n_rows: int = Field(400, ge=10, le=100_000)
    """Rows to draw (a tenth of them held out)."""
    max_bits: int = Field(4, ge=1, le=12)
    """Longest bit string."""


class ParityTask(Task):
    name = "parity"
    options_model = ParityOptions
    options: ParityOptions
    judge = "examples.my_task.task:parity_reward"  # what `accuracy` means (a reward by import path)
    group_column = "bits"  # metrics and the eval table per string length

    def rows(self) -> tuple[list[dict], list[dict]]:
        rng = random.Random(self.cfg.seed)
        strings = sorted({"".join(rng.choice("01") for _ in range(rng.randint(1, self.options.max_bits)))
                          for _ in range(self.options.n_rows)})
        rng.shuffle(strings)
        rows = [{"prompt": [{"role": "user", "content": f"Is the number of 1s in {s} even or odd?"}],
                 "answer": "even" if s.count("1") % 2 == 0 else "odd", "bits": str(len(s))} for s in strings]
        cut = max(1, len(rows) // 10)
        return rows[cut:], rows[:cut]  # held-out strings are never training strings

    def warmup_rows(self, rows):
        return [{**r, "solution": r["answer"]} for r in rows]


def parity_reward(completions, answer, **kwargs) -> list[float]:
    """1.0 for the right word, else 0.0 (TRL's contract: a conversational prompt gives messages)."""
    return [float(c[0]["content"].strip() == a) for c, a in zip(completions, answer, strict=True)]

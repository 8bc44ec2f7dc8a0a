"""Which task the run trains on, and where its rows come from."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from configs.base import Section


class TaskConfig(Section):
    """The task (`tasks.base.Task`): its name, data seed, optional data files and its own options."""

    name: str = Field("fund_assistant", min_length=1)
    """A registered task (`fund_assistant`) or an import path `package.module:TaskClass`."""
    seed: int = 0
    """Seed of the task's data generator and split (and of the tiny model's tokenizer corpus)."""
    train_file: str | None = None
    """JSONL of training rows instead of generated ones (the task validates every line)."""
    eval_file: str | None = None
    """JSONL of held-out rows (with `train_file`)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The task's own options, validated by the task's options model before anything starts (for
    `fund_assistant`: see `tasks/fund_assistant/task.py`, `FundAssistantOptions`)."""

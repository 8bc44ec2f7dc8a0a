"""Which task the run trains on, and where its rows come from."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from configs.base import Section
from configs.train import SEED_MAX


class TaskConfig(Section):
    """The task (`tasks.base.Task`): its name, data seed, optional data files and its own options."""

    name: str = Field("fund_assistant", min_length=1)
    """A registered task (`fund_assistant`) or an import path `package.module:TaskClass`."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    """Seed of the task's data generator and split (and of the tiny model's tokenizer corpus)."""
    train_file: str | None = None
    """JSONL of training rows instead of generated ones (the task validates every line)."""
    eval_file: str | None = None
    """JSONL of held-out rows (with `train_file`)."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The task's own options, validated by the task's options model before anything starts (for
    `fund_assistant`: see `tasks/fund_assistant/task.py`, `FundAssistantOptions`)."""

    @model_validator(mode="after")
    def _eval_file_needs_train_file(self) -> TaskConfig:
        # A task reads eval_file only together with train_file (Task.rows); alone it would be ignored and
        # the held-out set generated instead, so an eval on the user's file would silently not happen.
        if self.eval_file and not self.train_file:
            raise ValueError(f"task.eval_file ({self.eval_file}) is only read together with task.train_file; "
                             "set task.train_file too, or drop task.eval_file")
        return self

"""Where prompts come from."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DataConfig(BaseModel):
    """The fund-assistant data set: generated (seeded) or loaded from JSONL files."""

    model_config = ConfigDict(extra="forbid")
    seed: int = 0
    """Seed of the generator and the split."""
    n_single: int = Field(454, ge=10)
    """Single-step samples to generate (seed: 454)."""
    n_multistep_samples: int = Field(823, ge=10)
    """Expanded multistep samples to generate (seed: 823)."""
    eval_fraction: float = Field(0.2, gt=0.0, lt=0.9)
    """Share of scenarios held out for evaluation."""
    train_file: str | None = None
    """JSONL of training rows instead of generating (columns: prompt, solution, category, …)."""
    eval_file: str | None = None
    """JSONL of held-out rows."""
    system_prompt: str = "short"
    """`short` (one line, for the tiny model), `full` (with the tool catalogue) or literal text."""

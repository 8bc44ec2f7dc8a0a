"""The step loop: how long, how big, warm-up, evaluation, checkpoints, outputs."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from configs.base import Section


class WarmupConfig(Section):
    """Optional SFT warm-up on the task's warm-up rows, so that a random tiny model learns the output
    format before RL (the 7B preset skips it)."""

    enabled: bool = False
    """Run the warm-up before RL."""
    steps: int = Field(100, ge=0)
    """Optimizer steps."""
    lr: float = Field(2e-3, gt=0)
    """Learning rate (full fine-tune of the base weights)."""
    batch_size: int = Field(32, ge=1)
    """Rows per step."""
    balanced: bool = False
    """Draw warm-up rows balanced over the task's groups (`category`) instead of in shuffled epochs.
    What the targets are (e.g. a deliberate label error) is the task's choice: `task.options`."""


class TrainConfig(Section):
    """The Coordinator's loop."""

    steps: int = Field(100, ge=0)
    """RL steps (each: generate → score → learn → push)."""
    prompts_per_step: int = Field(16, ge=1)
    """Prompts per step; each is sampled `rollout.n` times."""
    seed: int = 0
    """Seed of prompt order, sampling and initialisation."""
    sampling: Literal["shuffle", "balanced", "adaptive"] = "shuffle"
    """`shuffle`: epochs over the rows in random order; `balanced`: each prompt's category drawn
    uniformly, then a row of it (every category gets equal RL attention whatever its share);
    `adaptive`: categories drawn with weight `adaptive_floor + (1 - recent tool accuracy)`, so the
    ones the policy still gets wrong get more prompts."""
    adaptive_by: str = Field("category", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Adaptive sampling: the row column whose values are weighed (every training row must have it).
    The fund assistant's `kind` (the row's template, e.g. `combo_withdraw_funds` vs
    `combo_transfer_funds`) finds the hard part of a category that is mostly solved."""
    adaptive_floor: float = Field(0.1, ge=0.0, le=10.0)
    """Adaptive sampling: weight every category keeps however well it is solved."""
    adaptive_ema: float = Field(0.3, gt=0.0, le=1.0)
    """Adaptive sampling: weight of the newest step in each category's moving tool accuracy."""
    warmup: WarmupConfig = WarmupConfig()
    """SFT warm-up stage."""
    eval_before: bool = True
    """Evaluate on the held-out set before RL."""
    eval_after: bool = True
    """Evaluate on the held-out set after RL."""
    eval_limit: int | None = Field(None, ge=1)
    """Evaluate on at most this many held-out rows (None: all)."""
    checkpoint_every: int = Field(0, ge=0)
    """Save the adapter every K steps (0: only at the end)."""
    run_dir: str = "runs"
    """Parent folder of run directories."""
    run_name: str | None = None
    """Run folder name (default: a timestamp)."""
    progress: bool = True
    """Show a progress bar."""

"""The DeepSpeed ZeRO learner."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from configs.base import Section


class LearnerConfig(Section):
    """Learner ranks forming one torch.distributed group (gloo on CPU, NCCL on GPU)."""

    world_size: int = Field(1, ge=1, le=1024)
    """Learner ranks (Ray actors)."""
    zero_stage: Literal[0, 1, 2, 3] = 2
    """DeepSpeed ZeRO stage."""
    lr: float = Field(5e-6, gt=0, le=1.0)
    """AdamW learning rate (the field report's 7B run: 5e-6)."""
    lr_schedule: Literal["constant", "linear", "cosine"] = "constant"
    """lr over the run's optimizer steps (`algo.schedule.lr_factor`): constant, or a linear/cosine
    decay towards `lr_final_ratio` × lr."""
    lr_warmup_steps: int = Field(0, ge=0)
    """Optimizer steps of linear lr warm-up before the schedule."""
    lr_final_ratio: float = Field(0.0, ge=0.0, le=1.0)
    """linear/cosine: the fraction of lr the decay ends at."""
    weight_decay: float = Field(0.0, ge=0)
    """AdamW weight decay."""
    grad_clip: float = Field(1.0, gt=0)
    """Gradient norm clip."""
    micro_batch_size: int = Field(32, ge=1)
    """Sequences per forward/backward on one rank, at most."""
    micro_batch_tokens: Annotated[int, Field(ge=16)] | Literal["auto"] | None = "auto"
    """Padded tokens (rows x the longest row) per forward/backward, at most: what a micro-batch's
    activations grow with. "auto": what `activation_gb` holds for the model's shape (models.memory);
    None: rows only."""
    share_prompt: bool = False
    """Run each prompt once a micro-batch, its key/value cache repeated for the group's completions,
    instead of once a completion: the same logprobs and gradient (up to float rounding) for the prompt's
    tokens plus each completion's. Micro-batches then hold one prompt's completions each. Worth it where
    prompts are long beside completions (few-shot turns, tool schemas)."""
    activation_gb: float = Field(3.0, gt=0, le=1024)
    """"auto" micro-batches: the memory one micro-batch's activations may take on a rank."""
    updates_per_batch: int = Field(1, ge=1, le=16)
    """Optimizer passes over each rollout batch (1 = strictly on-policy)."""
    num_cpus: float = Field(1.0, gt=0)
    """CPUs per rank (Ray's bookkeeping)."""
    num_threads: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] | None = None
    """Torch/OpenMP threads per rank; None: Ray's default (num_cpus, at least 1); "auto": the cores the
    rank may use while it works (`Config.threads`)."""
    call_timeout_s: float = Field(1800.0, gt=0, le=86_400)
    """Deadline of one call (an update, an export, a checkpoint); a rank that misses it, or dies, gets
    the learner group rebuilt from the newest checkpoint."""
    num_gpus: float = Field(0.0, ge=0)
    """GPUs per rank."""
    placement_strategy: Literal["PACK", "STRICT_PACK", "SPREAD", "STRICT_SPREAD"] = "PACK"
    """How the ranks' placement group places them: PACK (they all-reduce every step); STRICT_PACK
    insists on one node."""
    gradient_checkpointing: bool = False
    """Trade compute for memory (7B on GPU)."""

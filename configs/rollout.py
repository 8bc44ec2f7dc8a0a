"""Rollout workers: how many vLLM engines, where, and how they sample."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from configs.base import Section


class RolloutConfig(Section):
    """vLLM rollout workers (one engine each)."""

    num_workers: int = Field(1, ge=1, le=1024)
    """RolloutWorker actors; prompts are split evenly between them."""
    tensor_parallel_size: int = Field(1, ge=1, le=64)
    """vLLM tensor parallelism inside one worker (GPU only)."""
    num_cpus: float = Field(1.0, gt=0)
    """CPUs reserved per worker (Ray's bookkeeping; roles that run one after another may share cores)."""
    num_threads: Annotated[int, Field(ge=1, le=1024)] | Literal["auto"] | None = None
    """Torch/OpenMP threads of the worker; None: Ray's default (num_cpus, at least 1); "auto": the cores
    the worker may use while it works (`Config.threads`)."""
    call_timeout_s: float = Field(600.0, gt=0, le=86_400)
    """Deadline of one call (a generation, a weight push); a worker that misses it, or dies, is
    replaced and its share of the step regenerated."""
    start_timeout_s: float = Field(600.0, gt=0, le=86_400)
    """Deadline of a worker's start (engine load)."""
    max_logprob_gap: float | None = Field(None, gt=0, le=100)
    """After every push each worker scores a probe sequence; a larger |learner - vLLM| logprob gap
    means the push did not take (reload once, then fail). None: 1e-3 for float32, 0.1 for 16-bit."""
    num_gpus: float = Field(0.0, ge=0)
    """GPUs reserved per worker; 0 on CPU. With TP > 1 set this to the TP size."""
    placement_strategy: Literal["SPREAD", "STRICT_SPREAD", "PACK", "STRICT_PACK"] = "SPREAD"
    """How the workers' placement group places them: SPREAD over nodes (they only talk to the coordinator)."""
    distributed_executor_backend: Literal["mp", "ray", "uni"] | None = None
    """vLLM's executor for tensor parallelism inside a worker; None lets vLLM choose. `mp` keeps the TP
    processes inside the worker's own GPUs instead of asking Ray for more."""
    n: int = Field(8, ge=2, le=64)
    """Completions per prompt (the GRPO group size; seed: 8)."""
    temperature: float = Field(0.9, gt=0.0, le=3.0)
    """Sampling temperature (the field report's 7B run: 0.9)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling."""
    min_p: float = Field(0.0, ge=0.0, lt=1.0)
    """Drop tokens less likely than min_p times the most likely one (0: off). Cuts the junk tail that
    breaks JSON at high temperature while keeping real alternatives (e.g. a rarely chosen tool). The
    learner still scores samples under the full distribution, as vLLM's returned logprobs are."""
    max_tokens: int = Field(350, ge=8, le=8192)
    """Longest completion (the field report's 7B run: 350)."""
    max_model_len: int = Field(1024, ge=64)
    """Prompt + completion limit of the engine."""
    serve_mode: Literal["adapter", "merged"] = "merged"
    """`adapter`: vLLM LoRA serving, new adapter id per version; `merged`: merge the delta into a
    pristine copy of the base weights and reload in place (2.2x faster generation on CPU)."""
    kv_cache_memory_bytes: int = Field(256 * 1024**2, ge=16 * 1024**2)
    """KV cache size; vLLM on CPU refuses to start without one."""
    gpu_memory_utilization: float = Field(0.85, gt=0.0, le=1.0)
    """Fraction of GPU memory vLLM may take (GPU only)."""
    eval_temperature: float = Field(0.0, ge=0.0, le=3.0)
    """Temperature for evaluation (0 = greedy; at most 3, as `temperature`)."""

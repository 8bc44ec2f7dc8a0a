"""Building a rollout worker's vLLM engine on this stack: its environment, its arguments, quiet logs.

The engine takes token ids and returns token ids (the worker tokenizes and decodes once), runs in the
worker's process (no engine subprocess), and on the CPU binds its threads to the cores the worker
reserved. Sampled-token logprobs are taken inside it where that works (`actors.worker.vllm_tap`).
"""

from __future__ import annotations

import logging
import os

import torch

from configs.model import LoraConfig
from configs.rollout import RolloutConfig


def engine_env() -> dict[str, str]:
    """Environment vLLM needs on this stack; set before `import vllm` (docs/platform.md#in-process-engine)."""
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # in-process engine: 2–3 s start-up instead of 15 s
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


def build_engine(base_model_dir: str, cfg: RolloutConfig, lora_cfg: LoraConfig, dtype: str, seed: int,
                 worker_index: int, request_seeds: bool = False):
    """The worker's `vllm.LLM` (LoRA serving enabled in `adapter` mode). `request_seeds`: requests are
    sampled with their own seeds; vLLM's CPU sampler cannot seed a prompt whose prefill is split across
    engine steps ("CPU Generator does not use offset"), so chunked prefill is off there (a step then
    takes whole prompts, at most max(2048, max_model_len) tokens of them)."""
    for k, v in engine_env().items():
        os.environ.setdefault(k, v)
    threads = torch.get_num_threads()
    from vllm import LLM

    from actors.worker import cpu_binding, vllm_lean

    vllm_lean.install()
    kwargs = dict(
        model=base_model_dir,
        skip_tokenizer_init=True,
        dtype=dtype,
        seed=seed + worker_index,
        max_model_len=cfg.max_model_len,
        tensor_parallel_size=cfg.tensor_parallel_size,
    )
    if cfg.distributed_executor_backend:
        kwargs["distributed_executor_backend"] = cfg.distributed_executor_backend
    if torch.cuda.is_available():
        kwargs["gpu_memory_utilization"] = cfg.gpu_memory_utilization
    else:
        kwargs.update(enforce_eager=True, kv_cache_memory_bytes=cfg.kv_cache_memory_bytes)
        if request_seeds:
            kwargs.update(enable_chunked_prefill=False, max_num_batched_tokens=max(2048, cfg.max_model_len))
        # Tensor parallelism on the CPU: each rank's threads on cores this worker reserved, not a
        # NUMA node each (actors/worker/cpu_binding.py).
        cpu_binding.set_thread_binding(cfg.tensor_parallel_size, cfg.num_cpus, worker_index)
    if cfg.serve_mode == "adapter":
        kwargs.update(enable_lora=True, max_lora_rank=_lora_rank_slot(lora_cfg.r), max_loras=2)
    _quiet_vllm()
    llm = LLM(**kwargs)
    # The in-process engine drops torch's threads (docs/platform.md#threads-and-pinning).
    torch.set_num_threads(threads)
    return llm


class _DropMessages(logging.Filter):
    """Drops the records whose message contains `text` (a filter outlives vLLM's logging set-up, which
    resets the levels of its loggers when an engine starts)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def _drop(logger: str, text: str) -> None:
    log_ = logging.getLogger(logger)
    if not any(isinstance(f, _DropMessages) and f.text == text for f in log_.filters):
        log_.addFilter(_DropMessages(text))


def _quiet_vllm() -> None:
    """Silence vLLM messages that are not problems here, so a run's log stays readable: merged serving
    reloads only the LoRA-touched tensors, and at every push vLLM warns, per untouched layer and in a
    summary, that the others were not loaded, and keeps them, which is what we want (the push is
    verified by fingerprint and probe instead). The engine gets token ids and no tokenizer, so its
    chat-template warm-up fails by design and would print a stack trace that reads like a crash."""
    _drop("vllm.renderers.base", "Chat template warmup failed")
    reload = "vllm.model_executor.model_loader.reload"
    _drop(f"{reload}.inplace", "Following weights were not loaded from checkpoint")
    _drop(f"{reload}.layerwise", "Failed to load weights")


def _lora_rank_slot(r: int) -> int:
    """vLLM accepts only some max_lora_rank values; take the smallest that fits r."""
    for slot in (8, 16, 32, 64, 128, 256, 320, 512):
        if r <= slot:
            return slot
    return r

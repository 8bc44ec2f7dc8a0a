"""Memory planned, not discovered: what each role of a run will hold, from the model's shape and the
config, and the learner's micro-batch token budget.

Pure arithmetic over a `ModelShape` (read from the model folder's config.json). The constants were
measured on this project's CPU stack (docs/real_model.md#memory): a LoRA forward+backward in fp32 holds about
`1.25 x layers x (4 x ffn + 12 x hidden) x 4 bytes` per token of a micro-batch (saved activations plus
the backward pass's transient buffers, with `MALLOC_MMAP_THRESHOLD_` set so that freed tensors go back to
the system; without it glibc kept twice that), and each process pays a fixed runtime overhead.

    >>> s = ModelShape(vocab=49152, hidden=576, ffn=1536, layers=30, heads=9, kv_heads=3, head_dim=64,
    ...                tied=True)
    >>> round(s.params / 1e6, 1), round(activation_bytes_per_token(s) / 2**20, 2)
    (134.5, 1.75)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

GB = 2**30
# The learner's activations: floats kept per token and layer, per (ffn, hidden) width, and the share the
# backward pass adds on top (measured on SmolLM2-135M with LoRA r16 on every linear layer).
ACT_FFN, ACT_HIDDEN, BACKWARD_FACTOR = 4, 12, 1.25
# Fixed resident memory of a process before it holds a model (Python, torch, Ray's worker; vLLM's
# engine; DeepSpeed), measured with `memory/*` rows on the tiny model, rounded up.
OVERHEAD = {"learner": 1.0 * GB, "rollout": 1.6 * GB, "reward": 0.5 * GB, "coordinator": 0.9 * GB,
            "driver": 0.5 * GB, "ray": 1.0 * GB}
# glibc serves large blocks from mmap, which go back to the system when freed (set in the learner's and
# workers' environment, cluster.runtime.role_env): a heap that only grows doubled the learner's peak.
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}
SAMPLER_ROWS = 256  # sequences vLLM samples at once at most (its scheduler's default on the CPU)


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only transformer that decide its memory."""

    vocab: int
    hidden: int
    ffn: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    tied: bool

    @classmethod
    def of_config(cls, conf: dict) -> ModelShape:
        """From a Hugging Face config.json's fields (Llama, Qwen2 and their kin)."""
        conf = conf.get("text_config") or conf
        hidden, heads = int(conf["hidden_size"]), int(conf["num_attention_heads"])
        return cls(vocab=int(conf["vocab_size"]), hidden=hidden, ffn=int(conf["intermediate_size"]),
                   layers=int(conf["num_hidden_layers"]), heads=heads,
                   kv_heads=int(conf.get("num_key_value_heads") or heads),
                   head_dim=int(conf.get("head_dim") or hidden // heads),
                   tied=bool(conf.get("tie_word_embeddings", False)))

    @classmethod
    def of_folder(cls, folder: str | Path) -> ModelShape | None:
        """From `folder/config.json`; None when there is none (a hub id not in the cache) or it lacks a
        field."""
        try:
            return cls.of_config(json.loads((Path(folder) / "config.json").read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def linear_dims(self) -> dict[str, tuple[int, int]]:
        """(in, out) of each linear layer of one block, by its usual module name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, f = self.hidden, self.ffn
        return {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h),
                "gate_proj": (h, f), "up_proj": (h, f), "down_proj": (f, h)}

    @property
    def params(self) -> int:
        block = sum(i * o for i, o in self.linear_dims().values()) + 2 * self.hidden
        head = 0 if self.tied else self.vocab * self.hidden
        return self.vocab * self.hidden + self.layers * block + self.hidden + head

    def lora_params(self, r: int, targets: list[str]) -> int:
        dims = self.linear_dims()
        return self.layers * sum(r * (dims[t][0] + dims[t][1]) for t in targets if t in dims)


def dtype_bytes(dtype: str) -> int:
    return 4 if dtype == "float32" else 2


def activation_bytes_per_token(shape: ModelShape, dtype: str = "float32", checkpointing: bool = False) -> int:
    """Resident bytes a micro-batch's forward+backward needs per (padded) token. With gradient
    checkpointing only each block's input is kept, plus one block's activations at a time."""
    per_layer = (ACT_FFN * shape.ffn + ACT_HIDDEN * shape.hidden) * dtype_bytes(dtype)
    kept = shape.layers * (shape.hidden * dtype_bytes(dtype)) + per_layer if checkpointing \
        else shape.layers * per_layer
    return int(BACKWARD_FACTOR * kept)


def micro_batch_tokens(setting: int | str | None, activation_gb: float, shape: ModelShape | None,
                       dtype: str, checkpointing: bool) -> int | None:
    """The learner's padded-token cap of a micro-batch: a number as given; `auto`: what `activation_gb`
    holds for this model (None, no cap, when the shape is unknown); None: no cap (rows only)."""
    if setting != "auto":
        return setting  # type: ignore[return-value]
    if shape is None:
        return None
    return max(1, int(activation_gb * GB // activation_bytes_per_token(shape, dtype, checkpointing)))


@dataclass(frozen=True)
class RoleMemory:
    role: str
    count: int
    each: float  # bytes, one actor's peak
    parts: str  # how `each` was made up, for the refusal message

    @property
    def total(self) -> float:
        return self.count * self.each


def plan(cfg, shape: ModelShape) -> list[RoleMemory]:
    """Each role's peak resident memory (bytes) for config `cfg` (a `configs.root.Config`) on a model of
    `shape`: the learner's from its weights, LoRA states and a micro-batch's activations; a rollout
    worker's from its weights (twice when it serves merged weights: it keeps the base to merge into), its
    KV cache and the sampler's logits; the rest fixed."""
    mc, lc, ro = cfg.model, cfg.learner, cfg.rollout
    wb = shape.params * dtype_bytes(mc.dtype)
    lora = shape.lora_params(mc.lora.r, mc.lora.target_modules) * 4 * 4  # fp32 weight, grad, Adam m and v
    tokens = micro_batch_tokens(lc.micro_batch_tokens, lc.activation_gb, shape, mc.dtype,
                                lc.gradient_checkpointing)
    longest = ro.max_model_len * lc.micro_batch_size
    act_tokens = min(longest, tokens) if tokens else longest
    act = act_tokens * activation_bytes_per_token(shape, mc.dtype, lc.gradient_checkpointing)
    head = 3 * min(256 * 2**20, act_tokens * shape.vocab * 4)  # learner.sequences' logits chunk, x3 in flight
    learner = RoleMemory("learner", lc.world_size, OVERHEAD["learner"] + wb + lora + act + head,
                         f"{_gb(OVERHEAD['learner'])} runtime + {_gb(wb)} weights + {_gb(act + head)} for "
                         f"{act_tokens} tokens a micro-batch")
    copies = 2 if ro.serve_mode == "merged" else 1
    logits = SAMPLER_ROWS * shape.vocab * 4 * 3  # the sampler's logits, probabilities and logprobs
    kv = ro.kv_cache_memory_bytes or 0
    worker = RoleMemory("rollout", ro.num_workers * ro.tensor_parallel_size,
                        OVERHEAD["rollout"] + copies * wb + kv + logits,
                        f"{_gb(OVERHEAD['rollout'])} runtime + {copies} x {_gb(wb)} weights + "
                        f"{_gb(kv)} KV cache")
    roles = [learner, worker]
    if not cfg.env.enabled:
        roles.append(RoleMemory("reward", cfg.reward.num_actors, OVERHEAD["reward"], "runtime"))
    roles.append(RoleMemory("coordinator", 1, OVERHEAD["coordinator"], "runtime and the run's rows"))
    return roles


def _gb(b: float) -> str:
    return f"{b / GB:.1f} GB"


def describe(roles: list[RoleMemory]) -> str:
    return "; ".join(f"{r.role} {r.count} x {_gb(r.each)} ({r.parts})" for r in roles)

"""Which policy model to train and how its LoRA adapter is shaped."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from configs.base import Section
from configs.train import SEED_MAX


class TinyModelConfig(Section):
    """Shape of the offline random-weight Qwen2 built on first use (docs/platform.md#vllm-on-the-cpu: head_dim
    >= 32)."""

    hidden_size: int = Field(128, ge=32, le=1024)
    """Model width; hidden_size / num_heads must be a head size vLLM supports (32, 64, …)."""
    num_layers: int = Field(4, ge=1, le=12)
    """Transformer blocks."""
    num_heads: int = Field(4, ge=1)
    """Query heads."""
    num_kv_heads: int = Field(2, ge=1)
    """Key/value heads (grouped-query attention)."""
    intermediate_size: int = Field(384, ge=32)
    """FFN width."""
    vocab_size: int = Field(2048, ge=512, le=32000)
    """Target size of the byte-level BPE trained on the task's own text."""
    max_position_embeddings: int = Field(1024, ge=128)
    """Longest sequence the model accepts."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    """Seed of the random initial weights (the build is deterministic)."""

    @model_validator(mode="after")
    def _kv_heads_divide_heads(self) -> TinyModelConfig:
        # Grouped-query attention shares each key/value head among num_heads / num_kv_heads query heads;
        # Qwen2 (transformers and vLLM) cannot split the query heads unevenly and fails at build time.
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"model.tiny.num_heads ({self.num_heads}) must be a multiple of "
                             f"model.tiny.num_kv_heads ({self.num_kv_heads}) for grouped-query attention")
        return self


class LoraConfig(Section):
    """The PEFT LoRA adapter the learner trains and the rollout workers serve."""

    r: int = Field(16, ge=1, le=256)
    """LoRA rank (the field report's 7B run: 16)."""
    alpha: int = Field(32, ge=1)
    """LoRA alpha (the field report's 7B run: 32); the update is scaled by alpha / r."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on the LoRA input; 0 keeps old/new logprobs comparable."""
    target_modules: list[str] = Field(
        default=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], min_length=1
    )
    """Linear layers that get an adapter (at least one: without any there is nothing to train)."""


class ModelConfig(Section):
    """The base model: `tiny` (built offline) or a local path / hub id of a Qwen2-family model."""

    name: str = "tiny"
    """`tiny` builds the offline test model; anything else is passed to from_pretrained / vLLM."""
    tokenizer: str | None = None
    """Tokenizer folder when it differs from the model's (the tiny model keeps its own)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights dtype for the learner and vLLM (float32 on CPU: bf16 was not faster here)."""
    tiny: TinyModelConfig = TinyModelConfig()
    """Shape of the tiny model (only used when name == 'tiny')."""
    lora: LoraConfig = LoraConfig()
    """Adapter shape."""

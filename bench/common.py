"""What every benchmark starts from: the configured task, its rows, the model and its tokenizer.

Benchmarks reach the task only through `tasks.base` (like the runtime), so they work for any task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from configs.root import Config
from models.resolve import ModelPaths
from tasks.base import Task


@dataclass
class Setup:
    cfg: Config
    task: Task
    paths: ModelPaths
    tokenizer: Any
    work: Any
    """The config's workload (`actors.driver.workloads`): its rows and warm-up examples as a run has them."""


def load_setup(config: str = "tiny-cpu", overrides: list[str] | None = None) -> Setup:
    """Config, task, model paths (the tiny model is built on first use) and tokenizer, offline."""
    from cluster.runtime import apply_role_env

    apply_role_env()  # offline hub, in-process vLLM engine
    from transformers import AutoTokenizer

    from actors.driver.workloads import workload_for
    from configs.loader import load_config
    from models.resolve import resolve_model
    from tasks.base import load_task

    cfg = load_config(config, overrides)
    task = load_task(cfg.task, cfg.reward.functions)
    work = workload_for(cfg, task)
    # the model a run of this config trains: an episode run's tokenizer also knows its episodes' text
    paths = resolve_model(cfg.model, *work.tokenizer_text())
    return Setup(cfg, task, paths, AutoTokenizer.from_pretrained(str(paths.tokenizer_dir)), work)

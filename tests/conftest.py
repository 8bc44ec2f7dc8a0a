"""Shared fixtures: the offline tiny model, Ray started once per session, environment for vLLM."""

from __future__ import annotations

import os

import pytest

from cluster.runtime import apply_role_env

apply_role_env()  # offline hub, in-process vLLM engine, persistent DeepSpeed op cache


@pytest.fixture(scope="session")
def fund_task():
    """The fund assistant with its default options (the field report's data sizes)."""
    from configs.task import TaskConfig
    from tasks.base import load_task

    return load_task(TaskConfig())


@pytest.fixture(scope="session")
def tiny_paths(fund_task):
    """The tiny model built for the fund assistant's text (what every preset on it uses)."""
    from configs.model import ModelConfig
    from models.resolve import resolve_model

    return resolve_model(ModelConfig(), fund_task.corpus, fund_task.vocabulary())


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_paths):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_paths.tokenizer_dir)


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray for the session; logical CPUs above the 2 real ones because roles take turns."""
    import ray

    from cluster.runtime import ROOT

    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(address="local", num_cpus=8, object_store_memory=300 * 1024**2, include_dashboard=False,
             log_to_driver=False)
    yield ray
    ray.shutdown()

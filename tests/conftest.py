"""Shared fixtures: the offline tiny model, Ray started once per session, environment for vLLM."""

from __future__ import annotations

import os

import pytest

from cluster.runtime import apply_role_env

apply_role_env()  # offline hub, in-process vLLM engine, persistent DeepSpeed op cache


@pytest.fixture(scope="session")
def tiny_paths():
    from models.tiny import ensure_tiny_model

    return ensure_tiny_model()


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

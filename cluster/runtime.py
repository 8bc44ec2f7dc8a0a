"""Connecting to Ray and the environment every role needs, set by the project, not the user's shell.

Environment variables of the shell that runs `ray job submit` do not reach the job
(docs/platform.md#ray-jobs-and-environment), so
everything a role needs is passed in `runtime_env` here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
from pathlib import Path

from configs.cluster import ClusterConfig
from models.memory import MALLOC_ENV
from models.tiny import cache_root

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent.parent


def role_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for every actor: offline hub, in-process vLLM, persistent compile caches; then
    `extra` (config `cluster.env_vars`), which wins."""
    cache = cache_root()
    return {
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "TOKENIZERS_PARALLELISM": "false",
        # DeepSpeed compiles ops on first use (35–65 s): keep them in an absolute, persistent place.
        "TORCH_EXTENSIONS_DIR": str(extensions_dir(cache)),
        "NGRPO_CACHE": str(cache),
        "RAY_DEDUP_LOGS": "1",
        # vLLM logs every weight reload and cache reset at INFO; set INFO in cluster.env_vars to see them.
        "VLLM_LOGGING_LEVEL": "WARNING",
        **MALLOC_ENV,
        **(extra or {}),
    }


def extensions_dir(cache: Path) -> Path:
    """The op build folder of this Python environment. A build records the include and library paths
    of the environment that made it, so two environments (two checkouts, each with its own `.venv`)
    sharing one folder each took the other's build for stale and compiled the op again (about 40 s)
    whenever the other had built last; one folder per environment keeps each build."""
    return cache / "torch_extensions" / hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]


def redacted(config: dict) -> dict:
    """A config dump with the values of `cluster.env_vars` replaced (users put tokens there): what
    reaches disk and logs keeps the names only."""
    env = config.get("cluster", {}).get("env_vars")
    if not env:
        return config
    return {**config, "cluster": {**config["cluster"], "env_vars": dict.fromkeys(env, "<redacted>")}}


def apply_role_env(extra: dict[str, str] | None = None) -> None:
    for k, v in role_env(extra).items():
        os.environ.setdefault(k, v)


def connect(cfg: ClusterConfig) -> dict:
    """Attach to the configured / RAY_ADDRESS cluster, or start a local one. Returns a description."""
    import ray

    apply_role_env(cfg.env_vars)
    if ray.is_initialized():
        return {"mode": "already-initialized"}
    address = cfg.address or os.environ.get("RAY_ADDRESS")
    env = role_env(cfg.env_vars)
    if address:
        runtime_env: dict = {"env_vars": env}
        if not inside_job() and cfg.ship_code:
            # Driver outside `ray job submit`: ship the code (the job's working_dir does it otherwise).
            runtime_env["working_dir"] = str(ROOT)
            runtime_env["excludes"] = [".venv", ".git", "runs", "*.egg-info", ".hypothesis"]
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=True)
        return {"mode": "cluster", "address": address}
    # Local workers inherit this process's environment, including PYTHONPATH for the project's code.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    loopback_only()
    ray.init(
        address="local",
        num_cpus=cfg.local_num_cpus,
        object_store_memory=cfg.object_store_memory,
        include_dashboard=cfg.include_dashboard,
        dashboard_host="127.0.0.1",
        runtime_env={"env_vars": env},
        log_to_driver=True,
    )
    return {"mode": "local", "num_cpus": cfg.local_num_cpus}


def loopback_only() -> None:
    """Make the Ray this process starts listen on 127.0.0.1 only, never on the machine's interfaces.

    A local run is one machine: nothing outside it may reach its GCS, raylet, agents or workers (each
    runs code it is sent). `ray.init` turns a node address of 127.0.0.1 into the machine's own IP on
    purpose, and its gRPC servers listen on every interface, with no option to change either; what
    Ray does on macOS and Windows, where it starts single-machine clusters only, is exactly right:
    the node address is the loopback one, and every server of the node binds to it. The switch for
    that is `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`, read by each Ray process at import (the GCS, the
    raylet and the workers inherit it from here); this process may have imported Ray already, so its
    copy of the constant is set too. Ray also turns token authentication on for a local start.
    """
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def inside_job() -> bool:
    """True when this driver is the entrypoint of `ray job submit`: the job supervisor hands it the
    job's config (runtime_env with the uploaded working_dir) in this variable."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ  # ray._private.runtime_env.constants


def run_root(run_dir: str) -> Path:
    """Where run directories go. A relative `train.run_dir` inside `ray job submit` would land in the
    job's temporary copy of the working dir and vanish with it: put it under ~/ngrpo-ray instead."""
    path = Path(run_dir).expanduser()
    if not path.is_absolute() and inside_job():
        path = Path.home() / "ngrpo-ray" / path
    return path

"""How the job meets Ray."""

from __future__ import annotations

from pydantic import Field

from configs.base import Section


class ClusterConfig(Section):
    """Ray connection and local defaults."""

    address: str | None = None
    """Ray address; None uses RAY_ADDRESS or, when unset, starts a local Ray."""
    local_num_cpus: int = Field(2, ge=1)
    """CPUs of a locally started Ray."""
    object_store_memory: int = Field(512 * 1024**2, ge=78 * 1024**2)
    """Object store cap of a locally started Ray."""
    include_dashboard: bool = False
    """Start the dashboard with a local Ray."""
    env_vars: dict[str, str] = Field(default_factory=dict)
    """Extra environment for every role (e.g. NCCL_*, HF_HOME); wins over the project's defaults. The
    shell's environment does not reach a submitted job's actors: put what they need here."""

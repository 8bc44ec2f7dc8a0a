"""How the job meets Ray."""

from __future__ import annotations

from pydantic import Field, field_validator

from configs.base import Section


class ClusterConfig(Section):
    """Ray connection and local defaults."""

    address: str | None = None
    """Ray address; None uses RAY_ADDRESS or, when unset, starts a local Ray."""
    local_num_cpus: int = Field(2, ge=1)
    """CPUs of a locally started Ray."""
    object_store_memory: int = Field(512 * 1024**2, ge=78 * 1024**2)
    """Object store cap of a locally started Ray."""
    node_wait_s: float = Field(300.0, gt=0, le=86_400)
    """How long a role waits for room on the cluster when it must be placed: at start, and again when
    its node was lost (Ray moves a lost node's bundles to nodes with room, or to a node added later).
    Past it the run stops, naming the newest complete checkpoint."""
    ship_code: bool = True
    """Send this project's code to the cluster with the run (Ray's `working_dir`) when the driver runs
    outside `ray job submit`. Off where every node has the code at the same path already (a shared
    filesystem, an image with the code) and finds it on its PYTHONPATH."""
    include_dashboard: bool = False
    """Start the dashboard with a local Ray."""
    env_vars: dict[str, str] = Field(default_factory=dict)
    """Extra environment for every role (e.g. NCCL_*, HF_HOME); wins over the project's defaults. The
    shell's environment does not reach a submitted job's actors: put what they need here."""

    @field_validator("env_vars", mode="before")
    @classmethod
    def _text_values(cls, value: object) -> object:
        """Environment values are text. A number here is refused by name only: its value may be a token,
        and YAML may already have changed it (`0123` reads as octal 83), so it is not converted."""
        if isinstance(value, dict):
            bad = sorted(str(k) for k, v in value.items() if not isinstance(v, str))
            if bad:
                raise ValueError(f"cluster.env_vars: the value of {', '.join(bad)} is not text; "
                                 "quote it in the YAML file (NAME: '0123'), "
                                 "or pass it as --set cluster.env_vars.NAME=0123")
        return value

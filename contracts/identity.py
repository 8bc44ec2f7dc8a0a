"""Where a role runs: its Ray node and its process id, as every role reports it (`identity()`).

The coordinator records them in the `placement` event, so an operator (or a fault test) can find the
process behind an actor; a recovery event names the node of the role that failed.
"""

from __future__ import annotations

import os


def peak_rss() -> int:
    """This process's peak resident memory so far, in bytes (what the memory plan is checked against:
    `memory/{role}` in the metrics rows)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB


def node_identity() -> tuple[str | None, int]:
    """(Ray node id or None outside Ray, this process's id)."""
    try:
        import ray

        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
    except Exception:  # noqa: BLE001 - in-process use without a Ray runtime
        node = None
    return node, os.getpid()

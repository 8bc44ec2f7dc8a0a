"""The ways a run ends early or recovers, as exceptions the driver tells apart."""

from __future__ import annotations


class RunStopped(RuntimeError):
    """The run cannot go on; the message says why, and from which checkpoint it can be resumed."""


class PushError(RunStopped):
    """A weight push that did not take: no worker may keep serving a stale policy silently."""


class RoleFailure(RuntimeError):
    """A role that died or missed its deadline (the coordinator replaces it, or rebuilds the group)."""

    def __init__(self, role: str, index: int, node: str | None, cause: str) -> None:
        super().__init__(f"{role}-{index} on node {node or 'local'}: {cause}")
        self.role, self.index, self.node, self.cause = role, index, node, cause


def root_cause(error: BaseException) -> str:
    """The root cause of an error, in one line (a role's exception arrives wrapped by Ray)."""
    cause = getattr(error, "cause", None) or error
    return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1][:300]}"

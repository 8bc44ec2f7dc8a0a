"""The ways a run ends early or recovers, as exceptions the driver tells apart."""

from __future__ import annotations

import re

from cluster.actor_group import creation_error, one_line


class RunStopped(RuntimeError):
    """The run cannot go on; the message says why, and from which checkpoint it can be resumed."""


class PushError(RunStopped):
    """A weight push that did not take: no worker may keep serving a stale policy silently."""


class RoleFailure(RuntimeError):
    """A role that died or missed its deadline (the coordinator replaces it, or rebuilds the group)."""

    def __init__(self, role: str, index: int, node: str | None, cause: str) -> None:
        super().__init__(f"{role}-{index} on node {node or 'local'}: {cause}")
        self.role, self.index, self.node, self.cause = role, index, node, cause

    def __reduce__(self):
        # Ray pickles it on its way out of the coordinator. BaseException's default rebuilds it as
        # cls(*self.args) = cls(message), which this __init__ refuses: the driver then got Ray's
        # "Failed to deserialize exception" instead of this one-line message.
        return type(self), (self.role, self.index, self.node, self.cause), self.__dict__


# How the loss of a role's process reads in RoleFailure.cause (the backend's `actor_failure`, the
# actor group's deadline), as opposed to an exception its constructor or one of its calls raised.
_LOST = ("ActorDiedError", "RayActorError", "WorkerCrashedError", "ActorUnavailableError", "NodeDiedError",
         "no answer within")


def lost_process(error: BaseException) -> bool:
    """True when `error`, as the driver gets it from the coordinator, means a process of the run was
    lost — the coordinator or a role killed, crashed or stuck, during set-up, a recovery, an eval or the
    finish — and not code that raised or a run that stopped itself: the run can start again from its
    newest checkpoint and end as if nothing had happened. A constructor that raised is no loss: it
    would raise again."""
    inner = _unwrapped(error)
    if isinstance(inner, RunStopped):
        return False
    if isinstance(inner, RoleFailure):
        return inner.cause.startswith(_LOST)
    from ray.exceptions import RayActorError, WorkerCrashedError

    return isinstance(inner,
                      RayActorError | WorkerCrashedError) and not getattr(inner, "actor_init_failed", False)


def root_cause(error: BaseException) -> str:
    """The root cause of an error, in one line: "ExcType: message".

    A role's exception arrives wrapped by Ray: a RayTaskError holds it as `.cause` (once per actor it
    went through); an actor that died in its constructor arrives as an ActorDiedError that holds the
    constructor's exception only as the text of its traceback. A RoleFailure names its root cause."""
    error = _unwrapped(error)
    if isinstance(error, RoleFailure):
        return error.cause
    return creation_error(error) or f"{type(error).__name__}: {one_line(str(error))}"


def describe(error: BaseException, default: str) -> str:
    """What the driver prints after "error: " for an error out of the coordinator: the role and node
    it came from, then its root cause (`default` names the coordinator, for its own errors)."""
    inner = _unwrapped(error)
    if isinstance(inner, RoleFailure | RunStopped):  # the project's own message, already one line
        return str(inner)
    return f"{_origin(error) or default}: {root_cause(inner)}"


def _unwrapped(error: BaseException) -> BaseException:
    """The exception inside Ray's wrappers (RayTaskError.cause, repeated per actor it crossed)."""
    for _ in range(16):  # a chain this deep is not Ray's wrapping
        inner = getattr(error, "cause", None)
        if not isinstance(inner, BaseException) or inner is error:
            break
        error = inner
    return error


# The first line of a RayTaskError: "ray::<actor name>:<Class>.<method>() (pid=N, ip=A, …)", with
# "<run>/" before the name of a project role (cluster.actor_group names them "<run>/<role>-<i>").
_HEADER = re.compile(r"ray::(?:[^\s:]*/)?(?P<name>[^\s:/]+):\w+\.\w+\(\)\S*\s+\(pid=\d+, ip=(?P<ip>[^,)\s]+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _origin(error: BaseException) -> str | None:
    """"<role> on node <ip>" of the innermost named actor whose call raised `error`, or None."""
    found = None
    for _ in range(16):
        header = _HEADER.search(_ANSI.sub("", str(error).split("\n", 1)[0]))
        if header:
            found = f"{header['name']} on node {header['ip']}"
        inner = getattr(error, "cause", None)
        if not isinstance(inner, BaseException) or inner is error:
            break
        error = inner
    return found

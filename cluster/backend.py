"""Where roles run: as Ray actors (`RayBackend`) or in this process (`LocalBackend`), behind one API.

Every role class imports and runs without Ray; a backend turns it into something that answers calls.
A call returns a reference (Ray's ObjectRef, or a `LocalRef` holding the answer or the exception);
`get` turns references into values, `put` makes one from a value, and references passed as call
arguments reach the callee as their values on both backends (Ray resolves top-level ObjectRef
arguments; the local backend does the same). So the coordinator moves a batch or a LoRA update from
producer to consumers as one reference either way, and unit tests run every role in-process.

>>> b = LocalBackend()
>>> counter = b.spawn(list, ([1, 2],), {}, {})
>>> b.get(b.call(counter, "__len__"))
2
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(eq=False)  # identity: `ref in ready` must not compare the values
class LocalRef:
    """The answer of an in-process call: a value, or the exception the call raised (re-raised by get)."""

    value: Any = None
    error: BaseException | None = None


class LocalBackend:
    """Roles as plain objects in this process; calls run at once, in order."""

    name = "local"

    def spawn(self, cls: type, args: tuple, kwargs: dict, options: dict) -> Any:
        return cls(*args, **kwargs)

    def call(self, actor: Any, method: str, *args: Any, **kwargs: Any) -> LocalRef:
        args = tuple(self._value(a) for a in args)
        kwargs = {k: self._value(v) for k, v in kwargs.items()}
        try:
            return LocalRef(getattr(actor, method)(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - handed to whoever calls get(), as Ray does
            return LocalRef(error=e)

    def task(self, fn: Callable, args: tuple, kwargs: dict, options: dict) -> LocalRef:
        try:
            return LocalRef(fn(*args, **kwargs))
        except Exception as e:  # noqa: BLE001
            return LocalRef(error=e)

    def put(self, value: Any) -> LocalRef:
        return LocalRef(value)

    def get(self, refs: Any, timeout: float | None = None) -> Any:
        if isinstance(refs, list):
            return [self._value(r) for r in refs]
        return self._value(refs)

    def wait(self, refs: Sequence[Any], timeout: float | None = None) -> tuple[list, list]:
        return list(refs), []  # every local call has already finished

    def kill(self, actor: Any) -> None:
        close = getattr(actor, "shutdown", None)
        if callable(close):
            close()

    def node_id(self, actor: Any) -> str | None:
        return None

    def actor_failure(self, error: BaseException) -> str | None:
        """In-process roles cannot die on their own: every error is the call's own."""
        return None

    @staticmethod
    def _value(ref: Any) -> Any:
        if not isinstance(ref, LocalRef):
            return ref
        if ref.error is not None:
            raise ref.error
        return ref.value


class RayBackend:
    """Roles as Ray actors; `options` are Ray's actor options (resources, placement, name, runtime_env)."""

    name = "ray"

    def spawn(self, cls: type, args: tuple, kwargs: dict, options: dict) -> Any:
        import ray

        return ray.remote(cls).options(**options).remote(*args, **kwargs)

    def call(self, actor: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(actor, method).remote(*args, **kwargs)

    def task(self, fn: Callable, args: tuple, kwargs: dict, options: dict) -> Any:
        import ray

        return ray.remote(fn).options(**options).remote(*args, **kwargs)

    def put(self, value: Any) -> Any:
        import ray

        return ray.put(value)

    def get(self, refs: Any, timeout: float | None = None) -> Any:
        import ray

        return ray.get(refs, timeout=timeout)

    def wait(self, refs: Sequence[Any], timeout: float | None = None) -> tuple[list, list]:
        import ray

        return ray.wait(list(refs), num_returns=len(refs), timeout=timeout)

    def kill(self, actor: Any) -> None:
        import ray

        try:
            ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def node_id(self, actor: Any) -> str | None:
        return None  # a placement group knows where its bundles are; see ActorGroup.node_ids

    def actor_failure(self, error: BaseException) -> str | None:
        """What happened to the actor when `error` means it is gone (died, was killed, its process
        crashed), else None: the call itself raised, which is the caller's to handle."""
        from ray.exceptions import RayActorError, WorkerCrashedError

        if isinstance(error, RayActorError | WorkerCrashedError):
            return f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
        return None


Backend = LocalBackend | RayBackend

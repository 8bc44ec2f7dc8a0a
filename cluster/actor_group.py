"""ActorGroup: N copies of one role, placed together, with calls fanned out to all of them.

The one way roles are started, for every role (rollout workers, learner ranks, reward actors) and on
either backend (`cluster.backend`): on Ray, a placement group holds one bundle per actor — learner
ranks PACKed (they all-reduce every step), rollout workers SPREAD over nodes (they only talk to the
coordinator) — and an actor that dies or hangs is replaced in its own bundle with the same arguments.
In-process, the same calls run on plain objects, which is how unit tests drive the roles.

>>> from cluster.backend import LocalBackend
>>> group = ActorGroup(dict, 2, name="demo", args_for=lambda i: ((), {"rank": i}), backend=LocalBackend())
>>> group.get(group.call("get", "rank"))
[0, 1]
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from cluster.backend import Backend

log = logging.getLogger(__name__)
RETRY_S = 2.0  # between starts of a replacement lost before it was ready


class ActorGroup:
    def __init__(
        self,
        cls: type,
        count: int,
        *,
        name: str,
        args_for: Callable[[int], tuple[tuple, dict]],
        backend: Backend,
        resources: dict[str, float] | None = None,
        strategy: str | None = None,
        runtime_env: dict | None = None,
        name_prefix: str | None = None,
        placement_timeout_s: float = 120.0,
    ) -> None:
        """`count` actors of `cls`; actor i is built with `args_for(i)` = (args, kwargs).

        `resources` ({"num_cpus", "num_gpus"}) and `strategy` (PACK, SPREAD, …) place them on Ray;
        `strategy=None` places each actor on its own, without a placement group (light roles)."""
        self.cls, self.name, self.backend, self.args_for = cls, name, backend, args_for
        self.resources = dict(resources or {"num_cpus": 1.0})
        self.runtime_env, self.name_prefix = runtime_env, name_prefix
        self.placement_timeout_s = placement_timeout_s
        self.restarts = [0] * count  # per actor: how many times it was replaced
        self.pg = None
        if backend.name == "ray" and strategy is not None:
            self.pg = _placement_group(name, count, self.resources, strategy, placement_timeout_s)
        self.actors = [self._spawn(i) for i in range(count)]

    def _spawn(self, i: int) -> Any:
        args, kwargs = self.args_for(i)
        opts: dict[str, Any] = {}
        if self.backend.name == "ray":
            opts = {"num_cpus": self.resources.get("num_cpus", 1.0),
                    "num_gpus": self.resources.get("num_gpus", 0)}
            if self.pg is not None:
                from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

                opts["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                    self.pg, placement_group_bundle_index=i)
            if self.runtime_env:
                opts["runtime_env"] = self.runtime_env
            if self.name_prefix is not None:  # readable in the dashboard: "<run>/rollout-0", then "-0.1"
                gen = f".{self.restarts[i]}" if self.restarts[i] else ""
                opts["name"] = f"{self.name_prefix}{self.name}-{i}{gen}"
        return self.backend.spawn(self.cls, args, kwargs, opts)

    def __len__(self) -> int:
        return len(self.actors)

    def call(self, method: str, *args: Any, **kwargs: Any) -> list:
        """The same call on every actor; one reference each."""
        return [self.backend.call(a, method, *args, **kwargs) for a in self.actors]

    def call_each(self, method: str, per_actor: Sequence[tuple]) -> list:
        """Actor i gets the positional arguments `per_actor[i]`; one reference each (fewer tuples than
        actors leave the last actors out)."""
        return [self.backend.call(a, method, *args) for a, args in zip(self.actors, per_actor)]

    def get(self, refs: Any, timeout: float | None = None) -> Any:
        return self.backend.get(refs, timeout=timeout)

    def gather(self, refs: dict[int, Any], timeout: float | None) -> tuple[dict[int, Any], dict[int, str]]:
        """Wait for the answers of actors {index: ref} until `timeout` seconds have passed.

        Returns (answers by index, failures by index), a failure being an actor that did not answer in
        time or is gone (with the cause). An exception the call itself raised is re-raised, unless
        another actor of the call failed: then it is that failure's consequence (a learner rank whose
        peer died raises from its collective), listed after the failures that explain it."""
        ready, _ = self.backend.wait(list(refs.values()), timeout=timeout)
        answers, failures, raised = {}, {}, {}
        for i, ref in refs.items():
            if ref not in ready:
                failures[i] = f"no answer within {timeout:.0f}s"
                continue
            try:
                answers[i] = self.backend.get(ref)
            except Exception as e:  # noqa: BLE001 - sorted into "actor gone" and "call raised"
                cause = self.backend.actor_failure(e)
                if cause is None:
                    raised[i] = e
                    continue
                # An actor that died in its constructor: what the constructor raised, not Ray's wrapper.
                failures[i] = creation_error(e) or cause
        if raised and not failures:
            raise next(iter(raised.values()))
        for i, e in raised.items():
            inner = getattr(e, "cause", None) or e  # Ray's RayTaskError holds the call's own exception
            why = f"{type(inner).__name__}: {one_line(str(inner), 300)}"
            failures[i] = f"raised after another actor failed: {why}"
        return answers, failures

    def replace(self, i: int) -> None:
        """Kill actor i and start a new one with the same arguments, in the same bundle. A bundle whose
        node was lost is placed again by Ray on a node with room; until it is, the new actor could not
        start, so this waits for it (up to `placement_timeout_s`, then PlacementTimeout)."""
        self.backend.kill(self.actors[i])
        self.restarts[i] += 1
        if self.pg is not None:
            _wait_placed(self.pg, self.name, self.placement_timeout_s)
        self.actors[i] = self._spawn(i)
        log.warning("%s-%d replaced (restart %d)", self.name, i, self.restarts[i])

    def start_again(self, i: int, timeout_s: float) -> str | None:
        """Replace actor i and wait (up to `timeout_s`) until it answers `ready`; None once it does, else
        what went wrong. A replacement whose process dies before it is ready, its constructor not having
        raised, was most likely placed on a node that is gone but not yet known to be (Ray notices a lost
        node only once its health checks fail): it is started again every few seconds, until
        `placement_timeout_s` has passed. A constructor that raised gets one more try (what a lost node
        leaves behind can fail it once: its working directory being cleaned up and fetched again); the
        second error is the answer."""
        deadline, raised = time.monotonic() + self.placement_timeout_s, 0
        while True:
            self.replace(i)
            ref = self.backend.call(self.actors[i], "ready")
            if not self.backend.wait([ref], timeout=timeout_s)[0]:
                return f"no answer within {timeout_s:.0f}s"
            try:
                self.backend.get(ref)
                return None
            except Exception as e:  # noqa: BLE001 - sorted into "constructor raised" and "process lost"
                cause = self.backend.actor_failure(e)
                if cause is None:
                    raise
                raised += bool(creation_error(e))
                if raised > 1 or time.monotonic() > deadline:
                    return creation_error(e) or cause
                log.warning("%s-%d was lost before it was ready (%s); starting it again", self.name, i, cause)
                time.sleep(RETRY_S)

    def node_ids(self) -> list[str | None]:
        """The node each actor was placed on (its bundle's node), in actor order; None in-process."""
        if self.pg is None:  # every role reports (node, pid) through identity()
            return [node for node, _ in self.get(self.call("identity"))] if self.backend.name == "ray" else [
                None] * len(self.actors)
        from ray.util.placement_group import placement_group_table

        where = placement_group_table(self.pg)["bundles_to_node_id"]
        return [where[i] for i in range(len(self.actors))]

    def shutdown(self) -> None:
        for a in self.actors:
            self.backend.kill(a)
        self.actors = []
        if self.pg is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(self.pg)
            except Exception:  # noqa: BLE001 - already gone
                pass


def _placement_group(name: str, count: int, resources: dict[str, float], strategy: str, timeout_s: float):
    """A ready placement group of `count` bundles, or a RuntimeError naming what the cluster has free."""
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    bundle = {"CPU": resources.get("num_cpus", 1.0)}
    if resources.get("num_gpus"):
        bundle["GPU"] = resources["num_gpus"]
    # A group of this name still there is a lost coordinator's: placement groups live as long as the
    # job, not the actor that made them, so it would hold its bundles (and its name) for good.
    try:
        remove_placement_group(ray.util.get_placement_group(f"{name}-pg"))
    except ValueError:  # none of that name (Ray raises rather than return None)
        pass
    pg = placement_group([dict(bundle) for _ in range(count)], strategy=strategy, name=f"{name}-pg")
    ready, _ = ray.wait([pg.ready()], timeout=timeout_s)
    if not ready:
        remove_placement_group(pg)
        raise PlacementTimeout(
            f"could not place {count} x {bundle} for {name} ({strategy}) within {timeout_s:.0f}s "
            f"(cluster.node_wait_s): the cluster has {ray.available_resources()} free; lower {name} "
            "resources or add nodes"
        )
    return pg


def _wait_placed(pg, name: str, timeout_s: float) -> None:
    """Return once every bundle of `pg` is placed. After a node is lost Ray reschedules its bundles
    (state RESCHEDULING) as soon as some node has room: a node added later is used then."""
    import ray
    from ray.util.placement_group import placement_group_table

    deadline = time.monotonic() + timeout_s
    while (state := placement_group_table(pg)["state"]) != "CREATED":
        if time.monotonic() > deadline:
            raise PlacementTimeout(
                f"{name}: a lost node's bundles could not be placed again within {timeout_s:.0f}s "
                f"(cluster.node_wait_s; placement group {state}): the cluster has "
                f"{ray.available_resources()} free; add a node"
            )
        time.sleep(0.5)


class PlacementTimeout(RuntimeError):
    """The cluster had no room for a role within cluster.node_wait_s."""


def creation_error(error: BaseException) -> str | None:
    """"ExcType: message" of the exception an actor's constructor raised, when `error` is Ray's
    ActorDiedError for that actor (else None). Ray keeps that exception only as text: its message
    ends with the creation task's traceback, whose last frame is followed by the exception's lines."""
    if not getattr(error, "actor_init_failed", False):
        return None
    lines = str(error).strip().splitlines()
    frames = [n for n, line in enumerate(lines) if line.startswith("  File ")]
    start = frames[-1] + 1 if frames else len(lines) - 1
    while start < len(lines) - 1 and (not lines[start].strip() or lines[start][:1].isspace()):
        start += 1  # the frame's source line and its ^^^ marks
    head, sep, message = "\n".join(lines[start:]).partition(": ")
    if not sep or " " in head:  # not "ExcType: message": keep the text as it is
        return one_line("\n".join(lines[start:]))
    # vllm.x.FooError -> FooError, as type().__name__
    return f"{head.rsplit('.', 1)[-1]}: {one_line(message)}"


def one_line(text: str, limit: int = 400) -> str:
    """A message on one line (its lines joined), cut at `limit` characters."""
    joined = " ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"

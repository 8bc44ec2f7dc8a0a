"""ActorGroup: N copies of one role placed on a placement group, with calls fanned out to all.

Learner ranks are PACKed (they talk to each other every step); rollout workers are SPREAD across
nodes (they only talk to the coordinator). `async_*` methods return ObjectRefs; only the Coordinator
calls `ray.get` on them.

>>> group = ActorGroup(RolloutWorker, 2, {"num_cpus": 1}, "SPREAD", name="rollout")   # doctest: +SKIP
>>> refs = group.async_call("ready")            # one ObjectRef per actor
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


class ActorGroup:
    def __init__(
        self,
        cls: type,
        count: int,
        resources: dict[str, float],
        strategy: str,
        *,
        name: str,
        args_for: Callable[[int], tuple[tuple, dict]],
        runtime_env: dict | None = None,
        placement_timeout_s: float = 120.0,
        name_prefix: str | None = None,
    ) -> None:
        import ray
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        bundle = {"CPU": resources.get("num_cpus", 1.0)}
        if resources.get("num_gpus"):
            bundle["GPU"] = resources["num_gpus"]
        self.pg = placement_group([dict(bundle) for _ in range(count)], strategy=strategy, name=f"{name}-pg")
        ready, _ = ray.wait([self.pg.ready()], timeout=placement_timeout_s)
        if not ready:
            from ray.util.placement_group import remove_placement_group

            remove_placement_group(self.pg)
            raise RuntimeError(
                f"could not place {count} x {bundle} for {name} ({strategy}) within {placement_timeout_s:.0f}s: "
                f"the cluster has {ray.available_resources()}; lower {name} resources or add nodes"
            )
        remote_cls = ray.remote(cls)
        self.actors = []
        for i in range(count):
            args, kwargs = args_for(i)
            opts: dict[str, Any] = {
                "num_cpus": bundle["CPU"],
                "num_gpus": bundle.get("GPU", 0),
                "scheduling_strategy": PlacementGroupSchedulingStrategy(self.pg, placement_group_bundle_index=i),
            }
            if runtime_env:
                opts["runtime_env"] = runtime_env
            if name_prefix is not None:  # readable in the dashboard: "<run>/rollout-0"
                opts["name"] = f"{name_prefix}{name}-{i}"
            self.actors.append(remote_cls.options(**opts).remote(*args, **kwargs))
        self.name = name

    def __len__(self) -> int:
        return len(self.actors)

    def node_ids(self) -> list[str]:
        """The node each actor was placed on (its placement-group bundle's node), in actor order."""
        from ray.util.placement_group import placement_group_table

        where = placement_group_table(self.pg)["bundles_to_node_id"]
        return [where[i] for i in range(len(self.actors))]

    def async_call(self, method: str, *args: Any, **kwargs: Any) -> list:
        """The same call on every actor; one ObjectRef each."""
        return [getattr(a, method).remote(*args, **kwargs) for a in self.actors]

    def async_call_each(self, method: str, per_actor_args: list[tuple]) -> list:
        """actor i gets per_actor_args[i]."""
        return [getattr(a, method).remote(*args) for a, args in zip(self.actors, per_actor_args)]

    def shutdown(self) -> None:
        import ray
        from ray.util.placement_group import remove_placement_group

        for a in self.actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        try:
            remove_placement_group(self.pg)
        except Exception:  # noqa: BLE001
            pass

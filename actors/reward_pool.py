"""RewardPool: reward actors that score shards of a batch concurrently, with a per-call timeout.

Owns fault isolation around user reward code. A reward function that raises scores the completions
it fails on 0 (the shard is retried one completion at a time to find them); one that hangs past the
timeout scores its shard 0 and its actor is replaced. Every such fallback is counted and logged with
the sample — nothing is dropped. The pool knows nothing of groups or advantages.

>>> pool = RewardPool([("gt", 1.0)], num_actors=2, timeout_s=30, use_ray=False)
>>> pool.score(ScoreRequest(prompts=["查余额"], completions=["{}"],
...                         columns={"solution": ['{"action": {"tool": "check_balance"}}']})).rewards
[0.0]
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
from typing import Any

from actors.types import ScoreRequest, ScoreResult

log = logging.getLogger(__name__)


class RewardActor:
    """Scores one shard with every configured reward function (weighted sum)."""

    def __init__(self, functions: list[tuple[str, float]], timeout_s: float, index: int = 0) -> None:
        from rewards.registry import get_reward

        self.index = index
        self.functions = [(name, get_reward(name), float(w)) for name, w in functions]
        self.timeout_s = timeout_s
        self.poisoned = False  # a timed-out call left a thread running: the pool replaces this actor
        self._pool = cf.ThreadPoolExecutor(max_workers=4)

    def ready(self) -> bool:
        return True

    def node_id(self) -> str | None:
        """The Ray node this actor runs on (None in-process without Ray)."""
        import ray

        return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"RewardActor({self.index})"

    def _call(self, fn: Any, req: ScoreRequest, idx: list[int]) -> list[float]:
        cols = {k: [v[i] for i in idx] for k, v in req.columns.items()}
        prompts = [req.prompts[i] for i in idx]
        comps = [req.completions[i] for i in idx]
        fut = self._pool.submit(fn, prompts=prompts, completions=comps, **cols)
        out = fut.result(timeout=self.timeout_s)
        # None is TRL's "not applicable to this sample": it adds nothing, and is not a failure.
        vals = [0.0 if x is None else float(x) for x in out]
        if len(vals) != len(idx) or not all(math.isfinite(v) for v in vals):
            raise ValueError(f"returned {len(vals)} values for {len(idx)} completions (or a NaN/inf)")
        return vals

    def score(self, req: ScoreRequest) -> tuple[ScoreResult, bool]:
        """(result, poisoned). Rewards are the weighted sum over functions, per completion."""
        n = len(req.completions)
        totals = [0.0] * n
        failed = [False] * n
        logs: list[str] = []
        breakdowns: list[dict[str, float]] = [{} for _ in range(n)]
        for name, fn, weight in self.functions:
            try:
                vals = self._call(fn, req, list(range(n)))
            except cf.TimeoutError:
                self.poisoned = True
                vals = [0.0] * n
                for i in range(n):
                    failed[i] = True
                    logs.append(f"reward {name!r} timed out after {self.timeout_s}s on: {req.completions[i][:200]!r}")
            except Exception as e:  # noqa: BLE001 - user code; isolate the failing completions
                vals = []
                for i in range(n):
                    if self.poisoned:  # a retry hung: the rest of the shard scores 0 without waiting
                        vals.append(0.0)
                        failed[i] = True
                        logs.append(f"reward {name!r} skipped after a timeout on: {req.completions[i][:200]!r}")
                        continue
                    try:
                        vals.append(self._call(fn, req, [i])[0])
                    except cf.TimeoutError:
                        self.poisoned = True
                        vals.append(0.0)
                        failed[i] = True
                        logs.append(f"reward {name!r} timed out after {self.timeout_s}s on: {req.completions[i][:200]!r}")
                    except Exception as e1:  # noqa: BLE001
                        vals.append(0.0)
                        failed[i] = True
                        logs.append(f"reward {name!r} raised {type(e1).__name__}: {e1} on: {req.completions[i][:200]!r}")
                log.debug("reward %s failed on the whole shard (%s); isolated per completion", name, e)
            for i, v in enumerate(vals):
                totals[i] += weight * v
                breakdowns[i][name] = v
            breakdowns = self._add_breakdown(fn, req, breakdowns)
        for line in logs:
            log.warning(line)
        result = ScoreResult(totals, breakdowns, failures=sum(failed), failure_log=logs)
        return result, self.poisoned

    def _add_breakdown(self, fn: Any, req: ScoreRequest, breakdowns: list[dict]) -> list[dict]:
        """Component scores for metrics when the function offers them (MultistepGTReward does)."""
        if not hasattr(fn, "breakdown"):
            return breakdowns
        try:
            fut = self._pool.submit(fn.breakdown, prompts=req.prompts, completions=req.completions, **req.columns)
            parts = fut.result(timeout=self.timeout_s)
            return [{**b, **{k: float(v) for k, v in p.items()}} for b, p in zip(breakdowns, parts)]
        except Exception:  # noqa: BLE001 - metrics only; the reward itself was scored above
            return breakdowns


class RewardPool:
    """Fans a batch out to `num_actors` RewardActors and gathers the scores in order."""

    def __init__(
        self,
        functions: list[tuple[str, float]],
        num_actors: int = 2,
        timeout_s: float = 30.0,
        use_ray: bool = True,
        actor_options: dict | None = None,
        name_prefix: str | None = None,
    ) -> None:
        self.functions, self.timeout_s, self.use_ray = functions, timeout_s, use_ray
        self.actor_options = actor_options or {}
        self.name_prefix = name_prefix  # readable actor names in the dashboard: "<prefix>reward-<i>"
        self.total_failures = 0
        self.replaced_actors = 0
        self.actors = [self._new_actor(i) for i in range(num_actors)]

    def _new_actor(self, index: int):
        if not self.use_ray:
            return RewardActor(self.functions, self.timeout_s, index)
        import ray

        opts = {"num_cpus": 0.25, **self.actor_options}
        if self.name_prefix is not None:
            # A replacement gets a new name: the killed actor's name may not be released yet.
            gen = f".{self.replaced_actors}" if self.replaced_actors else ""
            opts["name"] = f"{self.name_prefix}reward-{index}{gen}"
        return ray.remote(RewardActor).options(**opts).remote(self.functions, self.timeout_s, index)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Fail early, with the reason, when the cluster cannot schedule the reward actors."""
        if not self.use_ray:
            return
        import ray

        refs = [a.ready.remote() for a in self.actors]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
        if len(ready) < len(refs):
            raise RuntimeError(
                f"only {len(ready)} of {len(refs)} reward actors started within {timeout_s:.0f}s; the cluster "
                f"has {ray.available_resources()} free: lower reward.num_cpus or reward.num_actors"
            )

    def node_ids(self) -> list[str | None]:
        """The node of each reward actor, in order."""
        if not self.use_ray:
            return [a.node_id() for a in self.actors]
        import ray

        return ray.get([a.node_id.remote() for a in self.actors])

    def score(self, req: ScoreRequest) -> ScoreResult:
        n = len(req.completions)
        k = max(1, min(len(self.actors), n))
        bounds = [(i * n // k, (i + 1) * n // k) for i in range(k)]
        shards = [
            ScoreRequest(
                req.prompts[a:b], req.completions[a:b], {c: v[a:b] for c, v in req.columns.items()}
            )
            for a, b in bounds
        ]
        if self.use_ray:
            outs = self._score_ray(shards)
        else:
            outs = [a.score(s) for a, s in zip(self.actors, shards)]
        result = ScoreResult([], [])
        for i, (res, poisoned) in enumerate(outs):
            result.rewards += res.rewards
            result.breakdowns += res.breakdowns
            result.failures += res.failures
            result.failure_log += res.failure_log
            if poisoned:
                self._replace(i)
        self.total_failures += result.failures
        return result

    def _score_ray(self, shards: list[ScoreRequest]) -> list[tuple[ScoreResult, bool]]:
        import ray

        refs = [self.actors[i].score.remote(s) for i, s in enumerate(shards)]
        # The actor enforces the per-call timeout itself; this outer bound catches an actor that is
        # itself stuck (e.g. a reward holding the GIL), with room for every function and its retries.
        bound = self.timeout_s * (len(self.functions) * 2 + 1) + 10
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=bound)
        done = set(ready)
        outs = []
        for i, (ref, shard) in enumerate(zip(refs, shards)):
            if ref in done:
                try:
                    outs.append(ray.get(ref))
                    continue
                except Exception as e:  # noqa: BLE001 - the actor died; score 0 and replace it
                    why = f"reward actor {i} died: {e}"
            else:
                why = f"reward actor {i} did not answer within {bound:.0f}s"
            n = len(shard.completions)
            logs = [f"{why}; scoring 0: {c[:200]!r}" for c in shard.completions]
            for line in logs:
                log.warning(line)
            outs.append((ScoreResult([0.0] * n, [{} for _ in range(n)], n, logs), True))
        return outs

    def shutdown(self) -> None:
        if self.use_ray:
            import ray

            for a in self.actors:
                try:
                    ray.kill(a, no_restart=True)
                except Exception:  # noqa: BLE001 - already gone
                    pass
        self.actors = []

    def _replace(self, index: int) -> None:
        if self.use_ray:
            import ray

            ray.kill(self.actors[index], no_restart=True)
        self.actors[index] = self._new_actor(index)
        self.replaced_actors += 1

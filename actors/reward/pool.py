"""RewardPool: reward actors that score shards of a batch concurrently, with a per-call timeout.

Owns fault isolation around user reward code. A reward function that raises, or returns NaN/inf or a
value outside its declared `reward_range`, fails the completions it fails on (the shard is retried one
completion at a time to find them); one that hangs past the timeout fails its shard and its actor is
replaced. An actor that dies or gets stuck is replaced and its shard scored again by the replacement.
A failed completion is marked (`ScoreResult.failed`) and counted, with a one-line record of why
(`ScoreResult.failure_log`); the coordinator keeps each record as an event, logs one summary a step (a
broken reward fails every completion: one warning each would flood the log), and leaves the failed
completions out of their groups' statistics and of the loss. The pool knows nothing of groups
or advantages.

Every function is called with TRL's reward contract (`rewards.contract`: completions shaped by their
prompt's format, `completion_ids`, every row column; `async` rewards awaited; None is "not applicable").
A function with a `breakdown(...) -> list[dict]` method (the fund assistant's rewards have one) is called
through it instead, with the same keywords: its `total` is the reward and its parts go to the metrics.
The task's judge (the reward that says whether a sample is right) is always scored, for
metrics only, when the config does not already use it.

>>> from cluster.backend import LocalBackend
>>> group = ActorGroup(RewardActor, 2, name="reward", backend=LocalBackend(),
...                    args_for=lambda i: (([("gt", 1.0)], 30.0), {"index": i}))
>>> pool = RewardPool(group, timeout_s=30.0, num_functions=2)  # len(functions) + 1: room for a judge
>>> pool.score(ScoreRequest(prompts=["查余额"], completions=["{}"],
...                         columns={"solution": ['{"action": {"tool": "check_balance"}}']})).rewards
[0.0]
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from actors.errors import RoleFailure
from cluster.actor_group import ActorGroup, PlacementTimeout, one_line
from contracts.identity import node_identity
from contracts.types import ScoreRequest, ScoreResult
from rewards.contract import RewardContractError, call_reward, reward_kwargs

log = logging.getLogger(__name__)



class RewardActor:
    """Scores one shard with every configured reward function (weighted sum)."""

    def __init__(self, functions: list[tuple[str, float]], timeout_s: float, index: int = 0,
                 judge: str | None = None) -> None:
        from rewards.registry import get_reward

        self.index = index
        self.functions = [(name, get_reward(name), float(w)) for name, w in functions]
        # The judge, scored for metrics only (weight 0, failures not counted) when not configured.
        self.judge = get_reward(judge) if judge and judge not in {n for n, _ in functions} else None
        self.judge_name = judge or ""
        self.timeout_s = timeout_s
        self.poisoned = False  # a timed-out call left a thread running: the pool replaces this actor
        self._pool = cf.ThreadPoolExecutor(max_workers=4)

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"RewardActor({self.index})"

    def ready(self) -> bool:
        return True

    def identity(self) -> tuple[str | None, int]:
        """(Ray node id, process id) of this actor."""
        return node_identity()

    def _call(self, fn: Any, req: ScoreRequest, idx: list[int]) -> list[dict[str, float] | None]:
        """One {"total": reward, parts...} dict per completion of `idx` (None where the function said
        "not applicable"), called with TRL's reward contract (`rewards.contract`); raises on a bad answer."""
        kwargs = reward_kwargs([req.prompts[i] for i in idx], [req.completions[i] for i in idx],
                               [req.completion_ids[i] for i in idx] if req.completion_ids else None,
                               {k: [v[i] for i in idx] for k, v in req.columns.items()}, req.step)
        if callable(getattr(fn, "breakdown", None)):
            parts = self._pool.submit(fn.breakdown, **kwargs).result(timeout=self.timeout_s)
            out: list[dict[str, float] | None] = [{k: float(v) for k, v in p.items()} for p in parts]
            if len(out) != len(idx) or not all("total" in p for p in out):
                raise RewardContractError(f"breakdown returned {len(out)} dicts with "
                                          f"a 'total' for {len(idx)} completions")
        else:
            values = self._pool.submit(call_reward, fn, kwargs, len(idx)).result(timeout=self.timeout_s)
            out = [None if x is None else {"total": x} for x in values]
        if not all(math.isfinite(p["total"]) for p in out if p is not None):
            raise ValueError("returned a NaN or inf")
        lo, hi = getattr(fn, "reward_range", (-math.inf, math.inf))
        if any(not lo <= p["total"] <= hi for p in out if p is not None):
            raise ValueError(f"returned a value outside its declared range [{lo}, {hi}]")
        return out

    def _score_fn(self, name: str, fn: Any, req: ScoreRequest,
                  logs: list[str]) -> list[dict | None | Failed]:
        """Per completion its result dict, None where the function said "not applicable", or FAILED
        where it failed (each failure logged). A call that raised is retried one completion at a time,
        to fail only the completions it fails on; an answer that breaks the contract (wrong length or
        type) fails the whole call, with its own message: per completion it would only mislead."""
        n = len(req.completions)
        try:
            return list(self._call(fn, req, list(range(n))))
        except cf.TimeoutError:
            self.poisoned = True
            logs += [f"reward {name!r} timed out after {self.timeout_s}s on: {_head(c)!r}"
                     for c in req.completions]
            return [FAILED] * n
        except RewardContractError as e:
            logs += [f"reward {name!r} {e} (on: {_head(c)!r})" for c in req.completions]
            return [FAILED] * n
        except Exception as e:  # noqa: BLE001 - user code; isolate the failing completions
            log.debug("reward %s failed on the whole shard (%s); isolated per completion", name, e)
        out: list[dict | None | Failed] = []
        for i in range(n):
            text = _head(req.completions[i])
            if self.poisoned:  # a retry hung: the rest of the shard scores 0 without waiting
                out.append(FAILED)
                logs.append(f"reward {name!r} skipped after a timeout on: {text!r}")
                continue
            try:
                out.append(self._call(fn, req, [i])[0])
            except cf.TimeoutError:
                self.poisoned = True
                out.append(FAILED)
                logs.append(f"reward {name!r} timed out after {self.timeout_s}s on: {text!r}")
            except Exception as e1:  # noqa: BLE001
                out.append(FAILED)
                logs.append(f"reward {name!r} raised {type(e1).__name__}: "
                            f"{one_line(str(e1), 200)} on: {text!r}")
        return out

    def score(self, req: ScoreRequest) -> tuple[ScoreResult, bool]:
        """(result, poisoned). Rewards are the weighted sum over functions, per completion; each
        function's value is in the breakdown under its name, `total` is the weighted sum."""
        n = len(req.completions)
        totals, failed = [0.0] * n, [False] * n
        logs: list[str] = []
        breakdowns: list[dict[str, float]] = [{} for _ in range(n)]
        for name, fn, weight in self.functions:
            for i, res in enumerate(self._score_fn(name, fn, req, logs)):
                failed[i] |= res is FAILED
                if res is FAILED:
                    breakdowns[i][name] = 0.0
                if not isinstance(res, dict):  # None: not applicable, it adds nothing
                    continue
                totals[i] += weight * res["total"]
                breakdowns[i][name] = res["total"]
                breakdowns[i].update({k: v for k, v in res.items() if k != "total"})  # its own parts
        if self.judge is not None:
            for b, res in zip(breakdowns, self._score_fn(self.judge_name, self.judge, req, [])):
                if isinstance(res, dict) and len(res) > 1:  # a breakdown: its verdict is one of its parts
                    b.update({k: v for k, v in res.items() if k != "total"})
                elif isinstance(res, dict):  # a plain reward: its score is the verdict, under its name
                    b[self.judge_name] = res["total"]
        for b, total in zip(breakdowns, totals):
            b["total"] = total
        result = ScoreResult(totals, breakdowns, failures=sum(failed), failure_log=logs, failed=failed)
        return result, self.poisoned


class Failed:
    """The mark of a completion whose reward failed (distinct from None, "not applicable")."""

    def __repr__(self) -> str:
        return "FAILED"


FAILED = Failed()


def _head(completion: Any) -> str:
    """The first 120 characters of a completion's text, for a failure's one-line record."""
    return str(completion)[:120]


class RewardPool:
    """Fans a batch out to the reward actors of an ActorGroup and gathers the scores in order."""

    def __init__(self, group: ActorGroup, timeout_s: float, num_functions: int,
                 recovering: Callable[[RoleFailure], AbstractContextManager] | None = None) -> None:
        self.group, self.timeout_s, self.num_functions = group, timeout_s, num_functions
        self.recovering = recovering or (lambda failure: nullcontext())
        self.total_failures = 0

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Fail early, with the reason, when the cluster cannot schedule the reward actors."""
        refs = self.group.call("ready")
        ready, _ = self.group.backend.wait(refs, timeout=timeout_s)
        if len(ready) < len(refs):
            import ray

            raise RuntimeError(
                f"only {len(ready)} of {len(refs)} reward actors started within {timeout_s:.0f}s; the "
                f"cluster has {ray.available_resources()} free: lower reward.num_cpus or reward.num_actors"
            )

    def score(self, req: ScoreRequest) -> ScoreResult:
        n = len(req.completions)
        k = max(1, min(len(self.group), n))
        bounds = [(i * n // k, (i + 1) * n // k) for i in range(k)]
        shards = [ScoreRequest(req.prompts[a:b], req.completions[a:b],
                               {c: v[a:b] for c, v in req.columns.items()},
                               req.completion_ids[a:b] if req.completion_ids else None, req.step)
                  for a, b in bounds]
        refs = self.group.call_each("score", [(s,) for s in shards])
        # The actor enforces the per-call timeout itself; this outer bound catches an actor that is
        # itself stuck (e.g. a reward holding the GIL), with room for every function and its retries.
        bound = self.timeout_s * (self.num_functions * 2 + 1) + 10
        ready, _ = self.group.backend.wait(refs, timeout=bound)
        result = ScoreResult([], [])
        for i, (ref, shard) in enumerate(zip(refs, shards)):
            res = self._shard(i, ref, ref in ready, shard, bound)
            result.rewards += res.rewards
            result.breakdowns += res.breakdowns
            result.failures += res.failures
            result.failure_log += res.failure_log
            result.failed += res.failed
        self.total_failures += result.failures
        return result

    def _shard(self, i: int, ref: Any, done: bool, shard: ScoreRequest, bound: float) -> ScoreResult:
        """Actor i's scores of `shard`. An actor that died or is stuck is replaced and its replacement
        scores the shard again: reward functions are deterministic, so the run gets the numbers the lost
        actor would have given, and a completion fails only for its own sake (its scoring raises, returns
        a bad value, or hangs; then the actor, left with a running thread, is replaced too). Lost twice,
        the shard scores 0, every completion failed."""
        for attempt in range(2):
            answer, why = self._answer(ref, done)
            if answer is not None:
                res, poisoned = answer
                if poisoned:
                    self._replace(i, "was left with a hung reward call")
                return res
            self._replace(i, why)
            if attempt == 0:
                log.warning("reward actor %d %s; its replacement scores the shard again", i, why)
                ref = self.group.backend.call(self.group.actors[i], "score", shard)
                done = bool(self.group.backend.wait([ref], timeout=bound)[0])
        n = len(shard.completions)
        logs = [f"reward actor {i} {why}, and again on its replacement; scoring 0: {c[:120]!r}"
                for c in shard.completions]
        return ScoreResult([0.0] * n, [{} for _ in range(n)], n, logs, [True] * n)

    def _replace(self, i: int, why: str) -> None:
        """A new actor i, counted as a recovery; it waits for room when its node was lost (the cluster's
        node wait, as placement does), so its first call's deadline is the scoring's own."""
        with self.recovering(RoleFailure("reward", i, None, why)):
            wait = self.group.placement_timeout_s
            cause = self.group.start_again(i, wait)
            if cause is not None and cause.startswith("no answer"):
                raise PlacementTimeout(f"reward actor {i} could not be placed again within {wait:.0f}s "
                                       "(cluster.node_wait_s)")
            if cause is not None:
                raise RoleFailure("reward", i, None, cause)

    def _answer(self, ref: Any, done: bool) -> tuple[tuple[ScoreResult, bool] | None, str]:
        """(result, poisoned) of a call that came back, or None and what happened to the actor."""
        if not done:
            return None, "did not answer in time"
        try:
            return self.group.get(ref), ""
        except Exception as e:  # noqa: BLE001 - the actor is gone (RewardActor.score catches user code)
            return None, f"died ({one_line(str(e), 200)})"

    def shutdown(self) -> None:
        self.group.shutdown()

"""Harnesses: an agent written against the OpenAI client, played on the worker against its gateway.

A harness is `async def harness(client, row) -> float | dict`: it gets an `openai.AsyncOpenAI` client
already bound to the gateway and to its own session, and one row of the task; it returns the episode's
reward (or a dict holding `reward` and any metrics). Many run at once on the gateway's loop (at most
`concurrency`), each within `timeout_s`; while they run, the worker's thread steps the engine for them.
A harness that raises or runs out of time is that episode's failure (counted, its error kept), never
the worker's.
"""

from __future__ import annotations

import asyncio
import importlib
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from actors.worker.gateway.server import Gateway
from actors.worker.sessions import Call, session_samples
from contracts.types import Episode, Sample

Harness = Callable[[Any, dict], Awaitable[float | dict]]


@dataclass
class Played:
    """One harness run: its session's recorded calls, its reward and metrics, or why it failed."""

    session: str
    row_index: int
    calls: list[Call] = field(default_factory=list)
    reward: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    messages: list[dict] = field(default_factory=list)  # the session's last request and its answer
    limited: bool = False  # it asked for more calls than a session may make (truncated)


def load_harness(path: str) -> Harness:
    """`package.module:function` (an async function of (client, row))."""
    module, _, name = path.partition(":")
    if not module or not name:
        raise ValueError(f"a harness is 'package.module:function', not {path!r}")
    fn = getattr(importlib.import_module(module), name, None)
    if fn is None or not asyncio.iscoroutinefunction(fn):
        raise ValueError(f"{path}: not an async function (async def {name}(client, row) -> float | dict)")
    return fn


def play(gateway: Gateway, stepper: Any, harness: Harness, rows: list[dict], n: int, timeout_s: float,
         concurrency: int, prefix: str, lockstep: bool = False) -> list[Played]:
    """n sessions of each row, played by `harness` through the gateway while this thread steps the
    engine; in row order, each row's n sessions together. `lockstep`: the engine steps only when every
    running harness waits on it (`Bridge`), and harnesses start in order as earlier ones end: with
    per-request seeds, a deterministic harness's sessions are the same in every run."""
    played = [Played(f"{prefix}-{i}-{j}", i) for i, _ in enumerate(rows) for j in range(n)]
    bridge = gateway.bridge
    for p in played:
        gateway.open_session(p.session)
    bridge.lockstep = lockstep
    try:
        done = asyncio.run_coroutine_threadsafe(
            _all(gateway, harness, rows, played, timeout_s, concurrency), gateway.loop)
        while not done.done():
            bridge.pump(stepper)
        done.result()
    finally:
        bridge.lockstep = False
        while bridge.pump(stepper, wait_s=0.0):  # what a harness cut by its timeout left in the engine
            pass
        bridge.take_landed()
        for p in played:
            p.calls, p.messages, p.limited = gateway.take(p.session)
    return played


async def _all(gateway: Gateway, harness: Harness, rows: list[dict], played: list[Played], timeout_s: float,
               concurrency: int) -> None:
    """Every session, at most `concurrency` at once; the next starts, in order, as one ends."""
    queue = iter(played)
    tasks: list[asyncio.Task] = []

    def start(ended: str | None = None) -> None:
        p = next(queue, None)
        if p is None:
            if ended is not None:
                gateway.bridge.end(ended)
            return
        gateway.bridge.start(p.session, ended)
        tasks.append(asyncio.ensure_future(session(gateway, harness, rows[p.row_index], p, timeout_s, start)))

    for _ in range(min(concurrency, len(played))):
        start()
    while not all(t.done() for t in tasks) or len(tasks) < len(played):
        await asyncio.gather(*tasks)


async def session(gateway: Gateway, harness: Harness, row: dict, p: Played, timeout_s: float,
                  ended: Callable[..., None]) -> None:
    """One harness run of `row` as session `p` (its result, or its failure, in `p`); `ended(ended=...)`
    once it is over, whatever happened, before its client is closed. (The time limit counts the waits for
    the engine too: other harnesses' calls in lock step, a stream's due point.)"""
    client = None
    t = time.perf_counter()
    try:
        import openai

        client = openai.AsyncOpenAI(base_url=gateway.base_url(p.session), api_key=gateway.token,
                                    max_retries=0, timeout=timeout_s)
        out = await asyncio.wait_for(harness(client, dict(row)), timeout_s)
        p.reward, p.metrics = _reward(out)
    except TimeoutError:
        p.error = f"timed out after {timeout_s:g}s"
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the session itself is cut (a stream stopped)
        p.error = f"CancelledError raised by the harness\n{traceback.format_exc(limit=3)}"
    except Exception as e:  # noqa: BLE001 - the harness's own failure: this episode's
        p.error = f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
    finally:
        p.seconds = time.perf_counter() - t
        ended(ended=p.session)
        if client is not None:
            await client.close()


class LiveSessions:
    """Harness sessions in a worker's sample stream (`actors.worker.sample_stream`): each started when the
    stream starts its sample, the engine stepped in lock step with them, each handed back as a sample
    when its harness returns. Held at a due point, the calls in the engine finish on the policy served
    and later calls wait for the next; a session may so span versions, each token tagged with its own."""

    def __init__(self, gateway: Gateway, stepper: Any, harness: Harness, timeout_s: float,
                 decode: Callable[[list[int]], str], version: Callable[[], int], prefix: str = "") -> None:
        self.gateway, self.stepper, self.harness, self.timeout_s = gateway, stepper, harness, timeout_s
        self.decode, self.version, self.prefix = decode, version, prefix
        self.played: dict[str, Played] = {}
        self.futures: dict[str, Any] = {}  # per session: its run on the loop (to cut it)
        self.tasks: dict[str, asyncio.Task] = {}  # per session that started running there
        self.held = False
        gateway.bridge.lockstep = True

    def start(self, key: str, row: dict) -> None:
        """Session `key` of `row` starts (the engine waits for its first call before its next step)."""
        p = self.played[key] = Played(self.prefix + key, 0)
        self.gateway.open_session(p.session)
        self.gateway.bridge.start(p.session)
        self.futures[key] = asyncio.run_coroutine_threadsafe(self._run(key, row, p), self.gateway.loop)

    async def _run(self, key: str, row: dict, p: Played) -> None:
        self.tasks[key] = asyncio.current_task()
        bridge = self.gateway.bridge
        await session(self.gateway, self.harness, row, p, self.timeout_s, lambda ended: bridge.end(ended))

    def step(self) -> tuple[bool, int, list[tuple[str, Sample]]]:
        """One engine step when every live session waits on it: (whether the engine stepped, the requests
        running in that step, the sessions that had ended when it could, in start order, as samples)."""
        bridge = self.gateway.bridge
        bridge.pump(self.stepper, hold=self.held)
        done = []
        for name in bridge.take_landed():
            key = name.removeprefix(self.prefix)
            p = self.played.pop(key, None)
            if p is None:
                continue
            self.futures.pop(key, None)
            self.tasks.pop(key, None)
            p.calls, p.messages, p.limited = self.gateway.take(name)
            done.append((key, episode_sample(p, self.decode, self.version())))
        return bridge.stepped, bridge.running, done

    def hold(self) -> None:
        """A due point: the calls in the engine finish on the policy it serves; later ones wait."""
        self.held = True
        while self.gateway.bridge.pump(self.stepper, wait_s=0.0, hold=True):
            pass

    def resume(self) -> None:
        """The next policy is in: waiting calls go to the engine."""
        self.held = False

    def clear(self) -> int:
        """Cut every session, waiting until each has stopped (the engine emptied); returns how many were
        in flight."""
        cut = len(self.played)
        for fut in self.futures.values():  # one not yet running never starts
            fut.cancel()
        self.gateway.run(_cut(list(self.tasks.values())))
        self.stepper.clear()
        self.gateway.bridge.clear()
        for p in self.played.values():
            self.gateway.take(p.session)
        self.played, self.futures, self.tasks = {}, {}, {}
        self.gateway.bridge.lockstep = False
        return cut


async def _cut(tasks: list[asyncio.Task]) -> None:
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def episode_sample(p: Played, decode: Callable[[list[int]], str], version: int) -> Sample:
    """A played session as the one sample type: its calls joined (`session_samples`; a session cut in
    pieces keeps the later ones as `parts`), its reward and metrics as the episode's score (`total`,
    `success`: the harness's, else reward >= 1), `turns` its calls. A harness that failed, or made no call,
    is an episode with its `error` (its reward is not trained on)."""
    pieces = session_samples(p.calls, decode)
    error = p.error or (None if pieces else "the harness made no model call")
    reward = p.reward if p.reward is not None and error is None else 0.0
    score = {**p.metrics, "total": reward,
             "success": float(p.metrics.get("success", reward >= 1.0)) if error is None else 0.0,
             "turns": float(len(p.calls))}
    episode = Episode(messages=p.messages, turns=[{"finish": c.finish_reason, "tokens": len(c.sampled_ids)}
                                                  for c in p.calls],
                      score=score, truncated=p.limited, error=error)
    if not pieces:
        return Sample([], [], [], "", "error", version, loss_mask=[], episode=episode)
    head = pieces[0]
    head.parts, head.episode = pieces[1:] or None, episode
    head.finish_reason = "length" if p.limited else "stop"
    return head


def _reward(out: Any) -> tuple[float, dict[str, float]]:
    """A harness's return: a number, or a dict with `reward` (and metrics beside it)."""
    if isinstance(out, dict):
        if "reward" not in out:
            raise ValueError(f"a harness's dict must hold 'reward' (got keys {sorted(out)})")
        metrics = {k: float(v) for k, v in out.items() if k != "reward"}
        return float(out["reward"]), metrics
    if isinstance(out, bool) or not isinstance(out, int | float):
        raise ValueError(f"a harness returns a number or a dict with 'reward', not {type(out).__name__}")
    return float(out), {}

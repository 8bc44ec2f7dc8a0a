"""Between the gateway's event loop and the thread that steps the worker's engine: requests one way,
samples back, and when the engine may step.

The engine has one owner, the worker's thread: the loop queues each request's samples here and awaits
them; the thread adds what is queued, takes an engine step and hands back what finished (`pump`).

In lock step (while a run plays its harnesses) the engine steps only when every live harness waits on
it, and takes what waits in the order of its keys (session, call, sample): which requests share each
engine step then depends on what the harnesses asked, not on when their HTTP requests arrived, and the
sampled tokens and their logprobs are the same in every run. A harness that works between its calls
holds the engine meanwhile (until it calls, returns, or runs out of time). Held (a stream's due point),
the engine finishes the calls it has, on the policy it serves, and takes no new one.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from actors.worker.gateway.render import Sampled


class Bridge:
    def __init__(self, version: Callable[[], int]) -> None:
        self.version = version  # the policy version the engine serves (a sample records the one it had)
        self.waiting: list[tuple[str, list[int], Any, str | None]] = []
        self.futures: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future, str | None]] = {}
        self.added: dict[str, int] = {}  # per request in the engine: the version it was added under
        self.cond = threading.Condition()
        self.lockstep = False
        self.ready = True  # lock step: whether the last pump found every live harness waiting on it
        self.alive: set[str] = set()  # lock step: the sessions whose harness runs
        self.ended: list[str] = []  # lock step: sessions whose harness returned since the last ready pump
        # lock step: the sessions that had ended when a pump found every live harness waiting (a set that
        # does not depend on timing), in key order, until taken; and whether the last pump stepped the
        # engine, with how many requests were running in the step
        self.landed: list[str] = []
        self.stepped, self.running = False, 0
        self.outstanding: dict[str, int] = {}  # per session: its samples not yet back
        self.engine_s = 0.0  # seconds in engine steps (a benchmark's split of the time)
        self._keys = itertools.count()

    async def sample(self, prompt_ids: list[int], params: list[Any], session: str | None = None,
                     call: int = 0) -> list[tuple[Sampled, int]]:
        """One sample per `params`, from the engine, each with the version that sampled it (called on the
        loop)."""
        loop = asyncio.get_running_loop()
        futures, keys = [], []
        with self.cond:
            for i, p in enumerate(params):
                key = f"{session}/{call:04d}/{i:03d}" if session is not None else f"gw{next(self._keys)}"
                fut = loop.create_future()
                self.futures[key] = (loop, fut, session)
                self.waiting.append((key, list(prompt_ids), p, session))
                self.outstanding[session] = self.outstanding.get(session, 0) + 1
                futures.append(fut)
                keys.append(key)
            self.cond.notify_all()
        try:
            return list(await asyncio.gather(*futures))
        except asyncio.CancelledError:  # the client went away: what it asked for is not sampled
            with self.cond:
                self.waiting = [w for w in self.waiting if w[0] not in keys]
                for key in keys:  # (one already in the engine finishes there, and is dropped)
                    if self.futures.pop(key, None) is not None:
                        self.outstanding[session] = self.outstanding.get(session, 1) - 1
                self.cond.notify_all()
            raise

    def start(self, session: str, ended: str | None = None) -> None:
        """Lock step: `session`'s harness starts (in place of `ended`'s, in one move: never a moment in
        which the engine could step without the newcomer)."""
        with self.cond:
            self.alive.add(session)
            self.alive.discard(ended)
            self.cond.notify_all()

    def end(self, session: str) -> None:
        """Lock step: `session`'s harness returned (or failed, or was cut)."""
        with self.cond:
            self.alive.discard(session)
            self.ended.append(session)
            self.cond.notify_all()

    def _ready(self) -> bool:
        """Lock step: every live harness waits on the engine (none is between its calls)."""
        return all(self.outstanding.get(s, 0) > 0 for s in self.alive)

    def pump(self, stepper: Any, wait_s: float = 0.01, hold: bool = False) -> int:
        """On the engine's thread: add what is waiting (not when `hold`), take one engine step, hand back
        what finished; returns the requests in flight after it. In lock step `ready` says whether every
        live harness was waiting (else nothing was added)."""
        self.stepped = False
        with self.cond:
            if self.lockstep:
                self.ready = self.cond.wait_for(self._ready, timeout=wait_s)
                if self.ready:
                    self.landed += sorted(self.ended)
                    self.ended = []
                elif not hold:
                    return stepper.running()  # a harness is between its calls
            elif not self.waiting and not stepper.running():
                self.cond.wait(timeout=wait_s)
            taken = []
            if not hold:
                taken, self.waiting = sorted(self.waiting, key=lambda w: w[0]), []
        version = self.version()
        for key, ids, params, _ in taken:
            stepper.add_params(key, ids, params)
            self.added[key] = version
        self.running = stepper.running()
        if self.running:
            self.stepped = True
            t = time.perf_counter()
            finished = stepper.step()
            self.engine_s += time.perf_counter() - t
            for key, ids, logprobs, finish in finished:
                with self.cond:
                    version = self.added.pop(key, None)
                    entry = self.futures.pop(key, None)
                    if entry is None:  # its client went away while it was in the engine
                        continue
                    loop, fut, session = entry
                    # the session is between calls from here on (its harness may have gone: timed out)
                    self.outstanding[session] = self.outstanding.get(session, 1) - 1
                loop.call_soon_threadsafe(_resolve, fut, ((ids, logprobs, finish), version))
        return stepper.running()

    def take_landed(self) -> list[str]:
        with self.cond:
            landed, self.landed = self.landed, []
        return landed

    def forget(self, session: str) -> None:
        """A finished session's counts (its name may come back: a later step's, or an eval's)."""
        with self.cond:
            self.outstanding.pop(session, None)

    def clear(self) -> None:
        """Forget every request and session (the engine's requests are aborted by its owner)."""
        with self.cond:
            for loop, fut, _ in self.futures.values():
                loop.call_soon_threadsafe(fut.cancel)
            self.waiting, self.futures, self.added = [], {}, {}
            self.alive, self.ended, self.landed, self.outstanding = set(), [], [], {}
            self.cond.notify_all()


def _resolve(fut: asyncio.Future, value: Any) -> None:
    if not fut.done():  # the client may have gone
        fut.set_result(value)

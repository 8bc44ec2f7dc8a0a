"""Where each step's batch comes from: sampled when the step asks (`train.max_staleness` 0, synchronous),
or sampled during the previous step's update (`train.max_staleness` 1, one-step-off).

One-step-off: once step s has scored its samples, the batch of step s + 1 is drawn and launched on the
workers, which sample it with the policy before step s's update while the learner runs that update. It
is collected after the update and before the push, so a push never lands inside a generation and every
sample of step s + 1 is exactly one version behind the learner. The batch waiting for its step is part
of a checkpoint (`state_dict`): a resumed run trains on the samples the first run would have.

The version check is the pipeline's too: a batch sampled more than `train.max_staleness` versions behind
the learner (or ahead of it) is never trained on; the run stops with a `PushError` instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from actors.errors import PushError
from actors.generation import Generation
from actors.driver.step_data import generation_from_state, generation_state


@dataclass
class Batch:
    """A step's rows and what the workers sampled for them."""

    rows: list[dict]
    gen: Generation
    seconds: float  # from launch to collected (for one-step-off: mostly hidden behind the update)


class Pipeline:
    """The batches of a run's steps, in order (see the module docstring).

    `draw()` gives the next step's rows; `launch(rows, step)` starts sampling them with the step's seed
    and returns what `finish` waits for."""

    def __init__(self, max_staleness: int, last_step: int, draw: Callable[[], list[dict]],
                 launch: Callable[[list[dict], int], Any], finish: Callable[[Any], Generation]) -> None:
        self.max_staleness, self.last_step = max_staleness, last_step
        self.draw, self.launch, self.finish = draw, launch, finish
        self.next: Batch | None = None  # sampled ahead, waiting for its step
        self._pending: tuple[list[dict], Any, float] | None = None

    def take(self, step: int) -> Batch:
        """Step `step`'s batch: the one sampled ahead, or sampled now."""
        if self.next is not None:
            batch, self.next = self.next, None
            return batch
        rows, t = self.draw(), time.perf_counter()
        return Batch(rows, self.finish(self.launch(rows, step)), time.perf_counter() - t)

    def check(self, gen: Generation, version: int) -> None:
        """The run never trains on samples older than train.max_staleness policy versions."""
        for worker, v in enumerate(gen.versions):
            if not 0 <= version - v <= self.max_staleness:
                raise PushError(f"worker {worker} generated with version {v}; the learner is at "
                                f"{version} and train.max_staleness is {self.max_staleness}")

    # What only a streamed pipeline does (actors.driver.pipelines.streamed); nothing here.
    def serve_until(self, refs: list) -> None:
        pass

    def publish(self, step: int, version: int, update_ref: Any) -> None:
        pass

    def metrics(self, step: int, gen: Generation, version: int, dropped: int) -> dict[str, float]:
        return {}

    def stop(self) -> int:
        return 0

    def start_next(self, step: int) -> None:
        """One-step-off: draw and launch step `step` + 1's batch now, before step `step`'s update."""
        if self.max_staleness and step < self.last_step:
            rows = self.draw()
            self._pending = (rows, self.launch(rows, step + 1), time.perf_counter())

    def land(self) -> None:
        """Collect the batch started ahead (after the update, before the push)."""
        if self._pending is not None:
            (rows, pending, t), self._pending = self._pending, None
            gen = self.finish(pending)
            self.next = Batch(rows, gen, time.perf_counter() - t)

    def state_dict(self) -> dict | None:
        return generation_state(self.next.rows, self.next.gen) if self.next else None

    def load_state_dict(self, state: dict | None) -> None:
        """The checkpoint's waiting batch (or none); a launch in flight is dropped."""
        self._pending = None
        self.next = Batch(*generation_from_state(state), 0.0) if state else None

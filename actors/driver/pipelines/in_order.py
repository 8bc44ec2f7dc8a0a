"""The pipelines whose batches come in step order from one sampling call: `sync` and `one_step_off`.

`sync`: a step's batch is sampled when the step asks, with the policy the learner has; after the update
the new policy is pushed to every worker (one object reference, verified by fingerprint and probe).

`one_step_off`: once step s has scored its samples, the batch of step s + 1 is drawn and launched on the
workers, which sample it with the policy before step s's update while the learner runs that update. It
is collected after the update and before the push, so a push never lands inside a generation and every
sample of step s + 1 is exactly one version behind the learner. The batch waiting for its step is part
of a checkpoint (`state_dict`): a resumed run trains on the samples the first run would have.

Both check versions: a batch sampled more than their bound behind the learner (0 or 1), or ahead of it,
is never trained on; the run stops with a `PushError` instead. A rollout worker lost here is replaced
inside the sampling call (`Roles.finish`) or the push (`Roles.load`); what reaches `recover` is the
learner's failure, or a replacement that did not start: the learner group is rebuilt.
"""

from __future__ import annotations

import time

from actors.driver.pipelines.base import Batch, Delivered, Sampler, learned, push_row
from actors.driver.roles import PendingGeneration
from actors.driver.step_data import generation_from_state, generation_state
from actors.errors import PushError, RoleFailure
from contracts.types import TrainBatch


class SyncPipeline:
    bound = 0  # versions a sample may be behind the learner

    def __init__(self, sampler: Sampler, last_step: int) -> None:
        self.sampler, self.roles, self.last_step = sampler, sampler.roles, last_step

    def next_batch(self, step: int, version: int) -> Batch:
        rows, t = self.sampler.draw(), time.perf_counter()
        batch = Batch(rows, self.sampler.finish(self.sampler.launch(rows, step)), time.perf_counter() - t)
        return self._checked(batch, version)

    def _checked(self, batch: Batch, version: int) -> Batch:
        """The run never trains on samples older than the bound."""
        for worker, v in enumerate(batch.gen.versions):
            if not 0 <= version - v <= self.bound:
                raise PushError(f"worker {worker} generated with version {v}; the learner is at {version} "
                                f"and this pipeline trains at most {self.bound} version(s) behind")
        return batch

    def deliver(self, step: int, batch: TrainBatch | None) -> Delivered:
        t = time.perf_counter()
        learn = self.roles.learn(batch) if batch is not None else None
        return self._push(learn, {"learn": time.perf_counter() - t})

    def _push(self, learn: dict | None, times: dict[str, float]) -> Delivered:
        """The new policy on every worker; after a skipped update (or none) the workers keep theirs."""
        t = time.perf_counter()
        if not learned(learn):
            return Delivered(learn, None, {}, {**times, "sync": time.perf_counter() - t})
        served = self.roles.push()
        row = {**push_row(served), "probe_gap_max": served.probe_gap or 0.0}
        return Delivered(learn, served.version, row, {**times, "sync": time.perf_counter() - t})

    def recover(self, failure: RoleFailure) -> str:
        self.roles.rebuild_learners()
        return "learner"

    def slots(self) -> float:
        """Sequences a worker can have in flight: its share of a step's batch."""
        c = self.sampler.cfg
        return c.train.prompts_per_step * c.rollout.n / c.rollout.num_workers

    def settle(self) -> None:
        pass  # nothing samples between steps that the next step does not wait for

    def stop(self) -> None:
        pass

    def state_dict(self) -> dict | None:
        return None

    def load_state_dict(self, state: dict | None) -> None:
        pass


class OneStepOffPipeline(SyncPipeline):
    bound = 1

    def __init__(self, sampler: Sampler, last_step: int) -> None:
        super().__init__(sampler, last_step)
        self.next: Batch | None = None  # sampled ahead, waiting for its step

    def next_batch(self, step: int, version: int) -> Batch:
        """The batch sampled during the previous update, or (the first step, after a resume without one)
        sampled now."""
        if self.next is None:
            return super().next_batch(step, version)
        batch, self.next = self.next, None
        return self._checked(batch, version)

    def deliver(self, step: int, batch: TrainBatch | None) -> Delivered:
        """Step `step` + 1's batch is launched first (sampled with the policy before this update), the
        update runs meanwhile, and the batch is collected before the push: pushes land between batches."""
        ahead = None
        if step < self.last_step:
            rows = self.sampler.draw()
            ahead = (rows, self.sampler.launch(rows, step + 1), time.perf_counter())
        t = time.perf_counter()
        learn = self.roles.learn(batch) if batch is not None else None
        times = {"learn": time.perf_counter() - t}
        if ahead is not None:
            self.next = self._land(*ahead)
        return self._push(learn, times)

    def _land(self, rows: list[dict], pending: PendingGeneration, since: float) -> Batch:
        return Batch(rows, self.sampler.finish(pending), time.perf_counter() - since)

    def state_dict(self) -> dict | None:
        return generation_state(self.next.rows, self.next.gen) if self.next else None

    def load_state_dict(self, state: dict | None) -> None:
        """The checkpoint's waiting batch (or none)."""
        self.next = Batch(*generation_from_state(state), 0.0) if state else None

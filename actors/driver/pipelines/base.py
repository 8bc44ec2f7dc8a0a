"""What every pipeline is: two calls a step (`next_batch`, `deliver`), built from a `Sampler`.

`next_batch(step, version)` gives the step's rows and what was sampled for them, with a mask of the
samples too old to train on; `deliver(step, batch)` runs the learner's update on the training batch and
hands the new policy to the workers the pipeline's way (pushed at once, or exported and loaded by each
worker at its due point), sampling ahead meanwhile if the pipeline does. The coordinator never asks
which pipeline it runs: what differs is inside the three implementations (`actors.driver.pipelines`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from actors.driver.prompts import PromptOrder
from actors.driver.roles import PendingGeneration, Roles
from actors.driver.workloads import Completions
from actors.errors import RoleFailure
from actors.generation import Generation
from configs.root import Config
from contracts.types import TrainBatch


@dataclass
class Batch:
    """A step's rows and what the workers sampled for them."""

    rows: list[dict]
    gen: Generation
    seconds: float  # waited for it (one-step-off: mostly hidden behind the previous update)
    stale: list[bool] | None = None  # per sample: too old to train on (streamed); None: every one is fresh


@dataclass
class Delivered:
    """What a step's update made: the learner's metrics (None: nothing was learned), the new policy's
    version (None: the workers keep the one they serve), and the pipeline's part of the step's row."""

    learn: dict[str, float] | None
    version: int | None
    row: dict[str, Any] = field(default_factory=dict)  # fingerprint, push size, the stream's numbers
    times: dict[str, float] = field(default_factory=dict)  # learn, sync


class Sampler:
    """What a pipeline samples with: the prompt order, the workload (what a row becomes, the worker method
    and its arguments) and the roles that sample. `tokenizer` and `prompts` are set once the run's set-up
    has them (the difficulty filter replaces `prompts`)."""

    def __init__(self, cfg: Config, work: Completions, roles: Roles) -> None:
        self.cfg, self.work, self.roles = cfg, work, roles
        self.tokenizer: Any = None
        self.prompts: PromptOrder | None = None

    def draw(self) -> list[dict]:
        """The next step's rows."""
        return self.prompts.next_rows()

    def items(self, rows: list[dict]) -> list:
        """What the worker method takes for `rows` (rendered prompts, or episode rows)."""
        return self.work.items(self.tokenizer, rows)

    def launch(self, rows: list[dict], step: int) -> PendingGeneration:
        """Start sampling step `step`'s batch; its sampling seed is a function of the step."""
        c = self.cfg
        return self.roles.launch(self.items(rows), self.work.method, **self.work.sampling(),
                                 seed=c.train.seed * 100_003 + step, offsets=c.algorithm.loss.dart)

    def finish(self, pending: PendingGeneration) -> Generation:
        return self.roles.finish(pending)

    def sample(self, items: list, **sampling: Any) -> Generation:
        """Samples of `items` outside the step (eval, difficulty filter), split over the workers."""
        return self.roles.sample(items, self.work.method, **self.work.sampling(), **sampling)

    def stream_args(self) -> dict[str, Any]:
        """What each worker's sample stream is started with (`RolloutWorker.stream_start`)."""
        c = self.cfg
        return {"n": c.rollout.n, "max_in_flight": c.train.pipeline.max_in_flight,
                "max_staleness": c.train.pipeline.max_staleness, "seed": c.train.seed,
                "drain_every": c.train.checkpoint_every, "offsets": c.algorithm.loss.dart,
                **self.work.sampling()}


class Pipeline(Protocol):
    def next_batch(self, step: int, version: int) -> Batch:
        """Step `step`'s batch; `version` is the learner's before the step's update."""

    def deliver(self, step: int, batch: TrainBatch | None) -> Delivered:
        """The update on `batch` (None: nothing to learn) and its policy handed to the workers."""

    def recover(self, failure: RoleFailure) -> str:
        """Start again what `failure` broke, before the run goes back to its newest checkpoint; returns the
        role started again."""

    def stop(self) -> None:
        """Nothing in flight on the workers (before an eval, a rollback, the end)."""

    def settle(self) -> None:
        """Wait until the workers finish what they sample on their own after a step (benchmarks measure
        one side at a time); the pipeline goes on afterwards."""

    def slots(self) -> float:
        """Sequences a worker can have in flight (an engine's occupancy is measured against it)."""

    def state_dict(self) -> dict | None:
        """What a checkpoint holds of the pipeline (a batch sampled ahead, rows drawn ahead)."""

    def load_state_dict(self, state: dict | None) -> None: ...


def push_row(served: Any) -> dict[str, Any]:
    """A push's or an export's receipt as part of the step's row."""
    return {"weights_fingerprint": served.fingerprint, "push_bytes": served.nbytes}


def learned(learn: dict | None) -> bool:
    """An update made a new policy (not none, not skipped for a non-finite loss or gradient)."""
    return learn is not None and not learn["update_skipped"]

"""`train.pipeline`: where a step's batch comes from, one section per kind, each with only its own keys.

Written as a kind's name (`pipeline: sync`) or as a section with its settings:

    train:
      pipeline: {kind: stream, max_staleness: 2, max_in_flight: 16}

A setting a kind does not have cannot be written (a bound on `sync`, slots on `one_step_off`): the
section refuses the key, and the message lists the keys the kind has.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from configs.base import Section

DEFAULT_SLOTS = 64  # a streamed worker's samples in flight, unless set


class SyncPipeline(Section):
    """Sampled when the step asks, by the policy the learner has: generate, learn, push, in turn."""

    kind: Literal["sync"] = "sync"
    """The section's kind (a bare name stands for the kind with its defaults)."""
    # Not settings (a key of theirs is refused): the versions a sample may lag the learner (on-policy:
    # none), and whether sampling and learning run at the same time (they take turns here).
    max_staleness: ClassVar[int] = 0
    overlaps: ClassVar[bool] = False


class OneStepOffPipeline(Section):
    """Step k+1's batch is sampled while the learner trains on step k's, one version behind."""

    kind: Literal["one_step_off"] = "one_step_off"
    """The section's kind (a bare name stands for the kind with its defaults)."""
    max_staleness: ClassVar[int] = 1  # every sample exactly one version behind
    overlaps: ClassVar[bool] = True


class StreamPipeline(Section):
    """Every worker keeps `max_in_flight` samples in flight and refills a slot the moment one finishes;
    weights are taken at fixed points of its sample stream (a sample may span versions, each token
    keeps its own), bit-reproducibly (docs/algorithm.md#the-streamed-pipeline)."""

    kind: Literal["stream"] = "stream"
    """The section's kind (a bare name stands for the kind with its defaults)."""
    max_staleness: int = Field(0, ge=0, le=8)
    """The bound k in policy versions between the learner and the policy that sampled a token it trains
    on (0 streams within a step only)."""
    max_in_flight: int = Field(DEFAULT_SLOTS, ge=1, le=4096)
    """Samples (completions or episodes) each worker keeps in flight; a group starts only when all its
    n samples fit (one group at least)."""
    overlaps: ClassVar[bool] = True


PipelineConfig = Annotated[SyncPipeline | OneStepOffPipeline | StreamPipeline, Field(discriminator="kind")]
KINDS = ("sync", "one_step_off", "stream")


def upgrade(train: dict, rollout: dict) -> tuple[dict, dict]:
    """`train` and `rollout` with the keys the pipeline section replaced moved into it, so configs and run
    folders written before still load and mean what they meant: the older `train.max_staleness` (0 sync,
    1 one-step-off, or a streamed run's bound) and `rollout.max_in_flight` (a streamed run's slots; it
    did nothing otherwise). A bound above 1 outside a stream was refused then and is now, with the
    spelling to write."""
    k, slots = train.get("max_staleness"), rollout.get("max_in_flight")
    if k is None and slots is None:
        return train, rollout
    train = {key: v for key, v in train.items() if key != "max_staleness"}
    rollout = {key: v for key, v in rollout.items() if key != "max_in_flight"}
    pipeline = train.get("pipeline")
    kind = pipeline.get("kind") if isinstance(pipeline, dict) else pipeline
    if kind != "stream" and k is not None:
        if k not in (0, 1):
            raise ValueError(f"train.max_staleness {k}: only a streamed pipeline trains more than one "
                             f"version behind; write train.pipeline: {{kind: stream, max_staleness: {k}}}")
        kind = pipeline = "one_step_off" if k == 1 else "sync"  # the older bound chose between the two
    if kind == "stream":
        given = {"max_staleness": k, "max_in_flight": slots}
        section = pipeline if isinstance(pipeline, dict) else {"kind": "stream"}
        train["pipeline"] = {**section, **{key: v for key, v in given.items() if v is not None}}
        return train, rollout
    # rollout.max_in_flight did nothing outside a stream: it is dropped
    train["pipeline"] = pipeline if pipeline is not None else "sync"
    return train, rollout

"""Where each step's batch comes from and where its new weights go: `sync`, `one_step_off`, `stream`.

One protocol (`base.Pipeline`: `next_batch`, `deliver`, `recover`, and a checkpoint's part), three
implementations, picked here by `train.pipeline` and nowhere else.
"""

from __future__ import annotations

from actors.driver.pipelines.base import Batch, Delivered, Pipeline, Sampler
from actors.driver.pipelines.in_order import OneStepOffPipeline, SyncPipeline
from actors.driver.pipelines.streamed import StreamedPipeline
from configs.root import Config

__all__ = ["Batch", "Delivered", "Pipeline", "Sampler", "make_pipeline"]


def make_pipeline(cfg: Config, sampler: Sampler) -> Pipeline:
    """The pipeline `train.pipeline` names, built from the sampler and its own settings."""
    t, p = cfg.train, cfg.train.pipeline
    build = {
        "sync": lambda: SyncPipeline(sampler, t.steps),
        "one_step_off": lambda: OneStepOffPipeline(sampler, t.steps),
        "stream": lambda: StreamedPipeline(sampler, t.steps, p.max_staleness, p.max_in_flight,
                                           cfg.rollout.call_timeout_s, t.checkpoint_every),
    }
    return build[p.kind]()

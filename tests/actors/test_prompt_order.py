"""The prompt order's state is a snapshot: a run stopped inside a step checkpoints the state from before
that step's draw, and its resume must draw the same prompts again (the draw had emptied the saved queues
in place: the resumed run skipped them)."""

from __future__ import annotations

import json

import pytest

from actors.driver.prompts import PromptOrder
from configs.train import TrainConfig

ROWS = [{"category": c, "kind": k} for c, k in zip("aabbbc" * 3, "xyxyzz" * 3)]


@pytest.mark.parametrize("sampling", ["shuffle", "balanced", "adaptive"])
def test_a_state_taken_before_a_draw_draws_the_same_rows_again(sampling):
    cfg = TrainConfig(prompts_per_step=4, sampling=sampling, adaptive_by="kind")
    stream = PromptOrder(ROWS, cfg, seed=3)
    stream.next_rows()  # the queues exist and are partly drawn
    state = stream.state_dict()
    saved = json.dumps(state)
    drawn = [stream.next_rows() for _ in range(3)]
    assert json.dumps(state) == saved  # a snapshot: the draws after it did not change it
    again = PromptOrder(ROWS, cfg, seed=99)
    again.load_state_dict(json.loads(saved))
    assert [again.next_rows() for _ in range(3)] == drawn

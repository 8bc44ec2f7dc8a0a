"""A run whose episodes an OpenAI harness plays (`env: {kind: harness}`) through the coordinator's one step:
the real rollout worker (its vLLM engine and gateway, in this process), the real learner, the real warm-up
on the harness's scripted conversations, the fund-assistant harness (tasks/fund_assistant/harness.py)."""

from __future__ import annotations

import json
import shutil

import pytest

from actors.driver.coordinator import Coordinator
from actors.worker.rollout_worker import RolloutWorker
from cluster.backend import LocalBackend
from configs.loader import load_config
from observe.schema import lookup
from tests.actors.test_coordinator import RecordingLearner

pytestmark = pytest.mark.deepspeed

SMALL = ["task.options.n_episodes=40", "rollout.n=4", "train.prompts_per_step=4", "train.eval_limit=4",
         "learner.micro_batch_size=16", "train.warmup.steps=2", "train.warmup.batch_size=4",
         "train.warmup.drill.steps=1", "train.warmup.drill.rows=20", "train.warmup.drill.batch_size=4",
         "train.warmup.drill.mix=1", "train.progress=false", "train.checkpoint_every=2",
         "train.pipeline=one_step_off", "rollout.kv_cache_memory_bytes=134217728"]


def _run(run_dir, steps: int, resume: str | None = None) -> tuple[Coordinator, list[dict], dict | None]:
    cfg = load_config("tiny-cpu-agent-openai", [*SMALL, f"train.steps={steps}"])
    roles = {"rollout": RolloutWorker, "learner": RecordingLearner}
    coord = Coordinator(cfg, str(run_dir), backend=LocalBackend(), roles=roles)
    table = None
    try:
        coord.setup(resume=resume)
        rows = [coord.train_step() for _ in range(steps)]
        if resume is None:
            table = coord.evaluate("after")
    finally:
        coord.shutdown()
    return coord, rows, table


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    RecordingLearner.batches = []
    coord, rows, table = _run(tmp_path_factory.mktemp("harness") / "run", 3)
    return coord, rows, table, list(RecordingLearner.batches)


def test_harness_rows_follow_the_schema_one_step_off(harness_run):
    _, rows, _, _ = harness_run
    for r in rows:
        for key in r:
            lookup(key)
        assert r["calls_per_episode"] >= 1 and r["harness_failures"] == 0 and r["reward_failures"] == 0
        assert r["frac_split"] == 0.0  # the tools template keeps every earlier turn as a prefix
    assert [r["policy_version"] for r in rows] == [1, 2, 3]
    assert [r["policy_version_lag_max"] for r in rows] == [0.0, 1.0, 1.0]


def test_the_learner_gets_each_session_as_recorded_with_its_tool_results_masked(harness_run):
    coord, _, _, batches = harness_run
    tok = coord.tokenizer
    assert len(batches) == 3
    for b in batches:
        assert b.loss_mask is not None and len(b.completion_ids) == 16  # 4 rows x 4 sessions, none cut
        for prompt, ids, mask in zip(b.prompt_ids, b.completion_ids, b.loss_mask):
            text = tok.decode(prompt)
            assert text.startswith("<|im_start|>system\nYou are a fund assistant.") and "<tools>" in text
            assert len(mask) == len(ids) and mask[0] == 1
            observed = tok.decode([t for t, m in zip(ids, mask) if not m])
            if 0 in mask:  # what came between two calls: a tool's result, never the policy's own tokens
                assert "<tool_response>" in observed


def test_the_eval_plays_the_harness_once_per_held_out_row_and_keeps_each_conversation(harness_run):
    coord, _, table, _ = harness_run
    assert table["n"] == 4 and 0.0 <= table["success_rate"] <= 1.0 and "tools" in table
    lines = (coord.run.dir / "episodes_after.jsonl").read_text().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    assert first["messages"][0]["role"] == "system" and first["messages"][-1]["role"] == "assistant"


def test_a_resumed_harness_run_trains_on_the_batch_its_checkpoint_held(harness_run, tmp_path):
    first, _, _, _ = harness_run
    run_dir = tmp_path / "run"
    shutil.copytree(first.run.dir, run_dir)
    held = json.loads((run_dir / "checkpoints" / "step_00002" / "coordinator.json").read_text())["pipeline"]
    session = held["groups"][0][0]
    assert session["episode"]["score"]["turns"] >= 1  # the one-step-off batch of step 3, sessions and all
    RecordingLearner.batches = []
    _, rows, _ = _run(run_dir, 1, resume=str(run_dir / "checkpoints" / "step_00002"))
    assert rows[0]["policy_version"] == 3
    (batch,) = RecordingLearner.batches
    assert batch.prompt_ids[0] == session["prompt_ids"] and batch.completion_ids[0] == session["token_ids"]


def test_a_run_whose_harness_always_fails_stops_naming_it(tmp_path):
    cfg = load_config("tiny-cpu-agent-openai", [*SMALL, "train.warmup.enabled=false", "train.steps=5",
                                                "train.max_failed_steps=2", "train.eval_before=false",
                                                "env.harness=tests.actors.harnesses:always_fails"])
    coord = Coordinator(cfg, str(tmp_path / "run"), backend=LocalBackend(),
                        roles={"rollout": RolloutWorker, "learner": RecordingLearner})
    try:
        coord.setup()
        with pytest.raises(Exception, match=r"tests.actors.harnesses:always_fails: KeyError: 'question'"):
            for _ in range(cfg.train.steps):
                coord.train_step()
    finally:
        coord.shutdown()
    assert coord.step == 2  # stopped after the second step in a row in which every episode failed

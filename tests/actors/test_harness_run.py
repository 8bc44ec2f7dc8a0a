"""Runs whose episodes an OpenAI harness plays (`env: {kind: harness}`) through the coordinator's one step:
the real rollout worker (its vLLM engine and gateway), the real learner, the real warm-up on the harness's
scripted conversations, the fund-assistant harness (tasks/fund_assistant/harness.py).

Each run's roles live in one fresh process of its own (a vLLM engine and a DeepSpeed learner set up
torch.distributed for their process, and a second pair in the same process trips over the first's)."""

from __future__ import annotations

import json
import multiprocessing
import shutil
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from observe.schema import lookup, reproducible

pytestmark = pytest.mark.deepspeed

SMALL = ["task.options.n_episodes=40", "rollout.n=4", "train.prompts_per_step=4", "train.eval_limit=4",
         "learner.micro_batch_size=16", "train.warmup.steps=2", "train.warmup.batch_size=4",
         "train.warmup.drill.steps=1", "train.warmup.drill.rows=20", "train.warmup.drill.batch_size=4",
         "train.warmup.drill.mix=1", "train.progress=false", "train.checkpoint_every=2",
         "train.pipeline=one_step_off", "rollout.kv_cache_memory_bytes=134217728"]
STREAM = ["train.warmup.enabled=false", "train.pipeline=stream", "train.pipeline.max_staleness=1",
          "train.pipeline.max_in_flight=8", "train.eval_before=false", "train.eval_after=false",
          "rollout.max_tokens=24"]


def run(run_dir: str, overrides: list[str], steps: int, resume: str | None = None,
        evaluate: bool = False) -> dict:
    """`steps` steps of a run (from `resume`'s checkpoint), in this process: its rows, the after-eval
    table, the learner's batches, its tokenizer, or the error that stopped it and the step it stopped at."""
    from actors.driver.coordinator import Coordinator
    from actors.worker.rollout_worker import RolloutWorker
    from cluster.backend import LocalBackend
    from configs.loader import load_config
    from tests.actors.test_coordinator import RecordingLearner

    RecordingLearner.batches = []
    cfg = load_config("tiny-cpu-agent-openai", [*SMALL, *overrides])
    coord = Coordinator(cfg, run_dir, backend=LocalBackend(),
                        roles={"rollout": RolloutWorker, "learner": RecordingLearner})
    out: dict = {"rows": [], "table": None, "error": None}
    try:
        coord.setup(resume=resume)
        for _ in range(steps):
            out["rows"].append(coord.train_step())
        if evaluate:
            out["table"] = coord.evaluate("after")
    except Exception as e:  # noqa: BLE001 - the tests look at how a run stopped
        out["error"] = f"{type(e).__name__}: {e}"
    finally:
        coord.shutdown()
    return {**out, "step": coord.step, "batches": list(RecordingLearner.batches),
            "tokenizer": coord.tokenizer_dir, "run_dir": str(coord.run.dir)}


def fresh(*args, **kwargs) -> dict:
    """`run` in a fresh process of its own."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(run, *args, **kwargs).result()


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory):
    out = fresh(str(tmp_path_factory.mktemp("harness") / "run"), ["train.steps=3"], 3, evaluate=True)
    assert out["error"] is None, out["error"]
    return out


def test_harness_rows_follow_the_schema_one_step_off(harness_run):
    rows = harness_run["rows"]
    for r in rows:
        for key in r:
            lookup(key)
        assert r["calls_per_episode"] >= 1 and r["harness_failures"] == 0 and r["reward_failures"] == 0
        assert r["frac_split"] == 0.0  # the tools template keeps every earlier turn as a prefix
    assert [r["policy_version"] for r in rows] == [1, 2, 3]
    assert [r["policy_version_lag_max"] for r in rows] == [0.0, 1.0, 1.0]


def test_the_learner_gets_each_session_as_recorded_with_its_tool_results_masked(harness_run):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(harness_run["tokenizer"])
    batches = harness_run["batches"]
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
    table = harness_run["table"]
    assert table["n"] == 4 and 0.0 <= table["success_rate"] <= 1.0 and "tools" in table
    lines = (Path(harness_run["run_dir"]) / "episodes_after.jsonl").read_text().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    assert first["messages"][0]["role"] == "system" and first["messages"][-1]["role"] == "assistant"


@pytest.mark.slow
def test_a_resumed_harness_run_trains_on_the_batch_its_checkpoint_held(harness_run, tmp_path):
    run_dir = tmp_path / "run"
    shutil.copytree(harness_run["run_dir"], run_dir)
    held = json.loads((run_dir / "checkpoints" / "step_00002" / "coordinator.json").read_text())["pipeline"]
    session = held["groups"][0][0]
    assert session["episode"]["score"]["turns"] >= 1  # the one-step-off batch of step 3, sessions and all
    out = fresh(str(run_dir), ["train.steps=3"], 1, resume=str(run_dir / "checkpoints" / "step_00002"))
    assert out["error"] is None, out["error"]
    assert out["rows"][0]["policy_version"] == 3
    (batch,) = out["batches"]
    assert batch.prompt_ids[0] == session["prompt_ids"] and batch.completion_ids[0] == session["token_ids"]


def test_a_run_whose_harness_always_fails_stops_naming_it(tmp_path):
    broken = ["train.warmup.enabled=false", "train.steps=5", "train.eval_before=false",
              "train.max_failed_steps=2", "env.harness=tests.actors.harnesses:always_fails"]
    out = fresh(str(tmp_path / "run"), broken, 5)
    assert "tests.actors.harnesses:always_fails: KeyError: 'question'" in out["error"]
    assert out["step"] == 2  # stopped after the second step in a row in which every episode failed


@pytest.mark.slow
def test_streamed_harness_sessions_span_versions_within_the_bound_and_resume_exactly(tmp_path):
    """`stream` with k = 1 and 8 sessions in flight (half a batch): sessions start as others end, calls in
    the engine at a due point finish on the policy they started on, every policy token within one version
    of the learner; a run resumed from its step-2 checkpoint gives the straight run's rows."""
    straight = fresh(str(tmp_path / "run"), [*STREAM, "train.steps=4"], 4)
    assert straight["error"] is None, straight["error"]
    rows = straight["rows"]
    assert [r["policy_version"] for r in rows] == [1, 2, 3, 4]
    assert max(r["version_lag_max"] for r in rows) <= 1 and rows[0]["version_lag_max"] == 0
    assert all(r["calls_per_episode"] >= 1 and r["harness_failures"] == 0 for r in rows)
    shutil.copytree(tmp_path / "run", tmp_path / "again")
    resumed = fresh(str(tmp_path / "again"), [*STREAM, "train.steps=4"], 2,
                    resume=str(tmp_path / "again" / "checkpoints" / "step_00002"))
    assert resumed["error"] is None, resumed["error"]
    for a, b in zip(rows[2:], resumed["rows"], strict=True):
        assert reproducible(a) == reproducible(b)

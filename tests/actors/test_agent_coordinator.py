"""Runs of agent episodes (`env.enabled`) on the coordinator's one step, with in-process roles: the real
learner, the task's real environment, the real warm-up on scripted trajectories; only the rollout worker is
scripted
(tests/actors/scripted_worker.py: it plays the task's scripted turns instead of sampling them)."""

from __future__ import annotations

import json
import shutil

import pytest

from actors.driver.coordinator import Coordinator
from cluster.backend import LocalBackend
from configs.loader import load_config
from observe.schema import lookup, reproducible
from tasks.base import load_task
from tasks.fund_assistant.trajectories import touched_by
from tests.actors.scripted_worker import scripted_worker
from tests.actors.test_coordinator import RecordingLearner

pytestmark = pytest.mark.deepspeed

AGENT = ["task.options.n_episodes=40", "rollout.n=4", "train.prompts_per_step=4", "train.eval_limit=6",
         "learner.micro_batch_size=16", "train.warmup.steps=3", "train.warmup.batch_size=4",
         "train.progress=false",
         "train.steps=3", "train.checkpoint_every=2", "env.max_turns=5", "train.warmup.drill.steps=2",
         "train.warmup.drill.rows=20", "train.warmup.drill.batch_size=4", "train.warmup.drill.mix=1"]


def _script(task):
    """Eval: the correct trajectory. RL steps: every other episode the flawed one (balance-conditional
    requests acted on unchecked) or a malformed turn instead of the first call: half of each group fails."""
    flawed = load_task(task.cfg.model_copy(update={"options": {**task.cfg.options,
                                                               "episode_flaw": "no_balance_check",
                                                             "episode_flaw_rate": 1.0}}))

    def script(row: dict, i: int, stage) -> list[str]:
        right = task.episode_script(row)
        if stage == "eval" or i % 2 == 0:
            return right
        return (flawed.episode_script(row) if touched_by(row) == "no_balance_check"
                else ["not json", *right[1:]])

    return script


def agent_run(tmp_path) -> tuple[Coordinator, list[dict], list]:
    RecordingLearner.batches = []
    cfg = load_config("tiny-cpu-agent", [*AGENT, "task.options.episode_flaw=none"])
    task = load_task(cfg.task)
    roles = {"rollout": scripted_worker([], episode_script=_script(task)), "learner": RecordingLearner}
    coord = Coordinator(cfg, str(tmp_path / "run"), backend=LocalBackend(), roles=roles)
    try:
        coord.setup()
        coord.evaluate("before")
        rows = [coord.train_step() for _ in range(cfg.train.steps)]
        coord.evaluate("after")
        coord.finish()
    finally:
        coord.shutdown()
    return coord, rows, list(RecordingLearner.batches)


def test_episode_rows_follow_the_schema_and_carry_the_episode_metrics(agent):
    _, rows, _ = agent
    for r in rows:
        for key in r:
            lookup(key)
        assert 0.0 < r["obs_token_frac"] < 1.0 and r["tool_calls_per_episode"] > 0
        # Half the episodes are flawed or start malformed: success and reward have spread.
        assert r["success_rate"] == 0.5 and r["frac_reward_zero_std"] == 0.0
        assert r["tool_error_rate"] >= 0.0 and r["episode_turns_mean"] >= 2.0 and "loss" in r


def test_the_learner_gets_whole_episodes_with_the_observations_masked(agent):
    coord, _, batches = agent
    tok = coord.tokenizer
    assert len(batches) == 3
    for b in batches:
        assert b.loss_mask is not None and len(b.loss_mask) == len(b.completion_ids)
        for ids, mask in zip(b.completion_ids, b.loss_mask):
            observed = tok.decode([t for t, m in zip(ids, mask) if not m])
            said = tok.decode([t for t, m in zip(ids, mask) if m])
            assert '"final_answer"' in said or "not json" in said
            assert "<|im_start|>tool" in observed and "<|im_start|>tool" not in said


def test_the_warm_up_plays_the_scripted_trajectories(agent):
    coord, _, _ = agent
    assert coord.info["warmup_steps"] == 3 and coord.info["warmup_rows"] == len(coord.train_rows)
    # the entity drill came first
    assert coord.info["drill_steps"] == 2 and 0 < coord.info["drill_rows"] <= 20
    assert set(coord.info["placement"]) == {"learner", "rollout"}  # the environment scores: no reward actors
    assert all("expected" in r for r in coord.train_rows)  # episode rows, not single-turn ones


def test_the_episode_eval_is_written_with_every_episode(agent):
    coord, _, _ = agent
    ev = json.loads((coord.run.dir / "eval.json").read_text())
    assert ev["before"]["success_rate"] == 1.0 and ev["after"]["n"] == 6
    assert set(ev["after"]["per_category"]) == {r["category"] for r in coord.eval_rows[:6]}
    played = [json.loads(x) for x in (coord.run.dir / "episodes_after.jsonl").read_text().splitlines()]
    assert len(played) == 6 and all(p["score"]["success"] == 1.0 for p in played)
    assert [m["role"] for m in played[0]["messages"][:3]] == ["system", "user", "assistant"]
    table = (coord.run.dir / "eval_table.md").read_text()
    assert "| success rate | 100.0% | 100.0% |" in table and "| turns mean |" in table


# ---- everything the single-turn loop has, on episodes ---------------------------------------------------
PIPELINED = [*AGENT, "task.options.episode_flaw=none", "train.steps=4", "train.pipeline=one_step_off",
             "algorithm.loss.dart=true", "algorithm.difficulty.enabled=true",
             "algorithm.difficulty.num_samples=2",
             "train.sampling=adaptive", "train.adaptive_by=kind"]


def _pipelined_script(task):
    """The difficulty filter sees market orders always right and settled withdrawals always wrong (a
    malformed first turn); RL steps and the eval as `_script`."""
    rl = _script(task)

    def script(row: dict, i: int, stage) -> list[str]:
        if stage == "difficulty" and row["kind"] != "balance_withdraw":
            right = task.episode_script(row)
            return right if row["kind"] == "market_order" else ["not json", *right[1:]]
        return rl(row, i, stage)

    return script


def _pipelined(run_dir, steps: int, resume: str | None = None) -> tuple[Coordinator, list[dict]]:
    cfg = load_config("tiny-cpu-agent", PIPELINED)
    roles = {"rollout": scripted_worker([], episode_script=_pipelined_script(load_task(cfg.task))),
             "learner": RecordingLearner}
    coord = Coordinator(cfg, str(run_dir), backend=LocalBackend(), roles=roles)
    try:
        coord.setup(resume=resume)
        rows = [coord.train_step() for _ in range(steps)]
    finally:
        coord.shutdown()
    return coord, rows


@pytest.fixture(scope="module")
def pipelined(tmp_path_factory):
    RecordingLearner.batches = []
    coord, rows = _pipelined(tmp_path_factory.mktemp("pipelined") / "run", 4)
    return coord, rows, list(RecordingLearner.batches)


def test_episodes_run_one_step_off_one_version_behind(pipelined):
    _, rows, _ = pipelined
    assert [r["policy_version_lag_max"] for r in rows] == [0.0, 1.0, 1.0, 1.0]
    assert [r["policy_version"] for r in rows] == [1, 2, 3, 4]


def test_the_difficulty_filter_and_adaptive_sampling_work_on_episode_groups(pipelined):
    coord, rows, _ = pipelined
    # the all-right and the all-wrong kinds are dropped
    assert {r["kind"] for r in coord.train_rows} == {"balance_withdraw"}
    assert coord.info["difficulty_kept"] == len(coord.train_rows) < coord.info["difficulty_from"]
    assert all("sampling_weight/balance_withdraw" in r for r in rows)


def test_dart_weighs_the_thought_and_action_of_every_assistant_turn(pipelined):
    coord, _, batches = pipelined
    tok, checked = coord.tokenizer, 0
    for b in batches:
        assert b.token_weights is not None
        for ids, mask, weights in zip(b.completion_ids, b.loss_mask, b.token_weights):
            assert len(weights) == len(ids) and all(w == 0.0 for w, m in zip(weights, mask) if not m)
            turns, turn = [], []  # the weights of each run of the policy's own tokens
            for w, m in zip(weights, mask):
                if m:
                    turn.append(w)
                elif turn:
                    turns, turn = [*turns, turn], []
            turns += [turn] if turn else []
            if "not json" in tok.decode([t for t, m in zip(ids, mask) if m]):
                continue
            assert len(turns) >= 2 and all(0.3 in t and 0.7 in t for t in turns), turns
            checked += 1
    assert checked >= len(batches)


def test_a_resumed_episode_run_trains_on_the_batch_its_checkpoint_held(pipelined, tmp_path):
    first, straight, _ = pipelined
    run_dir = tmp_path / "run"
    shutil.copytree(first.run.dir, run_dir)
    held = json.loads((run_dir / "checkpoints" / "step_00002" / "coordinator.json").read_text())["pipeline"]
    assert held and held["groups"][0][0]["episode"]["messages"]  # the one-step-off batch of step 3
    _, resumed = _pipelined(run_dir, 2, resume=str(run_dir / "checkpoints" / "step_00002"))
    for a, b in zip(straight[2:], resumed, strict=True):
        assert reproducible(a) == reproducible(b)


def test_streamed_episodes_on_the_real_engine(tmp_path, ray_local):
    """Agent episodes in train.pipeline stream with the real vLLM worker and learner (Ray actors):
    every episode is played turn by turn to its end, its policy tokens carry versions within k = 1."""
    cfg = load_config("tiny-cpu-agent", [*AGENT, "train.warmup.enabled=false", "train.steps=3",
                                         "train.pipeline=stream", "train.pipeline.max_staleness=1",
                                         "train.pipeline.max_in_flight=6", "train.eval_before=false",
                                         "train.checkpoint_every=2"])
    coord = Coordinator(cfg, str(tmp_path / "run"))
    try:
        coord.setup()
        rows = [coord.train_step() for _ in range(cfg.train.steps)]
        table = coord.evaluate("after")
    finally:
        coord.shutdown()
    assert [r["policy_version"] for r in rows] == [1, 2, 3]
    assert [r["version_lag_max"] for r in rows] == [0, 1, 1]
    assert all(r["episode_turns_mean"] >= 1 and r["stale_dropped"] == 0 for r in rows)
    assert table["n"] == 6

"""A run of agent episodes (`env.enabled`) with in-process roles: the real learner, the task's real
environment, the real warm-up on scripted trajectories; only the rollout worker is scripted
(tests/actors/scripted_worker.py: it plays the task's scripted turns instead of sampling them)."""

from __future__ import annotations

import json

import pytest

from actors.agent_coordinator import AgentCoordinator
from cluster.backend import LocalBackend
from configs.loader import load_config
from observe.schema import lookup
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


def agent_run(tmp_path) -> tuple[AgentCoordinator, list[dict], list]:
    RecordingLearner.batches = []
    cfg = load_config("tiny-cpu-agent", [*AGENT, "task.options.episode_flaw=none"])
    task = load_task(cfg.task)
    roles = {"rollout": scripted_worker([], episode_script=_script(task)), "learner": RecordingLearner}
    coord = AgentCoordinator(cfg, str(tmp_path / "run"), backend=LocalBackend(), roles=roles)
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

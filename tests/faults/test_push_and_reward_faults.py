"""A push that does not take, and reward functions that hang: real Ray actors, real engines."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from actors.driver.coordinator import Coordinator
from actors.errors import PushError
from cluster.backend import RayBackend
from configs.loader import load_config
from contracts.types import ScoreRequest
from tests.actors.pools import start_pool
from tests.actors.test_rollout_worker import NoopReloadWorker
from tests.faults.harness import SETTINGS

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.faults]


@pytest.mark.vllm
@pytest.mark.deepspeed
def test_a_reload_that_does_nothing_fails_the_first_push(tmp_path, ray_local):
    cfg = load_config("tiny-cpu", [*SETTINGS, "train.steps=3", f"train.run_dir={tmp_path}"])
    coord = Coordinator(cfg, str(tmp_path / "noop"), roles={"rollout": NoopReloadWorker})
    try:
        coord.setup()
        with pytest.raises(PushError, match="did not take"):
            coord.train_step()
    finally:
        coord.shutdown()
    assert coord.version == 0  # no worker claims a policy it does not serve


def hang_on_word(prompts, completions, **columns):
    if any("hang" in c for c in completions):
        time.sleep(60)
    return [1.0] * len(completions)


def test_a_hanging_reward_scores_its_shard_as_failed_and_its_actor_is_replaced(ray_local):
    pool = start_pool([("tests.faults.test_push_and_reward_faults:hang_on_word", 1.0)], RayBackend(),
                      num_actors=2, timeout_s=1.0)
    req = ScoreRequest(prompts=["p"] * 4, completions=["a", "b", "hang", "d"], columns={})
    t = time.monotonic()
    res = pool.score(req)
    assert time.monotonic() - t < 20
    assert res.rewards == [1.0, 1.0, 0.0, 0.0] and res.failed == [False, False, True, True]
    assert res.failures == 2 and all("timed out" in x for x in res.failure_log)
    assert pool.group.restarts == [0, 1]
    again = pool.score(ScoreRequest(prompts=["p"] * 4, completions=list("abcd"), columns={}))
    assert again.rewards == [1.0] * 4 and again.failures == 0  # the replacement answers
    pool.shutdown()


def die_once_on_word(prompts, completions, **columns):
    """kill -9 of the reward actor's own process the first time it sees "die" (a flag file, named by
    the column `flag`, says it happened); deterministic scores otherwise."""
    flag = Path(columns["flag"][0])
    if any("die" in c for c in completions) and not flag.exists():
        flag.write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return [float(len(c)) for c in completions]


def test_a_killed_reward_actors_shard_is_scored_again_by_its_replacement(ray_local, tmp_path):
    pool = start_pool([("tests.faults.test_push_and_reward_faults:die_once_on_word", 1.0)], RayBackend(),
                      num_actors=2, timeout_s=10.0)
    completions = ["a", "bb", "die", "dddd"]
    res = pool.score(ScoreRequest(prompts=["p"] * 4, completions=completions,
                                  columns={"flag": [str(tmp_path / "killed")] * 4}))
    assert (tmp_path / "killed").exists()  # the actor scoring the second shard really died
    assert res.rewards == [1.0, 2.0, 3.0, 4.0] and res.failures == 0 and not any(res.failed)
    assert pool.group.restarts == [0, 1]
    pool.shutdown()

"""RewardPool: scores in order, isolates a crashing reward, survives a hanging one — nothing dropped."""

from __future__ import annotations

import json
import time

import pytest

from cluster.backend import LocalBackend, RayBackend
from contracts.types import ScoreRequest
from rewards.registry import register_reward
from tests.actors.pools import start_pool

GOOD = json.dumps({"thought": "先查余额", "action": {"tool": "check_balance", "params": {}},
                   "plan": ["查余额"]}, ensure_ascii=False)
LABEL = GOOD


@register_reward("test_crash_on_boom", overwrite=True)
def crash_on_boom(prompts, completions, **columns):
    if any("boom" in c for c in completions):
        raise RuntimeError("reward bug")
    return [0.5] * len(completions)


@register_reward("test_hang", overwrite=True)
def hang(prompts, completions, **columns):
    if any("hang" in c for c in completions):
        time.sleep(30)
    return [1.0] * len(completions)


def _req(completions):
    n = len(completions)
    return ScoreRequest(prompts=["查一下我的余额"] * n, completions=completions,
                        columns={"solution": [LABEL] * n, "category": ["balance"] * n})


def test_scores_in_order_with_weights_and_breakdown():
    pool = start_pool([("gt", 1.0), ("rule", 0.5)], LocalBackend(), num_actors=3)
    res = pool.score(_req([GOOD, "not json", GOOD, "{}"]))
    assert res.rewards == pytest.approx([1.0 + 0.5 * 1.0, 0.0, 1.5, 0.0])
    assert res.failures == 0
    assert res.breakdowns[0]["tool_correct"] == 1.0 and res.breakdowns[1]["parsed"] == 0.0


def test_crashing_reward_scores_only_the_bad_completion_zero():
    pool = start_pool([("test_crash_on_boom", 1.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req(["ok", "boom", "fine"]))
    assert res.rewards == [0.5, 0.0, 0.5]
    assert res.failures == 1 and "boom" in res.failure_log[0] and "RuntimeError" in res.failure_log[0]
    assert pool.total_failures == 1


def test_hanging_reward_times_out_and_actor_is_replaced():
    pool = start_pool([("test_hang", 1.0)], LocalBackend(), num_actors=2, timeout_s=0.5)
    first = pool.group.actors[1]
    t = time.perf_counter()
    res = pool.score(_req(["a", "b", "hang", "d"]))
    assert time.perf_counter() - t < 10
    assert res.rewards == [1.0, 1.0, 0.0, 0.0]  # the hung shard (2 completions) scores 0, counted
    assert res.failures == 2 and all("timed out" in x for x in res.failure_log)
    assert pool.group.actors[1] is not first and pool.group.restarts == [0, 1]


def test_unknown_reward_name_fails_before_scoring():
    from rewards.registry import RewardNotFoundError

    with pytest.raises(RewardNotFoundError):
        start_pool([("no_such_reward", 1.0)], LocalBackend())


@pytest.mark.ray
def test_ray_pool_scores_concurrently_and_recovers(ray_local):
    pool = start_pool([("gt", 1.0), ("tests.actors.test_reward_pool:crash_on_boom", 1.0)], RayBackend(),
                      num_actors=2, timeout_s=5)
    res = pool.score(_req([GOOD, "boom", GOOD, GOOD]))
    assert res.rewards == pytest.approx([1.5, 0.0, 1.5, 1.5])
    assert res.failures == 1


@register_reward("test_not_applicable", overwrite=True)
def not_applicable(prompts, completions, **columns):
    return [None if "skip" in c else 1.0 for c in completions]


def test_none_means_not_applicable_not_failure():
    pool = start_pool([("test_not_applicable", 1.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req(["a", "skip", "b"]))
    assert res.rewards == [1.0, 0.0, 1.0] and res.failures == 0


def test_the_judge_is_scored_for_metrics_without_weight():
    pool = start_pool([("rule", 1.0)], LocalBackend(), num_actors=1, judge="gt")
    res = pool.score(_req([GOOD, "not json"]))
    assert res.rewards == [1.0, 0.0]  # the rule reward only
    assert [b["tool_correct"] for b in res.breakdowns] == [1.0, 0.0]  # the judge's verdict, for metrics
    assert "gt" not in res.breakdowns[0] and res.failures == 0


def test_a_breakdown_is_computed_once_per_completion():
    calls = []

    class Counted:
        def breakdown(self, prompts, completions, **columns):
            calls.append(len(completions))
            return [{"total": 0.25, "part": 1.0} for _ in completions]

        def __call__(self, prompts, completions, **columns):
            raise AssertionError("the pool uses the breakdown's total")

    register_reward("test_counted", overwrite=True)(Counted)
    pool = start_pool([("test_counted", 2.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req(["a", "b", "c"]))
    assert res.rewards == [0.5, 0.5, 0.5] and calls == [3]
    # `total` is the weighted sum the run trains on (2.0 x 0.25), the function's own total under its name
    assert res.breakdowns[0] == {"test_counted": 0.25, "total": 0.5, "part": 1.0}

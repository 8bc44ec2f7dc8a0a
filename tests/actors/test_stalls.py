"""A run that cannot learn stops (exit 1 through RunStopped) with the cause, instead of ending "done":
the real coordinator, learner and reward actors in this process, the worker scripted."""

from __future__ import annotations

import json

import pytest

from actors.errors import RunStopped
from rewards.registry import register_reward
from tests.actors.test_coordinator import _answers, _run

pytestmark = pytest.mark.deepspeed


@register_reward("test_stalls_broken", overwrite=True)
def broken(prompts, completions, **columns):
    """A reward written for TRL's message completions, given strings: it fails on every completion."""
    return [float(c[0]["content"] == "x") for c in completions]


@register_reward("test_stalls_constant", overwrite=True)
def constant(prompts, completions, **columns):
    return [0.5] * len(completions)


def _script(row, n, stage):
    a = _answers(row)
    return [(a["right"], a["wrong"])[i % 2] for i in range(n)]


def _events(tmp_path) -> list[dict]:
    return [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]


def test_every_reward_failing_stops_the_run_naming_the_reward_and_its_error(tmp_path):
    with pytest.raises(RunStopped) as info:
        _run(tmp_path, ["reward.functions=[{name: test_stalls_broken}]", "train.max_failed_steps=2"],
             _script, steps=5)
    msg = str(info.value)
    assert "run stopped at step 2" in msg and "every completion's reward failed in 2 steps in a row" in msg
    assert "reward 'test_stalls_broken' raised TypeError" in msg and "string indices" in msg
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2]  # the stopping step's row is kept
    assert [e["reason"] for e in _events(tmp_path) if e["event"] == "no_update"] == [
        "every completion's reward failed"] * 2


def test_no_update_for_max_idle_steps_stops_the_run(tmp_path):
    with pytest.raises(RunStopped, match=r"no update in 3 steps in a row \(train.max_idle_steps=3\): every "
                                         r"group's rewards had zero spread"):
        _run(tmp_path, ["reward.functions=[{name: test_stalls_constant}]", "train.max_idle_steps=3",
                        "algorithm.ngrpo.mode=off"], _script, steps=6)


def test_one_failed_step_does_not_stop_the_run(tmp_path):
    calls = {"n": 0}

    @register_reward("test_stalls_flaky", overwrite=True)
    def flaky(prompts, completions, **columns):  # the service is down for the first call only
        calls["n"] += 1
        if calls["n"] <= 1 + 16:  # step 1's call over its 16 completions, then each completion's retry
            raise ConnectionError("service unavailable")
        return [float("check_balance" in c) for c in completions]

    coord, rows = _run(tmp_path, ["reward.functions=[{name: test_stalls_flaky}]", "train.max_failed_steps=2",
                                  "reward.num_actors=1"], _script, steps=3)
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[0]["reward_failures"] == 16
    assert rows[1]["reward_failures"] == 0

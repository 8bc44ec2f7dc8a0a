"""TRL's reward contract, through the real reward pool: TRL's own reward functions run unchanged."""

from __future__ import annotations

import asyncio

import pytest

from cluster.backend import LocalBackend
from contracts.types import ScoreRequest
from rewards.contract import RewardContractError, checked, needed_columns, reward_kwargs, shaped
from rewards.registry import register_reward
from tests.actors.pools import start_pool

CHAT = [{"role": "user", "content": "What is 1/3 as a fraction?"}]
SEEN: list[dict] = []


@register_reward("test_contract_spy", overwrite=True)
def spy(prompts, completions, completion_ids, trainer_state, log_extra, log_metric, **columns):
    """Reads what TRL gives a reward, the way TRL's rewards do (`completion[0]["content"]`)."""
    SEEN.append({"prompts": prompts, "completions": completions, "ids": completion_ids,
                 "step": trainer_state.global_step, "columns": columns})
    log_metric("seen", len(completions))
    log_extra("level", columns.get("level", []))
    return [1.0 if isinstance(c, list) and c[0]["content"].endswith("3") else 0.0 for c in completions]


@register_reward("test_contract_async", overwrite=True)
async def async_reward(prompts, completions, **kwargs):
    await asyncio.sleep(0)
    return [None if "skip" in c else 0.5 for c in completions]


@register_reward("test_contract_short", overwrite=True)
def short(prompts, completions, **kwargs):
    return [1.0] * (len(completions) - 1)


def _req(prompts, completions, **columns):
    n = len(completions)
    return ScoreRequest(prompts=prompts, completions=completions, columns=columns,
                        completion_ids=[[7, i] for i in range(n)], step=5)


def test_a_conversational_prompt_gives_message_completions_and_every_column():
    SEEN.clear()
    pool = start_pool([("test_contract_spy", 1.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req([CHAT, CHAT], ["it is 1/3", "it is 1/2"], solution=["1/3", "1/3"], level=[1, 2]))
    assert res.rewards == [1.0, 0.0] and res.failures == 0
    seen = SEEN[0]
    assert seen["completions"] == [[{"role": "assistant", "content": "it is 1/3"}],
                                   [{"role": "assistant", "content": "it is 1/2"}]]
    assert seen["prompts"] == [CHAT, CHAT] and seen["ids"] == [[7, 0], [7, 1]] and seen["step"] == 5
    assert seen["columns"] == {"solution": ["1/3", "1/3"], "level": [1, 2]}


def test_a_standard_prompt_gives_string_completions():
    assert shaped("2+2=", "4") == "4"
    assert shaped(CHAT, "4") == [{"role": "assistant", "content": "4"}]
    kw = reward_kwargs(["2+2="], ["4"], None, {"answer": ["4"]})
    assert kw["completions"] == ["4"] and kw["completion_ids"] == [[]] and kw["answer"] == ["4"]


def test_trl_rewards_run_unchanged():
    pytest.importorskip("math_verify")
    from trl.rewards import accuracy_reward, think_format_reward  # noqa: F401 - the real package

    pool = start_pool([("trl.rewards:think_format_reward", 0.5), ("trl.rewards:accuracy_reward", 1.0)],
                      LocalBackend(), num_actors=2)
    completions = ["<think>\nhalf of 2/3\n</think>\nThe answer is $\\boxed{\\frac{1}{3}}$",
                   "The answer is $\\boxed{\\frac{1}{2}}$", "<think>x</think> no idea"]
    res = pool.score(_req([CHAT] * 3, completions, solution=["$\\frac{1}{3}$"] * 3))
    assert res.failures == 0, res.failure_log
    assert res.rewards == pytest.approx([1.5, 0.0, 0.5])
    assert [b["trl.rewards:think_format_reward"] for b in res.breakdowns] == [1.0, 0.0, 1.0]


def test_async_rewards_are_awaited_and_none_is_not_applicable():
    pool = start_pool([("test_contract_async", 1.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req(["p"] * 3, ["a", "skip", "b"]))
    assert res.rewards == [0.5, 0.0, 0.5] and res.failures == 0
    assert "test_contract_async" not in res.breakdowns[1]  # not applicable: no part recorded


def test_a_wrong_length_names_both_lengths_for_every_completion():
    pool = start_pool([("test_contract_short", 1.0)], LocalBackend(), num_actors=1)
    res = pool.score(_req(["p"] * 4, ["a", "b", "c", "d"]))
    assert res.failures == 4 and all(res.failed)
    assert all("returned 3 values for 4 completions" in line for line in res.failure_log), res.failure_log


@pytest.mark.parametrize(("out", "why"), [
    ("1.0", "returned a str"), ({"a": 1}, "returned a dict"), (3.0, "returned a float"),
    ([1.0, "x"], "returned 'x' (str) for completion 1"), ([1.0], "returned 1 values for 2"),
])
def test_checked_refuses_what_is_not_a_list_of_numbers(out, why):
    with pytest.raises(RewardContractError, match=why.replace("(", r"\(").replace(")", r"\)")):
        checked(out, 2)


def test_checked_takes_numpy_and_none():
    np = pytest.importorskip("numpy")
    assert checked(np.array([1, 0]), 2) == [1.0, 0.0]
    assert checked([None, True], 2) == [None, 1.0]


def test_needed_columns_reads_the_signature():
    def f(prompts, completions, solution, level=0, **kw):
        return []

    class C:
        def __call__(self, completions, answer, *, trainer_state=None):
            return []

    assert needed_columns(f) == ["solution"]
    assert needed_columns(C()) == ["answer"]
    assert needed_columns(print) == []

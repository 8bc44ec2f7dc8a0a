"""algo_step: the order of the algorithm, and failed samples left out of their group and the loss."""

from __future__ import annotations

import pytest
import torch

from algo.advantages import group_advantages
from algo.ngrpo_switch import NGRPOSwitch
from algo.step import algo_step
from configs.algorithm import AlgorithmConfig

ALGO = AlgorithmConfig(ngrpo={"mode": "off"}, overlong={"enabled": False})


def _run(rewards, valid=None, algo=ALGO, mode="off"):
    r = torch.tensor(rewards, dtype=torch.float64)
    return algo_step(r, step=1, switch=NGRPOSwitch(mode), algo=algo, lengths=[[5] * r.shape[1]] * r.shape[0],
                     max_len=96, valid=None if valid is None else torch.tensor(valid))


def test_all_valid_is_the_plain_group_advantage():
    out = _run([[1.0, 0.0, 0.5, 0.5], [0.2, 0.2, 0.2, 0.2]])
    assert torch.equal(out.advantages, group_advantages(torch.tensor([[1.0, 0.0, 0.5, 0.5], [0.2] * 4],
                                                                     dtype=torch.float64)))
    assert (out.trained.all() and out.metrics["frac_reward_zero_std"] == 0.5
            and "dropped_groups" not in out.metrics)


def test_a_failed_sample_is_left_out_of_its_group():
    rewards = [[1.0, 0.0, 0.5, 0.0], [0.2, 0.9, 0.2, 0.2]]
    out = _run(rewards, valid=[[True, True, True, False], [True, False, True, True]])
    want0 = group_advantages(torch.tensor([[1.0, 0.0, 0.5]], dtype=torch.float64))[0]
    assert torch.equal(out.advantages[0, :3], want0) and out.advantages[0, 3] == 0
    # Without the failed 0.9 the second group is all 0.2: zero spread, advantage 0, counted as zero-std.
    assert out.advantages[1].abs().sum() == 0 and out.metrics["frac_reward_zero_std"] == 0.5
    assert out.trained.tolist() == [[True, True, True, False], [True, False, True, True]]
    assert out.metrics["reward_mean"] == pytest.approx(sum([1.0, 0.0, 0.5, 0.2, 0.2, 0.2]) / 6)


def test_a_group_with_fewer_than_two_valid_samples_is_dropped():
    out = _run([[1.0, 0.0, 0.5], [0.3, 0.7, 0.1]], valid=[[True, False, False], [True, True, True]])
    assert out.metrics["dropped_groups"] == 1.0 and not out.trained[0].any() and out.trained[1].all()
    assert out.valid_samples == 3 and out.advantages[0].abs().sum() == 0


def test_ngrpo_acts_on_the_valid_samples_of_a_zero_spread_group():
    algo = AlgorithmConfig(ngrpo={"mode": "on"}, overlong={"enabled": False})
    out = _run([[0.8, 0.8, 0.0, 0.8]], valid=[[True, True, False, True]], algo=algo, mode="on")
    want = group_advantages(torch.full((1, 3), 0.8, dtype=torch.float64), ngrpo=True)[0]
    assert torch.equal(out.advantages[0, [0, 1, 3]], want) and out.advantages[0, 2] == 0

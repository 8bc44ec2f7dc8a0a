"""Every learner rank must run the same number of micro-batches (ZeRO's collectives), whatever it skips."""

from __future__ import annotations

import pytest

from configs.algorithm import AlgorithmConfig
from configs.learner import LearnerConfig
from configs.model import ModelConfig
from contracts.types import TrainBatch
from learner.learner import Learner


def _plan(advantages, world, mb, kl=0.0):
    n = len(advantages)
    batch = TrainBatch([[1] * (3 + i % 4) for i in range(n)], [[5] * (1 + i % 7) for i in range(n)],
                       [[0.0] * (1 + i % 7) for i in range(n)], list(advantages))
    algo = AlgorithmConfig.model_validate({"loss": {"kl_coef": kl}})
    plans = []
    for rank in range(world):
        r = Learner("m", "t", ModelConfig(), LearnerConfig(micro_batch_size=mb, world_size=world), algo,
                    rank=rank, world_size=world)
        plans.append(r.plan_micro_batches(batch))
    return plans


@pytest.mark.parametrize("world,mb", [(1, 3), (2, 2), (3, 4), (4, 1)])
def test_equal_counts_and_every_signal_row_once(world, mb):
    adv = [0.0, 1.0, 0.0, -0.5, 0.3, 0.0, 0.0, 2.0, -1.0, 0.0, 0.0]
    plans = _plan(adv, world, mb)
    assert len({len(p) for p in plans}) == 1  # same number of forward/backward calls on every rank
    rows = [i for p in plans for chunk in p for i in chunk]
    assert sorted(rows) == [i for i, a in enumerate(adv) if a != 0.0]  # zero-advantage rows skipped
    assert all(len(chunk) <= mb for p in plans for chunk in p)


def test_all_zero_advantages_still_one_call_per_rank():
    plans = _plan([0.0] * 6, world=2, mb=4)
    assert plans == [[[]], [[]]]


def test_kl_keeps_zero_advantage_rows():
    # With a KL term a zero-advantage sequence still has a gradient (towards the reference).
    plans = _plan([0.0, 1.0, 0.0], world=1, mb=8, kl=0.1)
    assert sorted(i for chunk in plans[0] for i in chunk) == [0, 1, 2]


def test_logprob_gaps_pair_each_row_with_its_own_vllm_logprobs_and_skip_stale_rows():
    import torch

    from contracts.types import TrainBatch
    from learner.micro_batches import logprob_gaps

    # rows 4, 1, 2 of the batch in this micro-batch; row 1 was sampled one version ago (lag 1)
    batch = TrainBatch([[0]] * 5, [[1, 2]] * 5, [[-float(i), -float(i)] for i in range(5)], [0.0] * 5,
                       lags=[0, 1, 0, 0, 0])
    lp = torch.tensor([[-4.0, -4.5], [-9.0, -9.0], [-2.0, -2.0]])  # learner rows for 4, 1, 2
    gaps = logprob_gaps(lp, batch, [4, 1, 2])
    assert [g.tolist() for g in gaps] == [[0.0, 0.5], [0.0, 0.0]]

"""overlong_penalty against the piecewise formula of DAPO's overlong reward shaping."""

import pytest
import torch

from algo.shaping import overlong_penalty


def dapo_reward_shape(length, l_max, l_cache):
    """DAPO's overlong reward shaping, written as its paper states it."""
    if length <= l_max - l_cache:
        return 0
    elif length <= l_max:
        return (l_max - l_cache - length) / l_cache
    else:
        return -1


def test_overlong_penalty_matches_the_paper_formula():
    lengths = list(range(0, 420, 7)) + [299, 300, 301, 349, 350, 351]
    got = overlong_penalty(lengths, max_len=350, buffer=50)
    want = torch.tensor([dapo_reward_shape(n, 350, 50) for n in lengths], dtype=torch.float32)
    assert torch.allclose(got, want)
    assert got.min() >= -1 and got.max() <= 0


def test_overlong_penalty_edges():
    got = overlong_penalty(torch.tensor([300, 325, 350, 351]), 350, 50).tolist()
    assert got == pytest.approx([0, -0.5, -1, -1])
    assert overlong_penalty([350, 351], 350, 0).tolist() == [0.0, -1.0]
    with pytest.raises(ValueError):
        overlong_penalty([1], 10, 11)

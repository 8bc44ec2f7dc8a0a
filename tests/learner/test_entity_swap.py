"""The warm-up's entity swap: consistent, one to one, within a group, and nothing else touched."""

from __future__ import annotations

import random

import pytest

from learner.entity_swap import EntitySwap

TICKERS, ACCOUNTS = [1, 2, 3], [10, 11, 12, 13, 14]


def test_an_entity_becomes_the_same_other_member_of_its_group_everywhere():
    swap = EntitySwap([TICKERS, ACCOUNTS])
    prompt, completion, mask = [7, 1, 8, 10, 9], [1, 5, 10, 11, 6], [1, 0, 1, 1, 1]
    seen = set()
    for seed in range(40):
        p, c, m = swap((prompt, completion, mask), random.Random(seed))
        assert m == mask and len(p) == len(prompt) and len(c) == len(completion)
        assert [p[0], p[2], p[4], c[1], c[4]] == [7, 8, 9, 5, 6]  # other tokens untouched
        assert p[1] == c[0] in TICKERS and p[3] == c[2] in ACCOUNTS  # the same wherever it occurs
        assert c[3] in ACCOUNTS and c[3] != c[2]  # two accounts stay two accounts
        seen.add((p[1], p[3]))
    assert len(seen) > 5  # and it is redrawn


def test_an_example_without_entities_is_returned_as_it_is():
    example = ([4, 5], [6], [1])
    assert EntitySwap([TICKERS])(example, random.Random(0)) is example


def test_groups_that_overlap_are_refused():
    with pytest.raises(ValueError, match="more than one group"):
        EntitySwap([[1, 2], [2, 3]])


def test_a_group_full_of_entities_is_permuted():
    p, _, _ = EntitySwap([TICKERS])((TICKERS, [], []), random.Random(3))
    assert sorted(p) == TICKERS

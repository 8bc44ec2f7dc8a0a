"""A session's recorded calls become samples (actors/worker/sessions.py): one sample when each prompt
extends what came before, the tokens between masked out; cut where a prompt rewrites its history."""

from __future__ import annotations

import pytest

from actors.worker.sessions import Call, frac_split, session_samples


def test_calls_that_extend_their_history_are_one_sample_with_the_observation_masked():
    first = Call([10, 11], [20, 21, 22], [-0.5, -0.25, -0.125], [3, 3, 3])
    second = Call([10, 11, 20, 21, 22, 30, 31], [40, 41], [-1.0, -2.0], [4, 4], "length")
    (s,) = session_samples([first, second], decode=lambda ids: " ".join(map(str, ids)))
    assert s.prompt_ids == [10, 11]
    assert s.token_ids == [20, 21, 22, 30, 31, 40, 41]
    assert s.loss_mask == [1, 1, 1, 0, 0, 1, 1]
    assert s.logprobs == [-0.5, -0.25, -0.125, 0.0, 0.0, -1.0, -2.0]
    assert s.versions == [3, 3, 3, 3, 3, 4, 4]  # the observation keeps the version before it
    assert (s.policy_version, s.finish_reason, s.policy_tokens) == (3, "length", 5)
    assert s.text == "20 21 22 30 31 40 41"


def test_a_prompt_that_rewrites_its_history_starts_a_new_sample():
    first = Call([10, 11], [20, 21], [-0.5, -0.5], [0, 0])
    rewritten = Call([10, 12, 30], [40], [-1.0], [0])  # an earlier turn changed: not an extension
    then = Call([10, 12, 30, 40, 50], [60], [-1.5], [1])
    samples = session_samples([first, rewritten, then])
    assert [(s.prompt_ids, s.token_ids, s.loss_mask) for s in samples] == [
        ([10, 11], [20, 21], [1, 1]), ([10, 12, 30], [40, 50, 60], [1, 0, 1])]
    assert frac_split([samples, session_samples([first])]) == 0.5


def test_a_call_whose_record_does_not_add_up_is_refused():
    with pytest.raises(ValueError, match="2 sampled ids but 1 logprobs and 2 versions"):
        session_samples([Call([1], [2, 3], [-0.1], [0, 0])])

"""reasoning-gym by name: a reproducible mix whose held-out rows share neither a per-entry seed nor a
question with training, scored by each dataset's own score_answer on the `<answer>` tag."""

from __future__ import annotations

from collections import Counter

import pytest

from configs.loader import ConfigError
from configs.task import TaskConfig
from tasks.base import load_task

pytest.importorskip("reasoning_gym")

MIX = {"chain_sum": {"weight": 2, "config": {"min_terms": 2, "max_terms": 2, "max_digits": 1}},
       "spell_backward": {"config": {"min_word_len": 3, "max_word_len": 5}}}


def _task(seed: int = 0, **options):
    opts = {"datasets": MIX, "size": 90, "eval_size": 30, **options}
    return load_task(TaskConfig(name="reasoning_gym", seed=seed, options=opts), [("reasoning_gym", 1.0)])


def test_the_mix_follows_the_weights_and_is_reproducible():
    train, held = _task().rows()
    assert Counter(r["dataset"] for r in train) == {"chain_sum": 60, "spell_backward": 30}
    assert Counter(r["dataset"] for r in held) == {"chain_sum": 20, "spell_backward": 10}
    assert _task().rows() == (train, held)
    assert _task(seed=1).rows()[0] != train


def test_held_out_rows_are_not_training_rows():
    for seed in (0, 1, 2):
        train, held = _task(seed).rows()
        assert not {r["entry"]["question"] for r in train} & {r["entry"]["question"] for r in held}
        # entry i of seed s is drawn from Random(s + i): the held-out entries' per-entry seeds start past
        # every training entry's, and each one is what that seed gives
        import reasoning_gym

        from tasks.reasoning_gym import HELD_OUT_GAP, _base_seed

        for name, spec in MIX.items():
            base = _base_seed(seed, name)
            trained = {base + r["entry"]["metadata"]["source_index"] for r in train if r["dataset"] == name}
            mine = [r for r in held if r["dataset"] == name]
            heldout = {base + 90 + HELD_OUT_GAP + r["entry"]["metadata"]["source_index"] for r in mine}
            assert max(trained) < min(heldout)
            again = reasoning_gym.create_dataset(name, size=200, seed=base + 90 + HELD_OUT_GAP,
                                                 **spec["config"])
            first = mine[0]["entry"]
            assert again[first["metadata"]["source_index"]]["question"] == first["question"]


def test_scores_use_the_datasets_own_scorer_on_the_last_answer_tag():
    task = _task()
    held = task.rows()[1]
    chain = [r for r in held if r["dataset"] == "chain_sum"][:2]
    spell = [r for r in held if r["dataset"] == "spell_backward"][:1]
    rows = chain + spell
    texts = [f"<answer>0</answer> so <answer>{chain[0]['answer']}</answer>", "no tag " + chain[1]["answer"],
             f"<answer>{spell[0]['answer']}</answer>"]
    table = task.evaluate(rows, texts)
    assert table["per_category"] == {"chain_sum": 0.5, "spell_backward": 1.0}
    assert table["accuracy"] == pytest.approx(2 / 3)


def test_unknown_datasets_and_repeating_configs_are_refused():
    with pytest.raises(ConfigError, match="unknown reasoning-gym datasets"):
        _task(datasets={"no_such_set": {}})
    tiny = {"chain_sum": {"config": {"min_terms": 2, "max_terms": 2, "max_digits": 1}}}
    with pytest.raises(ConfigError, match="only .* held-out questions are not training questions"):
        _task(datasets=tiny, size=1000, eval_size=100).rows()

"""The runnable examples in the algorithm modules' docstrings stay true."""

import doctest
import importlib

import pytest

MODULES = [
    "algo.advantages",
    "algo.losses",
    "algo.shaping",
    "algo.ngrpo_switch",
    "algo.difficulty",
    "algo.token_weights",
    "algo.schedule",
    "algo.sampling",
    "algo.step",
    "algo.stats",
    "learner.micro_batches",
    "actors.driver.checkpoints",
    "actors.driver.prompts",
    "actors.driver.restarts",
    "actors.driver.run_lock",
    "observe.tables",
    "observe.schema",
    "cluster.backend",
    "cluster.actor_group",
    "tasks.env",
    "tasks.base",
    "tasks.files",
    "actors.driver.stalls",
    "configs.loader",
    "actors.driver.no_signal",
    "observe.completions_view",
    "rewards.answer_format",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0

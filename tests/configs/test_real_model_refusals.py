"""The real model's way in is refused before Ray when it cannot work: a packaged model that is not
installed names the command that installs it, and a config whose planned memory does not fit the machine
is refused with each role's estimate."""

from __future__ import annotations

import dataclasses
import json

import pytest

from actors.driver.preflight_model import memory_problems, model_problems
from configs.loader import load_config
from configs.model import ModelSource
from models import packaged
from models.memory import GB, ModelShape, micro_batch_tokens
from tasks.base import load_task

# SmolLM2-135M-Instruct's config.json fields (what the converted folder holds)
SMOLLM2 = {"hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
           "num_key_value_heads": 3, "vocab_size": 49152, "max_position_embeddings": 8192,
           "tie_word_embeddings": True}


def test_the_packaged_name_is_its_own_source_and_a_typo_is_refused():
    cfg = load_config("smollm2-cpu-reasoning")
    assert cfg.model.source is ModelSource.PACKAGED
    assert load_config("tiny-cpu").model.source is ModelSource.TINY
    with pytest.raises(Exception, match="not a packaged model"):
        load_config("tiny-cpu", ["model.name=smollm2-7b", "model.source=packaged"])


def test_a_packaged_model_not_installed_is_refused_with_its_install_command(tmp_path, monkeypatch):
    spec = dataclasses.replace(packaged.PACKAGED["smollm2-135m-instruct"], distribution="no-such-wheel-xyz")
    monkeypatch.setitem(packaged.PACKAGED, "smollm2-135m-instruct", spec)
    monkeypatch.setattr(packaged, "folder", lambda s: tmp_path / "not-converted")
    cfg = load_config("smollm2-cpu-reasoning")
    paths, problems = model_problems(cfg, load_task(cfg.task, cfg.reward.functions))
    assert paths is None and len(problems) == 1
    assert "no-such-wheel-xyz is not installed" in problems[0] and "make real-model" in problems[0]


def test_a_config_that_cannot_fit_is_refused_with_its_numbers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(SMOLLM2))
    cfg = load_config("smollm2-cpu-reasoning")
    assert memory_problems(cfg, tmp_path, total=24 * GB) == []  # this machine's size
    big = load_config("smollm2-cpu-reasoning", ["rollout.num_workers=6", "learner.activation_gb=12"])
    [line] = memory_problems(big, tmp_path, total=24 * GB)
    assert line.startswith("memory: the run would need about") and "24.0 GB" in line
    assert "learner" in line and "rollout" in line and "lower learner.activation_gb" in line


def test_the_auto_token_budget_bounds_the_learners_micro_batch_on_the_real_model():
    """The OOM this replaces: 32 sequences of 640 tokens in one micro-batch. `auto` caps a micro-batch's
    padded tokens so that its activations fit learner.activation_gb."""
    shape = ModelShape.of_config(SMOLLM2)
    cap = micro_batch_tokens("auto", 3.0, shape, "float32", checkpointing=False)
    assert 32 * 640 > cap > 256  # what used to OOM no longer fits one micro-batch; a real sequence does
    assert micro_batch_tokens("auto", 6.0, shape, "float32", False) == pytest.approx(2 * cap, rel=0.01)
    assert micro_batch_tokens(512, 3.0, shape, "float32", False) == 512

"""The algorithm config: the field report's defaults, bounds, cross-field checks, YAML-style overrides."""

import pytest
from pydantic import ValidationError

from configs.algorithm import (
    AdvantageConfig,
    AlgorithmConfig,
    DifficultyConfig,
    LossConfig,
    NGRPOConfig,
    OverlongConfig,
)

MODELS = [AdvantageConfig, NGRPOConfig, LossConfig, OverlongConfig, DifficultyConfig, AlgorithmConfig]


def test_seed_defaults():
    c = AlgorithmConfig()
    assert c.advantage.std == "population" and c.advantage.eps == 1e-6
    assert (c.ngrpo.mode, c.ngrpo.max_reward, c.ngrpo.num_virtual) == ("dynamic", 1.0, 1)
    assert (c.ngrpo.on_above, c.ngrpo.off_below, c.ngrpo.window) == (0.30, 0.20, 5)
    assert (c.loss.eps_low, c.loss.eps_high, c.loss.agg, c.loss.kl_coef) == (0.2, 0.28, "token_mean", 0.0)
    assert (c.loss.dart, c.loss.thought_weight, c.loss.action_weight) == (False, 0.3, 0.7)
    assert c.overlong.enabled
    assert (c.difficulty.enabled, c.difficulty.mix) == (False, (0.3, 0.5, 0.2))


@pytest.mark.parametrize("model", MODELS)
def test_every_field_is_described(model):
    for name, field in model.model_fields.items():
        assert field.description, f"{model.__name__}.{name} has no docstring"


def test_yaml_style_override():
    c = AlgorithmConfig.model_validate({"ngrpo": {"mode": "on"}, "loss": {"agg": "seq_mean_token_sum_norm"}})
    assert c.ngrpo.mode == "on" and c.ngrpo.on_above == 0.30
    assert c.loss.agg == "seq_mean_token_sum_norm"


@pytest.mark.parametrize(
    "data, loc",
    [
        ({"ngrpo": {"mode": "auto"}}, ("ngrpo", "mode")),
        ({"ngrpo": {"num_virtual": 0}}, ("ngrpo", "num_virtual")),
        ({"ngrpo": {"on_above": 0.1}}, ("ngrpo",)),  # off_below 0.2 > on_above 0.1
        ({"loss": {"eps_low": 1.0}}, ("loss", "eps_low")),
        ({"loss": {"kl_coef": -0.1}}, ("loss", "kl_coef")),
        ({"advantage": {"std": "sample"}}, ("advantage", "std")),
        ({"difficulty": {"mix": [0.5, 0.5, 0.5]}}, ("difficulty",)),
        ({"difficulty": {"easy_min": 0.2}}, ("difficulty",)),
        ({"overlong": {"buffer": 100, "max_len": 50}}, ("overlong",)),
        ({"loss": {"typo": 1}}, ("loss", "typo")),
    ],
)
def test_bad_values_name_their_field(data, loc):
    with pytest.raises(ValidationError) as err:
        AlgorithmConfig.model_validate(data)
    assert err.value.errors()[0]["loc"] == loc


def test_assignment_is_validated():
    c = NGRPOConfig()
    with pytest.raises(ValidationError):
        c.off_below = 0.9

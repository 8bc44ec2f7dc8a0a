"""Every config section is strict and documented: unknown keys and NaN/inf refused, each field described."""

from __future__ import annotations

import typing

import pytest
from pydantic import BaseModel

from configs.loader import ConfigError, load_config
from configs.root import Config


def _sections(model: type[BaseModel], seen: dict | None = None) -> dict[str, type[BaseModel]]:
    seen = {} if seen is None else seen
    seen.setdefault(model.__name__, model)
    for field in model.model_fields.values():
        for arg in (field.annotation, *typing.get_args(field.annotation)):
            for sub in (arg, *typing.get_args(arg)):
                if isinstance(sub, type) and issubclass(sub, BaseModel) and sub.__name__ not in seen:
                    _sections(sub, seen)
    return seen


@pytest.mark.parametrize("name,model", sorted(_sections(Config).items()))
def test_section_is_strict_and_documented(name, model):
    assert model.model_config.get("extra") == "forbid", name
    assert model.model_config.get("allow_inf_nan") is False, name
    undocumented = [f for f, info in model.model_fields.items() if not (info.description or "").strip()]
    assert not undocumented, f"{name}: fields without a docstring: {undocumented}"


@pytest.mark.parametrize("override", ["reward.functions=[{name: gt, weight: .nan}]", "reward.timeout_s=.inf",
                                      "learner.lr=.nan", "algorithm.ngrpo.max_reward=.inf"])
def test_non_finite_numbers_are_refused(override):
    with pytest.raises(ConfigError, match="finite"):
        load_config("tiny-cpu", [override])

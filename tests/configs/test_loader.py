"""`load_config(path, overrides)`: `--set` overrides, YAML typing, and the error messages."""

from __future__ import annotations

import pytest
import yaml

from configs.loader import ConfigError, load_config, parse_override

PYDANTIC_NOISE = ("Traceback", "errors.pydantic.dev", "https://", "For further information")


def _error(path="tiny-cpu", overrides=None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    err = info.value
    msg = str(err)
    assert msg.strip(), "empty error message"
    for noise in PYDANTIC_NOISE:
        assert noise not in msg, f"{noise!r} in error message:\n{msg}"
    # Raised `from None`: printing it shows no chained pydantic/yaml traceback.
    assert err.__cause__ is None
    assert err.__suppress_context__ or err.__context__ is None
    return msg


# ---------------------------------------------------------------- overrides


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


def test_nested_overrides():
    cfg = load_config("tiny-cpu", ["train.steps=3", "algorithm.ngrpo.window=3", "model.lora.r=8"])
    assert cfg.train.steps == 3
    assert cfg.algorithm.ngrpo.window == 3
    assert cfg.model.lora.r == 8


@pytest.mark.parametrize("mode", ["on", "off", "dynamic"])
def test_ngrpo_mode_override(mode):
    # YAML 1.1 reads bare on/off as booleans; the Literal field must still get the mode.
    cfg = load_config("tiny-cpu", [f"algorithm.ngrpo.mode={mode}"])
    assert cfg.algorithm.ngrpo.mode == mode


@pytest.mark.parametrize("mode", ["on", "off"])
def test_ngrpo_mode_on_off_in_a_yaml_file(tmp_path, mode):
    f = tmp_path / "mode.yaml"
    f.write_text(f"algorithm:\n  ngrpo: {{mode: {mode}}}\n")
    assert load_config(f).algorithm.ngrpo.mode == mode


def _preset(name: str = "tiny-cpu") -> dict:
    """The preset file's own values, so these tests follow the preset when it is retuned."""
    from configs.loader import PRESETS_DIR

    return yaml.safe_load((PRESETS_DIR / f"{name}.yaml").read_text())


def test_override_keeps_sibling_keys_from_the_file():
    cfg = load_config("tiny-cpu", ["model.lora.r=8"])
    assert cfg.model.lora.alpha == _preset()["model"]["lora"]["alpha"]  # from the file's flow mapping
    cfg = load_config("tiny-cpu", ["train.warmup.steps=5"])
    assert cfg.train.warmup.steps == 5
    assert cfg.train.warmup.enabled is True
    assert cfg.train.warmup.lr == pytest.approx(float(_preset()["train"]["warmup"]["lr"]))


def test_overrides_do_not_leak_into_the_next_load():
    assert load_config("tiny-cpu", ["train.steps=3"]).train.steps == 3
    assert load_config("tiny-cpu").train.steps == _preset()["train"]["steps"] != 3


def test_later_override_wins():
    assert load_config("tiny-cpu", ["train.steps=3", "train.steps=4"]).train.steps == 4


@pytest.mark.parametrize(
    "item, expected",
    [
        ("train.steps=3", 3),
        ("learner.lr=0.5", 0.5),
        ("learner.lr=5.0e-6", 5e-6),
        ("train.progress=false", False),
        ("train.progress=true", True),
        ("train.run_name=null", None),
        ("model.lora.target_modules=[q_proj, v_proj]", ["q_proj", "v_proj"]),
        ("algorithm.ngrpo={mode: dynamic, window: 3}", {"mode": "dynamic", "window": 3}),
        ("train.run_name=abc", "abc"),
        ("train.run_name='3'", "3"),
        ("train.run_name=a=b", "a=b"),
        (" train.steps = 3 ", 3),
    ],
)
def test_parse_override_yaml_typing(item, expected):
    parts, value = parse_override(item)
    assert parts == item.split("=", 1)[0].strip().split(".")
    assert value == expected
    assert type(value) is type(expected)


def test_override_value_types_reach_the_config():
    cfg = load_config(
        "tiny-cpu",
        [
            "train.steps=3",
            "learner.lr=1e-4",
            "rollout.temperature=0.5",
            "train.progress=false",
            "model.lora.target_modules=[q_proj, v_proj]",
            "algorithm.difficulty.mix=[0.2, 0.5, 0.3]",
            "reward.functions=[{name: rule, weight: 0.5}, {name: gt}]",
        ],
    )
    assert cfg.train.steps == 3 and type(cfg.train.steps) is int
    assert cfg.learner.lr == pytest.approx(1e-4) and type(cfg.learner.lr) is float
    assert cfg.rollout.temperature == pytest.approx(0.5)
    assert cfg.train.progress is False
    assert cfg.model.lora.target_modules == ["q_proj", "v_proj"]
    assert cfg.algorithm.difficulty.mix == pytest.approx((0.2, 0.5, 0.3))
    assert [(f.name, f.weight) for f in cfg.reward.functions] == [("rule", 0.5), ("gt", 1.0)]


def test_override_of_keys_absent_from_the_file():
    # tiny-cpu.yaml has no train.eval_limit, no rollout.top_p, and no algorithm.difficulty section.
    cfg = load_config(
        "tiny-cpu", ["train.eval_limit=5", "rollout.top_p=0.5", "algorithm.difficulty.enabled=true"]
    )
    assert cfg.train.eval_limit == 5
    assert cfg.rollout.top_p == pytest.approx(0.5)
    assert cfg.algorithm.difficulty.enabled is True
    assert cfg.algorithm.difficulty.num_samples == 8  # the rest of the new section: defaults


def test_override_on_an_empty_file(tmp_path):
    f = tmp_path / "empty.yaml"
    f.write_text("")
    cfg = load_config(f, ["train.steps=2"])
    assert cfg.train.steps == 2
    assert cfg.model.name == "tiny"


# ---------------------------------------------------------------- errors


def test_bad_value_names_key_file_and_bound():
    msg = _error("tiny-cpu", ["rollout.temperature=-1"])
    assert "rollout.temperature" in msg
    assert "tiny-cpu.yaml" in msg
    assert "greater than" in msg
    assert "-1" in msg


def test_bad_value_in_the_file_itself_names_the_file(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("learner:\n  lr: 0\n")
    msg = _error(f)
    assert "learner.lr" in msg
    assert "mine.yaml" in msg
    assert "greater than" in msg


def test_bad_literal_lists_the_choices():
    msg = _error("tiny-cpu", ["learner.zero_stage=5"])
    assert "learner.zero_stage" in msg
    for choice in ("0", "1", "2", "3"):
        assert choice in msg


def test_wrong_type_names_the_key():
    msg = _error("tiny-cpu", ["train.steps=abc"])
    assert "train.steps" in msg
    assert "integer" in msg
    assert "abc" in msg


def test_unknown_key_lists_allowed_keys():
    msg = _error("tiny-cpu", ["train.stepz=3"])
    assert "train.stepz" in msg
    assert "unknown key" in msg
    assert "steps" in msg
    assert "prompts_per_step" in msg


def test_unknown_nested_key_lists_that_sections_keys():
    msg = _error("tiny-cpu", ["algorithm.loss.bogus=1"])
    assert "algorithm.loss.bogus" in msg
    assert "eps_high" in msg and "kl_coef" in msg


def test_unknown_section_lists_sections():
    msg = _error("tiny-cpu", ["foo.bar=1"])
    assert "foo" in msg
    for section in ("model", "rollout", "learner", "train", "algorithm"):
        assert section in msg


def test_unknown_key_inside_a_list_item_lists_allowed_keys():
    msg = _error("tiny-cpu", ["reward.functions=[{name: gt, wieght: 1}]"])
    assert "reward.functions.0.wieght" in msg
    allowed = msg.split("allowed here:", 1)[-1]
    assert "name" in allowed and "weight" in allowed


def test_missing_file_names_file_and_presets(tmp_path):
    msg = _error("nope")
    assert "nope" in msg
    assert "tiny-cpu" in msg and "qwen2.5-7b-fund" in msg
    missing = tmp_path / "missing.yaml"
    msg = _error(missing)
    assert "missing.yaml" in msg
    assert "tiny-cpu" in msg


def test_malformed_yaml_file(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("model: [1, 2\n  x: :\n")
    msg = _error(f)
    assert "broken.yaml" in msg
    assert "not valid YAML" in msg
    assert "line" in msg


def test_yaml_file_whose_top_level_is_not_a_mapping(tmp_path):
    f = tmp_path / "list.yaml"
    f.write_text("- a\n- b\n")
    msg = _error(f)
    assert "list.yaml" in msg
    assert "mapping" in msg


@pytest.mark.parametrize("item", ["foo", "train.steps", ""])
def test_set_without_equals(item):
    msg = _error("tiny-cpu", [item])
    assert "key=value" in msg
    assert repr(item) in msg


def test_set_with_empty_key():
    msg = _error("tiny-cpu", ["=3"])
    assert "empty key" in msg


def test_set_with_invalid_yaml_value():
    msg = _error("tiny-cpu", ["train.steps=[1"])
    assert "train.steps" in msg
    assert "not valid YAML" in msg


def test_value_where_a_section_is_expected():
    msg = _error("tiny-cpu", ["train=3"])
    assert "train" in msg and "got 3" in msg
    msg = _error("tiny-cpu", ["train.warmup=true"])
    assert "train.warmup" in msg


def test_section_path_through_a_value():
    msg = _error("tiny-cpu", ["train.steps.x=3"])
    assert "train.steps" in msg
    assert "not a section" in msg


def test_max_tokens_must_be_below_max_model_len():
    msg = _error("tiny-cpu", ["rollout.max_tokens=600"])
    assert "rollout.max_tokens" in msg and "rollout.max_model_len" in msg
    assert "600" in msg and "512" in msg
    # The bound is strict: equal is still an error, one below is fine.
    msg = _error("tiny-cpu", ["rollout.max_tokens=512"])
    assert "rollout.max_model_len" in msg
    assert load_config("tiny-cpu", ["rollout.max_tokens=511"]).rollout.max_tokens == 511
    # Both sides of the check can be moved by overrides.
    cfg = load_config("tiny-cpu", ["rollout.max_tokens=600", "rollout.max_model_len=1024"])
    assert cfg.rollout.max_tokens == 600


def test_tiny_head_size_cross_check():
    msg = _error("tiny-cpu", ["model.tiny.hidden_size=100"])
    assert "hidden_size" in msg and "head size" in msg


def test_section_validator_errors_name_the_section():
    msg = _error("tiny-cpu", ["algorithm.ngrpo.off_below=0.5"])
    assert "algorithm.ngrpo" in msg
    assert "off_below" in msg and "on_above" in msg


def test_all_errors_are_reported_at_once():
    msg = _error("tiny-cpu", ["train.steps=-1", "rollout.temperature=-1", "train.stepz=1"])
    assert "train.steps" in msg and "rollout.temperature" in msg and "train.stepz" in msg

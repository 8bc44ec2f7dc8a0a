"""`train.pipeline` and `env` are one section per kind (configs/pipeline.py, configs/env.py): what a kind
does not have cannot be written, a bare name is the kind with its defaults, presets and overrides of
another kind replace the section, and the older keys still load (or are refused with the new spelling)."""

from __future__ import annotations

import pytest

from configs.loader import ConfigError, config_from_data, load_config, merge


def _refused(overrides: list[str], preset: str = "tiny-cpu") -> str:
    with pytest.raises((ConfigError, ValueError)) as e:
        load_config(preset, overrides)
    return str(e.value)


def test_a_bare_kind_is_the_kind_with_its_defaults():
    cfg = load_config("tiny-cpu", ["train.pipeline=stream"])
    assert cfg.train.pipeline.kind == "stream"
    assert (cfg.train.pipeline.max_staleness, cfg.train.pipeline.max_in_flight) == (0, 64)
    assert load_config("tiny-cpu", ["train.pipeline=one_step_off"]).train.pipeline.max_staleness == 1
    assert load_config("tiny-cpu").train.pipeline.max_staleness == 0  # sync
    cfg = load_config("tiny-cpu", ["train.pipeline=stream", "train.pipeline.max_staleness=3",
                                   "train.pipeline.max_in_flight=9"])
    assert (cfg.train.pipeline.max_staleness, cfg.train.pipeline.max_in_flight) == (3, 9)


@pytest.mark.parametrize("kind", ["sync", "one_step_off"])
def test_what_a_pipeline_kind_does_not_have_cannot_be_written(kind):
    for key in ("max_staleness=1", "max_in_flight=8"):
        message = _refused([f"train.pipeline={kind}", f"train.pipeline.{key}"])
        assert "unknown key" in message and "kind" in message, message


def test_a_pipeline_without_a_kind_or_of_an_unknown_kind_is_refused_by_name():
    assert "name its kind" in _refused(["train.pipeline.max_staleness=2"])
    message = _refused(["train.pipeline=streamed"])
    assert "train.pipeline" in message and "stream" in message, message


def test_the_older_pipeline_keys_still_load():
    assert load_config("tiny-cpu", ["train.max_staleness=1"]).train.pipeline.kind == "one_step_off"
    assert load_config("tiny-cpu", ["train.max_staleness=0"]).train.pipeline.kind == "sync"
    cfg = load_config("tiny-cpu", ["train.pipeline=stream", "train.max_staleness=2",
                                   "rollout.max_in_flight=8"])
    assert (cfg.train.pipeline.kind, cfg.train.pipeline.max_staleness, cfg.train.pipeline.max_in_flight) == (
        "stream", 2, 8)
    cfg = load_config("tiny-cpu", ["train.pipeline=stream", "train.max_staleness=3"])
    assert cfg.train.pipeline.max_staleness == 3
    assert load_config("tiny-cpu", ["train.pipeline=stream"]).train.pipeline.max_staleness == 0  # as before


def test_the_older_bound_chooses_between_sync_and_one_step_off_and_a_larger_one_asks_for_a_stream():
    assert load_config("tiny-cpu", ["train.pipeline=sync", "train.max_staleness=1"]).train.pipeline.kind == (
        "one_step_off")  # as a preset's sync was once written with max_staleness 0
    cfg = load_config("tiny-cpu", ["train.pipeline=one_step_off", "train.max_staleness=0"])
    assert cfg.train.pipeline.kind == "sync"
    for over in (["train.max_staleness=2"], ["train.pipeline=one_step_off", "train.max_staleness=2"]):
        message = _refused(over)
        assert "write train.pipeline: {kind: stream, max_staleness: 2}" in message, message
    # slots did nothing outside a stream: an old sync run's config still loads
    assert load_config("tiny-cpu", ["rollout.max_in_flight=8"]).train.pipeline.kind == "sync"


def test_an_overlay_of_another_kind_replaces_the_section_and_one_of_the_same_kind_merges():
    base = {"train": {"pipeline": {"kind": "stream", "max_staleness": 3}}}
    assert merge(base, {"train": {"pipeline": "sync"}})["train"]["pipeline"] == {"kind": "sync"}
    assert merge(base, {"train": {"pipeline": {"kind": "one_step_off"}}})["train"]["pipeline"] == {
        "kind": "one_step_off"}
    assert merge(base, {"train": {"pipeline": {"max_in_flight": 4}}})["train"]["pipeline"] == {
        "kind": "stream", "max_staleness": 3, "max_in_flight": 4}
    assert merge({"train": {"pipeline": "stream"}}, {"train": {"pipeline": {"max_in_flight": 4}}})[
        "train"]["pipeline"] == {"kind": "stream", "max_in_flight": 4}
    assert config_from_data(merge(base, {"train": {"pipeline": "sync"}})).train.pipeline.kind == "sync"


def test_episodes_are_a_kind_with_their_own_limits():
    cfg = load_config("tiny-cpu-agent")
    assert cfg.env.kind == "episodes" and cfg.env.enabled and cfg.env.max_turns == 5
    plain = load_config("tiny-cpu")
    assert plain.env.kind == "completions" and not plain.env.enabled
    message = _refused(["env.max_turns=3"], "tiny-cpu")  # a completion has no turns
    assert "unknown key" in message and "env.max_turns" in message, message


def test_the_older_env_spelling_still_loads():
    cfg = load_config("tiny-cpu", ["env.enabled=true", "env.max_context=256"])
    assert cfg.env.kind == "episodes" and cfg.env.max_context == 256
    assert config_from_data({"env": {"enabled": False, "max_turns": 4}}).env.kind == "completions"
    data = {"env": {"enabled": True, "max_turns": 4, "max_context": 512}}
    env = config_from_data(merge(load_config_data(), data)).env
    assert (env.kind, env.max_turns, env.max_context) == ("episodes", 4, 512)


def test_print_config_loads_back_equal():
    cfg = load_config("tiny-cpu-agent", ["train.pipeline=stream", "train.pipeline.max_staleness=2"])
    again = config_from_data(cfg.model_dump(mode="json"))
    assert again == cfg and again.train.pipeline.max_staleness == 2


def load_config_data() -> dict:
    from configs.loader import load_data

    return load_data("tiny-cpu-agent")[0]


def test_overrides_of_a_kind_keep_its_settings_and_another_kind_starts_from_its_defaults():
    stream = ["train.pipeline=stream", "train.pipeline.max_staleness=2"]
    assert load_config("tiny-cpu", [*stream, "train.pipeline=stream"]).train.pipeline.max_staleness == 2
    assert load_config("tiny-cpu", [*stream, "train.pipeline.kind=sync"]).train.pipeline.kind == "sync"
    agent = load_config("tiny-cpu-agent", ["env=episodes"]).env
    assert agent.max_turns == 5 and agent.max_context == 640  # the preset's, kept
    message = _refused(["env.kind=completions", "env.max_turns=5"], "tiny-cpu-agent")  # the section reset
    assert "env.max_turns: unknown key (allowed for kind completions: kind)" in message, message
    assert load_config("tiny-cpu-agent", ["env.enabled=true"]).env.max_turns == 5  # the older spelling too

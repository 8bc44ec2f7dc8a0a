"""`env`: agent episodes are validated with the rest of the config, before anything starts."""

from __future__ import annotations

import pytest

from configs.loader import ConfigError, load_config


def test_the_agent_preset_turns_episodes_on_and_fits_its_context():
    cfg = load_config("tiny-cpu-agent")
    assert cfg.env.enabled and "no_balance_check" in cfg.task.options["episode_flaw"]
    assert cfg.env.max_context + cfg.rollout.max_tokens <= cfg.rollout.max_model_len
    assert not load_config("tiny-cpu").env.enabled  # the default run stays single-turn


def test_episodes_take_the_pipeline_dart_and_the_difficulty_filter():
    cfg = load_config("tiny-cpu-agent", ["train.pipeline=one_step_off", "algorithm.loss.dart=true",
                                         "algorithm.difficulty.enabled=true"])
    assert cfg.train.pipeline.kind == "one_step_off"
    assert cfg.algorithm.loss.dart and cfg.algorithm.difficulty.enabled


def test_an_episode_context_beyond_the_engine_is_refused():
    with pytest.raises(ConfigError, match="env.max_context"):
        load_config("tiny-cpu-agent", ["env.max_context=2000"])
    with pytest.raises(ConfigError, match="env.max_turns"):
        load_config("tiny-cpu-agent", ["env.max_turns=0"])


def test_an_agent_run_counts_no_reward_actors_against_the_cluster():
    from actors.driver.preflight import resource_problems

    agent = load_config("tiny-cpu-agent", ["reward.num_actors=4", "reward.num_cpus=1"])
    assert resource_problems(agent, {"CPU": 2.0}) == []  # the environment scores: no reward actors start
    single = load_config("tiny-cpu", ["reward.num_actors=4", "reward.num_cpus=1"])
    assert "reward 4 x 1" in resource_problems(single, {"CPU": 2.0})[0]


def test_the_entity_drill_is_for_agent_runs_only():
    with pytest.raises(ConfigError, match="train.warmup.drill"):
        load_config("tiny-cpu", ["train.warmup.drill.steps=10"])
    assert load_config("tiny-cpu-agent", ["train.warmup.drill.steps=10"]).train.warmup.drill.steps == 10
    with pytest.raises(ConfigError, match="train.warmup.drill"):
        load_config("tiny-cpu", ["train.warmup.drill.answers=4"])


def test_the_answer_drill_needs_the_entity_drill():
    # With no drill steps and no drill rows mixed in, answer rows would have nothing to join.
    with pytest.raises(ConfigError, match="drill.answers"):
        load_config("tiny-cpu-agent", ["train.warmup.drill.steps=0", "train.warmup.drill.mix=0"])
    kept = load_config("tiny-cpu-agent", ["train.warmup.drill.steps=0"]).train.warmup.drill
    assert (kept.steps, kept.mix, kept.answers) == (0, 16, 8)
    with pytest.raises(ConfigError, match="train.warmup.swap_entities"):
        load_config("tiny-cpu", ["train.warmup.swap_entities=true"])


def test_the_openai_preset_plays_the_fund_harness_and_the_harness_kind_has_its_own_keys():
    cfg = load_config("tiny-cpu-agent-openai")
    assert cfg.env.kind == "harness" and cfg.env.harness == "tasks.fund_assistant.harness:play"
    assert cfg.env.enabled and cfg.env.chat_template == "tools" and cfg.env.tool_parser == "hermes"
    with pytest.raises(ConfigError, match="max_context"):  # an in-worker episode's key, not a harness's
        load_config("tiny-cpu-agent-openai", ["env.max_context=512"])
    with pytest.raises(ConfigError, match="harness"):  # the harness is what the kind is about
        load_config("tiny-cpu-agent", ["env.kind=harness"])


def test_a_template_file_is_checked_before_start_and_sent_as_text(tmp_path, monkeypatch):
    """env.chat_template names a file relative to where train.py runs: a missing one is refused with the
    path; an existing one is read by the driver and its text is what the workers get."""
    from actors.driver.workloads import Harness
    from models.tool_template import template_text
    from tasks.base import load_task

    with pytest.raises(ConfigError, match="no template file 'nowhere.jinja'"):
        load_config("tiny-cpu-agent-openai", ["env.chat_template=nowhere.jinja"])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    cfg = load_config("tiny-cpu-agent-openai", ["env.chat_template=mine.jinja"])
    sent = Harness(cfg, load_task(cfg.task)).sampling()["chat_template"]
    assert sent == (tmp_path / "mine.jinja").read_text() and template_text(sent) == sent
    named = load_config("tiny-cpu-agent-openai")
    assert Harness(named, load_task(named.task)).sampling()["chat_template"] == "tools"


def test_a_harness_run_takes_every_pipeline_but_not_dart():
    with pytest.raises(ConfigError, match="dart"):
        load_config("tiny-cpu-agent-openai", ["algorithm.loss.dart=true"])
    for kind in ("one_step_off", "stream"):
        assert load_config("tiny-cpu-agent-openai", [f"train.pipeline={kind}"]).train.pipeline.kind == kind


def test_a_harness_that_does_not_import_or_is_not_async_is_refused_before_start():
    from actors.driver.preflight import _harness

    assert _harness(load_config("tiny-cpu-agent-openai")) == []
    bad = load_config("tiny-cpu-agent-openai", ["env.harness=tasks.fund_assistant.harness:tool_specs"])
    assert "not an async function" in _harness(bad)[0]
    missing = load_config("tiny-cpu-agent-openai", ["env.harness=no_such_module:play"])
    assert "No module named 'no_such_module'" in _harness(missing)[0]


def test_a_harness_run_on_a_task_without_scripted_replies_is_refused_a_warm_up(tmp_path):
    from actors.driver.preflight import _harness
    from tasks.base import load_task

    preset = tmp_path / "mine.yaml"  # the harness preset on another task (its task section replaced)
    preset.write_text("extends: tiny-cpu-agent-openai\ntask: {name: reasoning_gym, options: {datasets: "
                      "{letter_counting: {weight: 1}}, size: 20, eval_size: 5}}\n")
    cfg = load_config(str(preset))
    problem = _harness(cfg, load_task(cfg.task))
    assert problem and "no scripted replies" in problem[0]
    off = load_config(str(preset), ["train.warmup.enabled=false"])
    assert _harness(off, load_task(off.task)) == []

"""Cross-field and size checks: values that used to pass validation and fail only once roles ran (or were
silently ignored) are refused by load_config, with a message naming the keys and what is allowed."""

from __future__ import annotations

import json

import pytest

from configs.loader import ConfigError, load_config


def _refused(preset: str, overrides: list[str], *keys: str) -> str:
    with pytest.raises(ConfigError) as e:
        load_config(preset, overrides)
    msg = str(e.value)
    for key in keys:
        assert key in msg, msg
    return msg


# a. The overlong ramp ends at rollout.max_tokens (an episode: max_turns x max_tokens); a wider buffer
# used to crash algo.shaping at step 1.
@pytest.mark.parametrize("preset,overrides,keys", [
    ("tiny-cpu", ["algorithm.overlong.buffer=50", "rollout.max_tokens=24"],
     ("algorithm.overlong.buffer", "rollout.max_tokens", "24")),
    ("tiny-cpu-agent", ["algorithm.overlong.enabled=true", "algorithm.overlong.buffer=401"],
     ("algorithm.overlong.buffer", "env.max_turns", "400")),
])
def test_overlong_buffer_longer_than_the_ramp_is_refused(preset, overrides, keys):
    _refused(preset, overrides, *keys)


def test_overlong_buffer_up_to_the_ramp_end_is_accepted():
    assert load_config("tiny-cpu", ["algorithm.overlong.buffer=24", "rollout.max_tokens=24"])
    assert load_config("tiny-cpu-agent", ["algorithm.overlong.enabled=true", "algorithm.overlong.buffer=400"])
    assert load_config("tiny-cpu", ["algorithm.overlong.enabled=false", "algorithm.overlong.buffer=500"])
    assert load_config("tiny-cpu", ["algorithm.overlong.buffer=50", "rollout.max_tokens=24",
                                    "algorithm.overlong.max_len=60"])


# b. vLLM on CPU runs tensor parallelism only with the mp executor.
@pytest.mark.parametrize("backend", [[], ["rollout.distributed_executor_backend=ray"],
                                     ["rollout.distributed_executor_backend=uni"]])
def test_tensor_parallel_on_cpu_without_mp_is_refused(backend):
    _refused("tiny-cpu", ["rollout.tensor_parallel_size=2", *backend],
             "rollout.tensor_parallel_size", "rollout.distributed_executor_backend=mp")


def test_tensor_parallel_with_mp_or_on_gpus_is_accepted():
    assert load_config("tiny-cpu", ["rollout.tensor_parallel_size=2",
                                    "rollout.distributed_executor_backend=mp"])
    assert load_config("tiny-cpu", ["rollout.tensor_parallel_size=2", "rollout.num_gpus=2"])


# c. The engine cannot be longer than the tiny model's positions.
def test_max_model_len_beyond_the_tiny_models_context_is_refused():
    _refused("tiny-cpu", ["rollout.max_model_len=2048"], "rollout.max_model_len",
             "model.tiny.max_position_embeddings")
    assert load_config("tiny-cpu", ["rollout.max_model_len=2048", "model.tiny.max_position_embeddings=2048"])


def test_max_model_len_beyond_a_named_models_context_is_a_preflight_problem(tmp_path):
    from actors.driver.preflight_model import context_problems
    from models.resolve import ModelPaths

    paths = ModelPaths(tmp_path, tmp_path)
    cfg = load_config("tiny-cpu", [f"model.name={tmp_path}", "rollout.max_model_len=1024"])
    assert context_problems(cfg, paths) == []  # no config.json: left to vLLM
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 512}))
    [line] = context_problems(cfg, paths)
    assert "rollout.max_model_len (1024)" in line and "512" in line
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 1024}))
    assert context_problems(cfg, paths) == []
    (tmp_path / "config.json").write_text(json.dumps({"max_position_embeddings": 512,
                                                      "rope_scaling": {"type": "yarn", "factor": 4.0}}))
    assert context_problems(cfg, paths) == []  # rope scaling extends the context: vLLM decides
    assert context_problems(cfg, ModelPaths(tmp_path / "absent", tmp_path)) == []


# d. One step's samples are bounded (1e9 prompts used to run out of memory).
def test_absurd_prompts_per_step_is_refused():
    _refused("tiny-cpu", ["train.prompts_per_step=1000000000"], "train.prompts_per_step", "rollout.n",
             "65536")
    assert load_config("tiny-cpu", ["train.prompts_per_step=8192", "rollout.n=8"])
    _refused("tiny-cpu", ["train.prompts_per_step=8193", "rollout.n=8"], "train.prompts_per_step")


# e. Seeds every generator accepts (torch overflowed on 1e29; vLLM's np.random.seed needs < 2**32).
@pytest.mark.parametrize("key", ["train.seed", "task.seed", "model.tiny.seed"])
@pytest.mark.parametrize("value", ["1e29", str(10**29), "-1", str(2**31)])
def test_out_of_range_seeds_are_refused(key, value):
    _refused("tiny-cpu", [f"{key}={value}"], key)


def test_largest_seed_is_accepted():
    assert load_config("tiny-cpu", [f"train.seed={2**31 - 1}"]).train.seed == 2**31 - 1


# f. An adapter on no layer trains nothing.
def test_empty_lora_target_modules_is_refused():
    _refused("tiny-cpu", ["model.lora.target_modules=[]"], "model.lora.target_modules")


# g. Grouped-query attention needs num_kv_heads to divide num_heads.
def test_kv_heads_not_dividing_heads_is_refused():
    _refused("tiny-cpu", ["model.tiny.num_kv_heads=3"], "model.tiny.num_heads", "model.tiny.num_kv_heads")
    _refused("tiny-cpu", ["model.tiny.hidden_size=129", "model.tiny.num_heads=2"], "model.tiny.hidden_size",
             "model.tiny.num_heads")  # 129 // 2 = 64 is a head size vLLM has, but 129 is not 2 heads of 64


# h. The eval temperature is bounded like the sampling one.
def test_absurd_eval_temperature_is_refused():
    _refused("tiny-cpu", ["rollout.eval_temperature=1e9"], "rollout.eval_temperature")
    assert load_config("tiny-cpu", ["rollout.eval_temperature=3.0"])


# i. Single-turn runs need a reward function; agent episodes are scored by the environment.
def test_no_reward_functions_is_refused_for_single_turn_only():
    _refused("tiny-cpu", ["reward.functions=[]"], "reward.functions")
    assert load_config("tiny-cpu-agent", ["reward.functions=[]"]).reward.functions == []


# j. Data files that would be ignored.
@pytest.mark.parametrize("preset,overrides,keys", [
    ("tiny-cpu-agent", ["task.train_file=rows.jsonl"], ("task.train_file", "env: completions")),
    ("tiny-cpu-agent", ["task.train_file=rows.jsonl", "task.eval_file=held.jsonl"],
     ("task.train_file and task.eval_file", "env: completions")),
    ("tiny-cpu", ["task.eval_file=held.jsonl"], ("task.eval_file", "task.train_file")),
])
def test_ignored_data_files_are_refused(preset, overrides, keys):
    _refused(preset, overrides, *keys)


def test_train_py_exits_2_with_one_error_line(tmp_path, capsys):
    import train

    code = train.main(["--set", f"train.run_dir={tmp_path}", "--set", "algorithm.overlong.buffer=50",
                       "--set", "rollout.max_tokens=24"])
    err = capsys.readouterr().err
    assert code == 2
    assert [line for line in err.splitlines() if line.startswith("error:")] == [err.splitlines()[0]], err
    assert "algorithm.overlong.buffer" in err and "Traceback" not in err
    assert not any(tmp_path.iterdir())  # refused before preflight made a run directory

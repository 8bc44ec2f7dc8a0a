"""The shipped presets: they load, validate, and carry the settings they claim."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from configs.loader import PRESETS_DIR, ConfigError, load_config, read_file, resolve_path
from configs.root import Config

REPO = Path(__file__).resolve().parents[2]
PRESETS = sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


def test_both_presets_are_shipped():
    assert {"tiny-cpu", "qwen2.5-7b-fund"} <= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_loads_and_validates(name):
    cfg = load_config(name)
    assert isinstance(cfg, Config)
    # Round trip: what the loader returns re-validates as a whole (cross-checks included).
    assert Config.model_validate(cfg.model_dump()) == cfg
    assert cfg.rollout.max_tokens < cfg.rollout.max_model_len


@pytest.mark.parametrize("name", PRESETS)
def test_preset_files_only_use_known_sections(name):
    data = read_file(PRESETS_DIR / f"{name}.yaml")  # as the loader reads it (`!replace` included)
    assert isinstance(data, dict)
    assert set(data) <= {*Config.model_fields, "extends"}


def test_7b_preset_has_the_seeds_settings():
    cfg = load_config("qwen2.5-7b-fund")
    assert cfg.model.name == "Qwen/Qwen2.5-7B-Instruct"
    assert cfg.model.dtype == "bfloat16"
    assert cfg.model.lora.r == 16
    assert cfg.model.lora.alpha == 32
    assert cfg.rollout.n == 8
    assert cfg.rollout.temperature == pytest.approx(0.9)
    assert cfg.learner.lr == pytest.approx(5e-6)
    assert isinstance(cfg.learner.lr, float)
    assert cfg.rollout.max_tokens == 350
    assert cfg.rollout.max_model_len > 350


def test_tiny_cpu_is_the_default():
    default = load_config()
    assert default == load_config("tiny-cpu")
    assert default == load_config(None, [])
    # ...and it really is the preset file, not just the pydantic defaults.
    assert default.model.name == "tiny"
    assert default.rollout.max_tokens == 96
    assert default.learner.lr == pytest.approx(2e-3)
    assert default.train.warmup.enabled is True
    assert default != Config()


def test_tiny_cpu_fits_the_local_ray_it_starts():
    cfg = load_config("tiny-cpu")
    # Roles take turns on the 2 real cores; the logical CPUs of the local Ray must fit every actor.
    need = (cfg.rollout.num_workers * cfg.rollout.num_cpus + cfg.learner.world_size * cfg.learner.num_cpus
            + cfg.reward.num_actors * cfg.reward.num_cpus)
    assert need <= cfg.cluster.local_num_cpus
    assert cfg.learner.world_size == 1
    assert cfg.rollout.num_workers == 1
    assert cfg.rollout.num_gpus == 0
    assert cfg.learner.num_gpus == 0


@pytest.mark.parametrize(
    "ref",
    ["tiny-cpu", "tiny-cpu.yaml", "configs/tiny-cpu.yaml", str(PRESETS_DIR / "tiny-cpu.yaml"),
     PRESETS_DIR / "tiny-cpu.yaml"],
)
def test_preset_lookup_by_name_and_path(ref, monkeypatch):
    monkeypatch.chdir(REPO)
    assert resolve_path(ref).resolve() == (PRESETS_DIR / "tiny-cpu.yaml").resolve()
    assert load_config(ref) == load_config("tiny-cpu")


def test_preset_name_works_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config("qwen2.5-7b-fund").model.lora.r == 16
    assert load_config("tiny-cpu").model.name == "tiny"


def test_an_explicit_path_wins_over_the_preset_of_the_same_name(tmp_path):
    # A user's copy named like a preset must be the file that is read.
    copy = tmp_path / "tiny-cpu.yaml"
    shutil.copy(PRESETS_DIR / "tiny-cpu.yaml", copy)
    data = yaml.safe_load(copy.read_text())
    data["train"]["steps"] = 7
    copy.write_text(yaml.safe_dump(data))
    assert load_config(copy).train.steps == 7
    assert load_config(str(copy)).train.steps == 7
    assert (load_config("tiny-cpu").train.steps
            == yaml.safe_load((PRESETS_DIR / "tiny-cpu.yaml").read_text())["train"]["steps"])


def test_a_missing_path_is_not_silently_replaced_by_a_preset(tmp_path):
    # `<somewhere>/tiny-cpu.yaml` that does not exist must be an error, not configs/tiny-cpu.yaml.
    missing = tmp_path / "no-such-dir" / "tiny-cpu.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(missing)
    assert "no-such-dir" in str(info.value)


def test_the_default_preset_fits_a_plain_two_core_head():
    """`ray start --head` on a 2-core machine offers 2 CPUs: the roles, alive at once, must fit."""
    from actors.driver.preflight import resource_problems

    cfg = load_config("tiny-cpu")
    assert resource_problems(cfg, {"CPU": 2.0}) == []
    assert resource_problems(cfg, {"CPU": 1.0})  # and a smaller cluster is told what to set
    assert cfg.train.checkpoint_every == 10 and cfg.train.resume == "auto"


def test_the_gpu_preset_overlaps_generation_and_learning_with_adapter_serving():
    cfg = load_config("qwen2.5-7b-fund")
    assert cfg.train.pipeline.kind == "one_step_off" and cfg.rollout.serve_mode == "adapter"
    assert cfg.algorithm.loss.tis_cap is not None  # the stale batches are importance-weighted

"""Presets compose: `extends:` merges a base under a file, `--print-config` shows the result, and a
`--set task.name` that leaves another task's options behind is refused with how to replace the section."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from configs.loader import ConfigError, load_config, load_data, merge

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, data: dict | str) -> Path:
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def test_merge_merges_mappings_and_replaces_lists():
    base = {"a": {"x": 1, "y": [1, 2], "z": {"k": 1}}, "b": 2}
    assert merge(base, {"a": {"y": [3], "z": {"j": 2}}}) == {"a": {"x": 1, "y": [3], "z": {"k": 1, "j": 2}},
                                                             "b": 2}
    assert base["a"]["y"] == [1, 2]  # the base is not changed


def test_a_file_gives_only_what_differs(tmp_path):
    f = _write(tmp_path / "mine.yaml", {"extends": "tiny-cpu", "train": {"steps": 7}, "rollout": {"n": 4}})
    cfg, base = load_config(f), load_config("tiny-cpu")
    assert cfg.train.steps == 7 and cfg.rollout.n == 4
    assert cfg.train.warmup == base.train.warmup and cfg.task == base.task and cfg.model == base.model


def test_extends_chains_and_resolves_paths_next_to_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub" / "base.yaml", {"extends": "tiny-cpu", "train": {"steps": 9, "seed": 3}})
    f = _write(tmp_path / "sub" / "top.yaml", {"extends": "base.yaml", "train": {"steps": 5}})
    cfg = load_config(f)
    assert (cfg.train.steps, cfg.train.seed) == (5, 3)
    assert [p.name for p in load_data(f)[1]] == ["tiny-cpu.yaml", "base.yaml", "top.yaml"]


def test_a_cycle_and_a_missing_base_are_refused(tmp_path):
    _write(tmp_path / "a.yaml", {"extends": "b.yaml"})
    _write(tmp_path / "b.yaml", {"extends": "a.yaml"})
    with pytest.raises(ConfigError, match="makes a cycle"):
        load_config(tmp_path / "a.yaml")
    _write(tmp_path / "c.yaml", {"extends": "no-such-preset"})
    with pytest.raises(ConfigError, match="extends 'no-such-preset': config file not found"):
        load_config(tmp_path / "c.yaml")


def test_naming_another_task_replaces_the_base_task_section(tmp_path):
    f = _write(tmp_path / "ds.yaml",
               {"extends": "tiny-cpu", "task": {"name": "dataset", "train_file": "x.jsonl"}})
    cfg = load_config(f)
    assert cfg.task.name == "dataset" and cfg.task.options == {}  # not the fund assistant's options


def test_set_task_name_over_another_tasks_options_is_refused_with_the_way_out():
    with pytest.raises(ConfigError) as info:
        load_config("tiny-cpu", ["task.name=dataset"])
    msg = str(info.value)
    assert "belong to task 'fund_assistant'" in msg and "--set 'task={name: dataset, options: {...}}'" in msg
    cfg = load_config("tiny-cpu", ["task={name: dataset, train_file: x.jsonl}"])  # the way it names
    assert cfg.task.name == "dataset" and cfg.task.options == {}


@pytest.mark.parametrize("name", ["tiny-cpu-agent", "qwen2.5-7b-fund-agent", "tiny-cpu-reasoning"])
def test_shipped_presets_extend_their_base(name):
    from configs.loader import PRESETS_DIR

    assert "extends" in yaml.safe_load((PRESETS_DIR / f"{name}.yaml").read_text())


def test_print_config_prints_what_loads_back_the_same(tmp_path):
    p = subprocess.run([sys.executable, "train.py", "--config", "tiny-cpu-agent", "--set", "train.steps=3",
                        "--print-config"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    f = _write(tmp_path / "printed.yaml", p.stdout)
    assert load_config(f) == load_config("tiny-cpu-agent", ["train.steps=3"])
    assert "ngrpo-ray: Ray" not in p.stdout  # it printed and exited: nothing started


def test_replace_swaps_a_bases_dataset_mix_and_print_config_shows_it(tmp_path):
    """`!replace` on a mapping: the child's map stands alone (without it, the base's datasets stay)."""
    merged = _write(tmp_path / "merged.yaml", "extends: tiny-cpu-reasoning\n"
                    "task:\n  options:\n    datasets:\n      chain_sum: {weight: 1}\n")
    replaced = _write(tmp_path / "replaced.yaml", "extends: tiny-cpu-reasoning\n"
                      "task:\n  options:\n    datasets: !replace\n      chain_sum: {weight: 1}\n")
    base = set(load_config("tiny-cpu-reasoning").task.options["datasets"])
    assert set(load_config(merged).task.options["datasets"]) == base | {"chain_sum"}
    cfg = load_config(replaced)
    assert set(cfg.task.options["datasets"]) == {"chain_sum"}
    base = load_config("tiny-cpu-reasoning")
    assert cfg.task.options["size"] == base.task.options["size"]  # the rest merged
    out = subprocess.run([sys.executable, "train.py", "--config", str(replaced), "--print-config"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    printed = yaml.safe_load(out.stdout)
    assert list(printed["task"]["options"]["datasets"]) == ["chain_sum"]


def test_replace_on_a_list_or_a_scalar_is_refused(tmp_path):
    f = _write(tmp_path / "bad.yaml", "extends: tiny-cpu\nreward:\n  functions: !replace [{name: gt}]\n")
    with pytest.raises(ConfigError, match="!replace applies to a mapping"):
        load_config(f)

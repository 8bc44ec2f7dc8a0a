"""Values under `cluster.env_vars` are secrets: no config error repeats them, however they came in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from configs.loader import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
CANARY = "hf_CANARY7f3a9c21e5"


def _message(path="tiny-cpu", overrides=None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return str(info.value)


def test_a_config_error_on_the_command_line_does_not_print_the_token(tmp_path):
    p = subprocess.run([sys.executable, "train.py", "--set", f"train.run_dir={tmp_path}",
                        "--set", f"cluster.env_vars.HF_TOKEN={CANARY}", "--set", "train.steps=-1"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "train.steps" in p.stderr
    assert CANARY not in p.stdout + p.stderr
    assert "HF_TOKEN=<redacted>" in p.stderr  # the key is still named, so the user sees what was given


@pytest.mark.parametrize("overrides", [
    [f"cluster.env_vars={{API_TOKEN: {CANARY}}}", "train.steps=-1"],  # a mapping given to --set
    [f"cluster.env_vars={{API_TOKEN: {CANARY}", "train.steps=3"],  # not valid YAML
    [f"cluster.env_vars.API_TOKEN={CANARY}", f"train.run_name={CANARY}/.."],  # quoted by another key's error
    [f"cluster.env_vars.API_TOKEN={CANARY}", "cluster.env_vars.N=[1, 2]", "train.steps=-1"],
    [f"cluster={{env_vars: {{API_TOKEN: {CANARY}}}, local_num_cpus: 0}}"],
])
def test_no_error_message_repeats_an_env_var_value(overrides):
    msg = _message(overrides=overrides)
    assert CANARY not in msg, msg


def test_a_yaml_file_error_does_not_quote_the_line(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text(f"cluster:\n  env_vars:\n    TOKEN: {CANARY}: x\n")  # PyYAML would quote this line
    msg = _message(f)
    assert "not valid YAML" in msg and "line" in msg and CANARY not in msg


def test_a_numeric_token_from_the_command_line_is_kept_as_typed():
    cfg = load_config("tiny-cpu", ["cluster.env_vars.TOKEN=0123", "cluster.env_vars.OTHER=1e5"])
    assert cfg.cluster.env_vars == {"TOKEN": "0123", "OTHER": "1e5"}  # not octal 83, not 100000.0


def test_a_numeric_value_in_a_file_is_refused_by_name_only(tmp_path):
    f = tmp_path / "num.yaml"
    f.write_text("cluster:\n  env_vars: {TOKEN: 918273645}\n")
    msg = _message(f)
    assert "cluster.env_vars" in msg and "TOKEN" in msg and "quote" in msg
    assert "918273645" not in msg

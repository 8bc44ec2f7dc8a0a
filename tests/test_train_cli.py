"""train.py and evaluate.py refuse bad input with one clear message and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_bad_config_value_is_one_message():
    p = _run("train.py", "--set", "rollout.temperature=-1")
    assert p.returncode == 2
    assert "rollout.temperature" in p.stderr and "Traceback" not in p.stderr


def test_unknown_key_and_missing_file():
    p = _run("train.py", "--set", "train.stepz=3")
    assert p.returncode == 2 and "train.stepz" in p.stderr and "steps" in p.stderr
    p = _run("train.py", "--config", "nope/missing.yaml")
    assert p.returncode == 2 and "missing.yaml" in p.stderr and "Traceback" not in p.stderr


def test_evaluate_rejects_missing_adapter():
    p = _run("evaluate.py", "--adapter", "/nonexistent/adapter")
    assert p.returncode == 2 and "/nonexistent/adapter" in p.stderr and "Traceback" not in p.stderr


def _refused(tmp_path: Path, *sets: str) -> str:
    """Run train.py with `sets`; it must exit 2 before Ray starts, with one message and no traceback."""
    args = ["train.py", "--set", f"train.run_dir={tmp_path}"]
    for s in sets:
        args += ["--set", s]
    p = _run(*args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "Started a local Ray" not in p.stdout + p.stderr
    return p.stderr


def test_non_finite_numbers_and_unsafe_run_names_are_refused(tmp_path):
    assert "reward.functions.0.weight" in _refused(tmp_path, "reward.functions=[{name: gt, weight: .nan}]")
    assert "reward.timeout_s" in _refused(tmp_path, "reward.timeout_s=.inf")
    for name in ("../../x", "/tmp/abs", ".hidden"):
        assert "train.run_name" in _refused(tmp_path, f"train.run_name={name}")


def test_reward_paths_data_files_and_prompt_lengths_are_checked_before_ray(tmp_path):
    err = _refused(tmp_path, "reward.functions=[{name: 'no_such_module:fn'}]")
    assert "reward.functions[0].name" in err and "no_such_module" in err
    err = _refused(tmp_path, "reward.functions=[{name: 'json:__doc__'}]")
    assert "reward.functions[0].name" in err and "not callable" in err
    assert "does not exist" in _refused(tmp_path, f"task.train_file={tmp_path}/missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "x"}\n')
    assert f"{bad}:1" in _refused(tmp_path, f"task.train_file={bad}")
    err = _refused(tmp_path, "rollout.max_model_len=128", "rollout.max_tokens=96")
    assert "rollout.max_model_len" in err and "prompts do not leave" in err


def test_a_run_directory_that_cannot_be_written_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    err = _refused(tmp_path, f"train.run_dir={blocker}", "train.run_name=x")
    assert "train.run_dir" in err and "cannot write" in err


def test_resume_modes_are_checked(tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    (run / "config.json").write_text("{}")
    err = _refused(tmp_path, "train.run_name=old", "train.resume=never")
    assert "train.resume=never" in err and "exists" in err
    err = _refused(tmp_path, "train.run_name=new", f"train.resume={tmp_path}/nowhere")
    assert "not a complete checkpoint" in err


def short_reward(prompts, completions, **kwargs):
    """One value short: a reward's most common slip."""
    return [1.0] * (len(completions) - 1)


def test_a_dataset_and_its_rewards_are_checked_on_the_first_rows_and_nothing_is_left(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(8)))
    runs = tmp_path / "runs"
    base = [f"train.run_dir={runs}", f"task={{name: dataset, train_file: {data}}}", "train.sampling=shuffle"]

    def train(*sets: str) -> subprocess.CompletedProcess:
        return _run("train.py", *[x for s in [*base, *sets] for x in ("--set", s)])

    def refused(reward: str) -> str:
        p = train("train.warmup.enabled=false", f"reward.functions=[{{name: '{reward}'}}]")
        assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
        assert "Traceback" not in p.stderr and "Started a local Ray" not in p.stdout + p.stderr
        assert not runs.exists() or not any(runs.iterdir()), list(runs.iterdir())  # no run folder left
        return p.stderr

    # TRL's accuracy_reward reads a `solution` column this dataset does not have
    err = refused("trl.rewards:accuracy_reward")
    assert ("reward.functions[0] (trl.rewards:accuracy_reward): needs the column 'solution', which "
            f"task.train_file {data} row 1 does not have (the columns a reward gets: answer)") in err
    # a reward written for message completions, on a standard (string) prompt: its own exception
    err = refused("examples.dataset_rewards.rewards:exact_answer")
    assert "called on 2 rows with placeholder completions, it raised TypeError: string indices" in err
    err = refused("tests.test_train_cli:short_reward")
    assert "it returned 1 values for 2 completions" in err
    # a warm-up on a task without targets (the reward opted out of the call)
    p = train("reward.functions=[{name: 'tests.test_train_cli:short_reward', preflight: false}]")
    assert p.returncode == 2 and "set task.options.warmup_column" in p.stderr, p.stderr[-2000:]


def test_the_fund_assistants_reward_on_another_dataset_is_refused(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(4)))
    p = _run("train.py", "--set", f"train.run_dir={tmp_path / 'runs'}", "--set",
             f"task={{name: dataset, train_file: {data}}}", "--set", "train.warmup.enabled=false")
    assert p.returncode == 2 and "reward.functions[0] (gt): needs the column 'solution'" in p.stderr, p.stderr

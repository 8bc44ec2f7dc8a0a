"""Resuming loads a checkpoint's pickles, i.e. runs code: only checkpoints under the run root (or a folder
the user lists in train.resume_trusted_dirs) that belong to the user and that no one else can write are
loaded. Plain files in tmp_path, no Ray."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actors.driver.checkpoints import CheckpointStore
from actors.driver.preflight import PreflightError, resume_plan

NOBODY = 65534


def _checkpoint(run_dir: Path, step: int = 10) -> Path:
    """A real complete checkpoint, written as training writes it."""
    store = CheckpointStore(run_dir)
    tmp = store.begin(step)
    (tmp / "coordinator.json").write_text(f'{{"step": {step}}}')
    (tmp / "learner").mkdir()
    (tmp / "learner" / "mp_rank_00_model_states.pt").write_bytes(b"pickle")
    (run_dir / "config.json").write_text("{}")
    return store.commit(tmp, step)


def _refused(*args, **kwargs) -> str:
    with pytest.raises(PreflightError) as e:
        resume_plan(*args, **kwargs)
    text = "\n".join(e.value.lines)
    assert all(line.startswith("train.resume") for line in e.value.lines), text
    return text


@pytest.fixture
def roots(tmp_path):
    root, other = tmp_path / "runs", tmp_path / "elsewhere"
    root.mkdir()
    other.mkdir()
    return root, other


def test_a_checkpoint_under_the_run_root_is_accepted(roots):
    root, _ = roots
    ckpt = _checkpoint(root / "old")
    plan = resume_plan(str(ckpt), root / "new", root)
    assert plan.resume == ckpt and plan.run_dir == root / "old"
    auto = resume_plan("auto", root / "old", root)
    assert auto.resume == ckpt and auto.run_dir == root / "old"


def test_a_checkpoint_outside_the_run_root_is_refused_unless_allowed(roots):
    root, other = roots
    ckpt = _checkpoint(other / "theirs")
    err = _refused(str(ckpt), root / "new", root)
    assert "outside the run root" in err and "train.resume_trusted_dirs" in err
    assert resume_plan(str(ckpt), root / "new", root, [str(other)]).resume == ckpt
    assert resume_plan(str(ckpt), root / "new", root, [str(other / "theirs")]).resume == ckpt
    assert "outside the run root" in _refused(str(ckpt), root / "new", root, [str(other / "nope")])


def test_a_link_under_the_run_root_to_a_checkpoint_outside_it_is_refused(roots):
    root, other = roots
    ckpt = _checkpoint(other / "theirs")
    (root / "linked").symlink_to(other / "theirs")
    assert "outside the run root" in _refused(str(root / "linked" / "checkpoints" / ckpt.name), root / "new",
                                              root)


def test_auto_refuses_a_step_folder_linked_out_of_the_run(roots):
    root, other = roots
    _checkpoint(root / "run", 10)
    foreign = _checkpoint(other / "theirs", 20)
    # complete() skips links, so the linked step_00020 is not even a candidate...
    (root / "run" / "checkpoints" / "step_00020").symlink_to(foreign)
    assert resume_plan("auto", root / "run", root).resume.name == "step_00010"
    # ...and a whole checkpoints folder linked elsewhere leads out of the run.
    (root / "run2").mkdir()
    (root / "run2" / "config.json").write_text("{}")
    (root / "run2" / "checkpoints").symlink_to(other / "theirs" / "checkpoints")
    assert "outside the run's checkpoints folder" in _refused("auto", root / "run2", root)


def test_a_folder_not_named_like_a_checkpoint_is_refused(roots):
    root, _ = roots
    ckpt = _checkpoint(root / "old")
    odd = root / "old" / "checkpoints" / "mine"
    ckpt.rename(odd)
    assert "step_NNNNN" in _refused(str(odd), root / "new", root)


@pytest.mark.skipif(os.getuid() != 0, reason="changing a file's owner needs root")
@pytest.mark.parametrize("what", ["checkpoint", "file", "run"])
def test_a_checkpoint_owned_by_another_user_is_refused(roots, what):
    root, _ = roots
    ckpt = _checkpoint(root / "old")
    target = {"checkpoint": ckpt, "file": ckpt / "learner" / "mp_rank_00_model_states.pt",
              "run": root / "old"}[what]
    os.chown(target, NOBODY, NOBODY)
    err = _refused(str(ckpt), root / "new", root)
    assert f"{target} belongs to uid {NOBODY}" in err and "chmod -R go-w" in err
    assert f"{target} belongs to uid {NOBODY}" in _refused("auto", root / "old", root)


@pytest.mark.parametrize("what,mode", [("file", 0o664), ("file", 0o666), ("checkpoint", 0o775),
                                       ("checkpoints", 0o777), ("run", 0o1777)])
def test_a_checkpoint_others_can_write_is_refused(roots, what, mode):
    root, other = roots
    ckpt = _checkpoint(other / "theirs")
    target = {"file": ckpt / "coordinator.json", "checkpoint": ckpt, "checkpoints": ckpt.parent,
              "run": other / "theirs"}[what]
    os.chmod(target, mode)
    err = _refused(str(ckpt), root / "new", root, [str(other)])  # allowed, yet not trusted
    assert f"{target} is writable by" in err


def test_a_link_inside_a_checkpoint_is_refused(roots, tmp_path):
    root, _ = roots
    ckpt = _checkpoint(root / "old")
    (tmp_path / "payload.pt").write_bytes(b"pickle")
    (ckpt / "learner" / "extra.pt").symlink_to(tmp_path / "payload.pt")
    assert "is a symbolic link" in _refused(str(ckpt), root / "new", root)


def test_preflight_takes_the_run_root_and_trusted_dirs_from_the_config(roots, monkeypatch):
    import actors.driver.preflight as pf
    from configs.loader import load_config

    root, other = roots
    ckpt = _checkpoint(other / "theirs")
    monkeypatch.setattr(pf, "_rewards", lambda cfg: [])
    monkeypatch.setattr(pf, "_task", lambda cfg: [])
    monkeypatch.setattr(pf, "config_changes", lambda cfg, run_dir: [])
    sets = [f"train.run_dir={root}", f"train.resume={ckpt}"]
    with pytest.raises(PreflightError, match="outside the run root"):
        pf.preflight(load_config("tiny-cpu", sets), root / "new")
    cfg = load_config("tiny-cpu", [*sets, f"train.resume_trusted_dirs=[{other}]"])
    assert pf.preflight(cfg, root / "new").resume == ckpt

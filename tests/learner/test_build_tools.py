"""The learner builds DeepSpeed's ops with the environment's ninja, whatever PATH it was started with."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from learner.build_tools import STALE_LOCK_S, clear_stale_build_locks, use_environment_ninja


def test_the_environments_bin_folder_goes_first_once(monkeypatch):
    here = str(Path(sys.executable).parent)
    assert (Path(here) / "ninja").is_file()  # DeepSpeed depends on the ninja package
    monkeypatch.setenv("PATH", os.pathsep.join(["/usr/bin", here, "/bin"]))
    use_environment_ninja()
    assert os.environ["PATH"].split(os.pathsep) == [here, "/usr/bin", "/bin"]
    use_environment_ninja()  # again: no second copy
    assert os.environ["PATH"].split(os.pathsep) == [here, "/usr/bin", "/bin"]


def test_an_interpreter_without_ninja_leaves_path_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    use_environment_ninja()
    assert os.environ["PATH"] == "/usr/bin:/bin"


def test_a_lock_left_by_a_killed_build_is_removed_and_a_live_one_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    left, live = tmp_path / "op_a" / "lock", tmp_path / "op_b" / "lock"
    for lock in (left, live):
        lock.parent.mkdir()
        lock.touch()
    old = time.time() - STALE_LOCK_S - 60
    os.utime(left, (old, old))
    assert clear_stale_build_locks() == [left]
    assert not left.exists() and live.exists()


def test_each_python_environment_builds_into_its_own_folder(monkeypatch, tmp_path):
    """Two checkouts with a `.venv` each share the cache: their builds must not overwrite each other."""
    from cluster.runtime import role_env

    monkeypatch.setenv("NGRPO_CACHE", str(tmp_path))
    monkeypatch.setattr(sys, "prefix", "/work/a/.venv")
    a = Path(role_env()["TORCH_EXTENSIONS_DIR"])
    assert Path(role_env()["TORCH_EXTENSIONS_DIR"]) == a  # the same environment finds its build again
    monkeypatch.setattr(sys, "prefix", "/work/b/.venv")
    b = Path(role_env()["TORCH_EXTENSIONS_DIR"])
    assert a != b and a.parent == b.parent == tmp_path / "torch_extensions"

"""Checkpoint folders: atomic, found again after a crash at any point, pruned; a full disk is refused."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from actors.driver.checkpoints import CheckpointStore


def _write(store: CheckpointStore, step: int, payload: str = "x") -> None:
    tmp = store.begin(step)
    (tmp / "coordinator.json").write_text(payload)
    store.commit(tmp, step)


def test_newest_complete_checkpoint_and_pruning(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)
    for step in (0, 10, 20):
        _write(store, step)
    assert [p.name for p in store.complete()] == ["step_00010", "step_00020"]  # step 0 pruned
    assert store.latest().name == "step_00020"


def test_a_crash_before_the_rename_leaves_the_previous_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path)
    _write(store, 10)
    tmp = store.begin(20)  # the process dies while writing step 20
    (tmp / "coordinator.json").write_text('{"half":')
    assert store.latest().name == "step_00010"
    assert [p.name for p in store.clean_leftovers()] == [tmp.name] and not tmp.exists()


def test_a_crash_between_rename_and_pointer_finds_the_newer_complete_one(tmp_path):
    store = CheckpointStore(tmp_path)
    _write(store, 10)
    _write(store, 20)
    (store.root / "latest").write_text("step_00010\n")  # as if the pointer update never happened
    assert store.latest().name == "step_00020"
    os.remove(store.root / "step_00020" / "COMPLETE")  # and a folder without its marker is not complete
    assert store.latest().name == "step_00010"


def test_a_full_disk_fails_the_checkpoint_cleanly(tmp_path):
    """The write hits the file size limit (EFBIG, as a full disk gives ENOSPC): the checkpoint fails
    with a message, its temporary folder is gone, and the previous one stays the newest."""
    store = CheckpointStore(tmp_path)
    _write(store, 10)
    script = textwrap.dedent(f"""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of being killed
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        from actors.driver.checkpoints import CheckpointError, CheckpointStore
        store = CheckpointStore({str(tmp_path)!r})
        tmp = store.begin(20)
        try:
            (tmp / "coordinator.json").write_text("x" * 5000)
            store.commit(tmp, 20)
        except (OSError, CheckpointError) as e:
            print("FAILED", type(e).__name__, e)
            import shutil; shutil.rmtree(tmp, ignore_errors=True)
            sys.exit(3)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=os.getcwd())
    assert out.returncode == 3 and "File too large" in out.stdout, out.stdout + out.stderr
    assert store.latest().name == "step_00010"
    assert not any(p.name.startswith(".tmp-") for p in store.root.iterdir())


def test_checkpoints_are_ordered_by_step_number_and_pruning_keeps_the_newest(tmp_path):
    store = CheckpointStore(tmp_path, keep=2)
    for step in (99_998, 99_999, 100_000):  # as text, step_100000 sorts before step_99998
        _write(store, step)
    assert [p.name for p in store.complete()] == ["step_99999", "step_100000"]
    assert store.latest().name == "step_100000"
    # Names that are not exactly what the store writes are no checkpoints, even with a marker.
    for odd in ("step_010", "step_000010", "step_00010.bak"):
        (store.root / odd).mkdir()
        (store.root / odd / "COMPLETE").write_text("10\n")
    assert [p.name for p in store.complete()] == ["step_99999", "step_100000"]


def test_a_latest_pointer_that_is_not_a_checkpoint_name_is_ignored(tmp_path, caplog):
    store = CheckpointStore(tmp_path / "run")
    _write(store, 3)
    elsewhere = tmp_path / "x"  # a complete-looking folder outside the store
    elsewhere.mkdir()
    (elsewhere / "COMPLETE").write_text("9\n")
    for pointer in ("../../x", "step_00003/../../../x", str(elsewhere), "step_00009", "", "step_3"):
        (store.root / "latest").write_text(pointer + "\n")
        caplog.clear()
        assert store.latest() == store.root / "step_00003", pointer
        assert "ignoring" in caplog.text, pointer
    (store.root / "latest").write_text("step_00003\n")
    caplog.clear()
    assert store.latest() == store.root / "step_00003" and "ignoring" not in caplog.text


def test_a_linked_step_folder_is_not_a_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path / "run")
    _write(store, 3)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "COMPLETE").write_text("7\n")
    (store.root / "step_00007").symlink_to(foreign)
    assert store.latest().name == "step_00003"


def test_checkpoints_are_written_writable_by_their_owner_only(tmp_path):
    """A umask of 002 (user-private groups) must not make the run's own checkpoints untrusted."""
    from actors.driver.checkpoints import trust_problems

    old = os.umask(0o002)
    try:
        store = CheckpointStore(tmp_path / "run")
        tmp = store.begin(1)
        (tmp / "learner").mkdir()
        (tmp / "learner" / "state.pt").write_bytes(b"x")
        (tmp / "coordinator.json").write_text("{}")
        final = store.commit(tmp, 1)
    finally:
        os.umask(old)
    assert (tmp_path / "run").stat().st_mode & 0o022 == 0
    assert (final / "learner" / "state.pt").stat().st_mode & 0o777 == 0o644
    assert trust_problems(final, tmp_path / "run") == []

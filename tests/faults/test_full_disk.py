"""A full disk while checkpointing: the run stops with its message, nothing is half-written, and the
newest complete checkpoint resumes on a disk with room."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.faults.harness import STEPS, same_rows, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed, pytest.mark.faults]


@pytest.fixture
def small_disk(tmp_path):
    """A 10 MB file system: room for two checkpoints of the tiny model, not three."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=10m", "tmpfs", str(mnt)],
                      capture_output=True).returncode:
        pytest.skip("cannot mount a small file system here (needs root): no full disk to simulate")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_full_disk_stops_the_run_and_the_newest_checkpoint_resumes(small_disk, tmp_path, request):
    run = start(small_disk, "full")
    code = run.finish()
    out = run.output()
    assert code == 1, out
    assert "error: run stopped" in out and "could not write" in out and "resume with:" in out
    ckpts = small_disk / "full" / "checkpoints"
    newest = (ckpts / "latest").read_text().strip()
    assert (ckpts / newest / "COMPLETE").exists()
    assert not [p for p in ckpts.iterdir() if p.name.startswith(".tmp-")]  # nothing half-written left
    # Moved to a disk with room, the run resumes from that checkpoint and ends as a straight run does.
    roomy = tmp_path / "roomy"
    shutil.copytree(small_disk / "full", roomy / "full")
    again = start(roomy, "full")
    assert again.finish() == 0, again.output()
    assert f"resuming from {roomy / 'full' / 'checkpoints' / newest}" in again.output()
    straight = request.getfixturevalue("straight")  # the session's, after the faulted run is done
    assert len(again.rows()) == STEPS
    same_rows(straight.rows(), again.rows())

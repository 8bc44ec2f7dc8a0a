"""SIGKILL at every point of a checkpoint write: a restart always finds a complete checkpoint.

A child process writes checkpoint 1, then checkpoint 2, and kills itself with SIGKILL at the k-th file
system operation of the second write (each fsync, rename and replace: between the marker and the
rename, between the rename and the `latest` update, ...), for every k until the write gets through.
After each kill the store must name a complete checkpoint, 1 or 2 (2 once its folder was renamed into
place: it is complete by then), whose files are whole, and leave nothing half-written after the
start-up clean-up.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actors.driver.checkpoints import MARKER, CheckpointStore

pytestmark = [pytest.mark.faults]
ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, os, signal, sys
from pathlib import Path
from actors.driver.checkpoints import CheckpointStore

run, kill_at = Path(sys.argv[1]), int(sys.argv[2])
store = CheckpointStore(run, keep=3)

def write(step):
    tmp = store.begin(step)
    (tmp / "coordinator.json").write_text(json.dumps({"step": step, "pad": "x" * 4096}))
    (tmp / "learner").mkdir()
    (tmp / "learner" / "state.bin").write_bytes(bytes([step]) * 65536)
    store.commit(tmp, step)

if not store.latest():
    write(1)
calls = 0
def dying(real):
    def op(*args, **kwargs):
        global calls
        calls += 1
        if calls == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return op
for name in ("fsync", "rename", "replace"):
    setattr(os, name, dying(getattr(os, name)))
write(2)
print("through", calls)
"""


def _child(run: Path, kill_at: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _CHILD, str(run), str(kill_at)], cwd=ROOT,
                          capture_output=True,
                          text=True, timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_a_kill_at_any_point_of_a_checkpoint_write_leaves_a_complete_checkpoint(tmp_path):
    seen = set()
    for kill_at in range(1, 200):
        run = tmp_path / f"k{kill_at}"
        p = _child(run, kill_at)
        if p.returncode == 0:  # the write got past its last operation: every point was tried
            assert p.stdout.startswith("through") and kill_at > 5, p.stdout + p.stderr
            break
        assert p.returncode == -9, p.stderr  # killed where it was told, not by a bug
        store = CheckpointStore(run)
        store.clean_leftovers()
        newest = store.latest()
        assert newest is not None and newest.name in ("step_00001", "step_00002")
        assert (newest / MARKER).is_file()
        step = int(newest.name[-5:])
        assert json.loads((newest / "coordinator.json").read_text())["step"] == step
        assert (newest / "learner" / "state.bin").read_bytes() == bytes([step]) * 65536
        assert not [p for p in (run / "checkpoints").iterdir() if p.name.startswith(".")]  # no leftovers
        seen.add(newest.name)
    else:
        pytest.fail("the write never got through")
    assert seen == {"step_00001", "step_00002"}  # kills before and after the rename were both tried

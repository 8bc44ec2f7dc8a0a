"""Checkpoint folders of a run: written atomically, found again, pruned.

    <run>/checkpoints/step_00010/   coordinator.json, learner/ (every rank's state), adapter/, COMPLETE
    <run>/checkpoints/latest        the name of the newest complete checkpoint

A checkpoint is built in a temporary folder (`.tmp-step_00010-<pid>`); when every file is there, each
is fsync'ed, the `COMPLETE` marker is written, the folder is renamed into place, and only then does
`latest` (itself replaced by a rename) name it. A crash at any moment leaves the previous checkpoint
as the newest complete one; leftovers are removed at the next start. Owns files only: what goes into a
checkpoint is the coordinator's and the learner's business.

>>> import tempfile; store = CheckpointStore(tempfile.mkdtemp(), keep=2)
>>> tmp = store.begin(5); _ = (tmp / "coordinator.json").write_text("{}"); store.commit(tmp, 5).name
'step_00005'
>>> store.latest().name
'step_00005'
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from observe.files import atomic_write_text, fsync_dir

MARKER = "COMPLETE"


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be written or read; the message names the folder and the cause."""


def _fsync_tree(root: Path) -> None:
    for dirpath, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(dirpath))


class CheckpointStore:
    def __init__(self, run_dir: str | Path, keep: int = 3) -> None:
        self.root = Path(run_dir) / "checkpoints"
        self.keep = keep

    @staticmethod
    def name(step: int) -> str:
        return f"step_{step:05d}"

    def begin(self, step: int) -> Path:
        """A fresh temporary folder for the checkpoint of `step`."""
        tmp = self.root / f".tmp-{self.name(step)}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        return tmp

    def commit(self, tmp: Path, step: int) -> Path:
        """Make the folder `tmp` the complete checkpoint of `step` and the newest one; prune old ones."""
        final = self.root / self.name(step)
        try:
            (tmp / MARKER).write_text(f"{step}\n")
            _fsync_tree(tmp)
            if final.exists():  # a rolled-back run writes this step again
                shutil.rmtree(final)
            os.rename(tmp, final)
            fsync_dir(self.root)
            atomic_write_text(self.root / "latest", final.name + "\n")
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            raise CheckpointError(f"could not write checkpoint {final}: {e}") from e
        self._prune()
        return final

    def complete(self) -> list[Path]:
        """Complete checkpoints, oldest first."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.glob("step_*") if (p / MARKER).exists())

    def latest(self) -> Path | None:
        """The newest complete checkpoint: the one `latest` names when it is complete, else the newest
        complete folder (a crash between the rename and the pointer update)."""
        pointer, done = self.root / "latest", self.complete()
        if pointer.exists():
            named = self.root / pointer.read_text(encoding="utf-8").strip()
            if (named / MARKER).exists() and (not done or named == done[-1]):
                return named
        return done[-1] if done else None

    def clean_leftovers(self) -> list[Path]:
        """Remove temporary folders of checkpoints that were never completed; returns them."""
        if not self.root.is_dir():
            return []
        left = [p for p in self.root.iterdir() if p.name.startswith(".tmp-") or
                (p.name.startswith("step_") and not (p / MARKER).exists())]
        for p in left:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        return left

    def _prune(self) -> None:
        for old in self.complete()[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)

"""Checkpoint folders of a run: written atomically, found again, pruned.

    <run>/checkpoints/step_00010/   coordinator.json, learner/ (every rank's state), adapter/, COMPLETE
    <run>/checkpoints/latest        the name of the newest complete checkpoint

A checkpoint is built in a temporary folder (`.tmp-step_00010-<pid>`); when every file is there, each
is fsync'ed, the `COMPLETE` marker is written, the folder is renamed into place, and only then does
`latest` (itself replaced by a rename) name it. A crash at any moment leaves the previous checkpoint
as the newest complete one; leftovers are removed at the next start. Owns files only: what goes into a
checkpoint is the coordinator's and the learner's business.

Loading a checkpoint unpickles torch files, i.e. runs code, so only folders the user alone can have
written are loaded: `trust_problems` says why one is not (actors/driver/preflight.py refuses to resume from
it), and the store drops group and world write permission from what it writes, whatever the umask.
Checkpoints are ordered by step number, not by name (`step_100000` comes after `step_99999`), and
`latest` is a hint that must name a complete `step_NNNNN` folder of this store, never a path.

>>> import tempfile; store = CheckpointStore(tempfile.mkdtemp(), keep=2)
>>> tmp = store.begin(5); _ = (tmp / "coordinator.json").write_text("{}"); store.commit(tmp, 5).name
'step_00005'
>>> store.latest().name
'step_00005'
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
from pathlib import Path

from observe.files import atomic_write_text, fsync_dir

MARKER = "COMPLETE"
# A checkpoint folder's name: `step_` and the step with at least 5 ASCII digits (`\d` would take
# other scripts' digits too).
STEP_NAME = re.compile(r"step_([0-9]{5,})")
SHARED_WRITE = stat.S_IWGRP | stat.S_IWOTH

log = logging.getLogger(__name__)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be written or read; the message names the folder and the cause."""


def step_of(name: str) -> int | None:
    """The step of a checkpoint folder named exactly as `CheckpointStore.name` writes it, else None
    (`step_00010` is 10; `step_010`, `step_000010`, `step_00010/..` are not checkpoint names)."""
    m = STEP_NAME.fullmatch(name)
    if m is None:
        return None
    step = int(m.group(1))
    return step if name == CheckpointStore.name(step) else None


def _drop_shared_write(path: Path) -> None:
    """Clear group and world write on `path` when it is ours: a checkpoint others could have changed is
    refused at resume, and a umask of 002 (Ubuntu's default for user-private groups) would otherwise
    make every checkpoint of the run look that way."""
    try:
        st = os.lstat(path)
        if st.st_uid == os.getuid() and not stat.S_ISLNK(st.st_mode) and st.st_mode & SHARED_WRITE:
            os.chmod(path, stat.S_IMODE(st.st_mode) & ~SHARED_WRITE)
    except OSError:  # not ours to change: trust_problems will say so at resume
        pass


def trust_problems(checkpoint: Path, run_dir: Path, limit: int = 5) -> list[str]:
    """Why the files of `checkpoint` (a resolved folder) must not be loaded: the checkpoint, every file
    and folder in it, its `checkpoints` folder and `run_dir` must belong to the current user and be
    writable by no one else (whoever can write them chooses the code that unpickling runs); links and
    special files have no place in a checkpoint. At most `limit` problems, then a count."""
    uid, out = os.getuid(), []

    def check(path: Path, st: os.stat_result) -> None:
        if stat.S_ISLNK(st.st_mode):
            out.append(f"{path} is a symbolic link")
        elif not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            out.append(f"{path} is not a plain file or folder")
        elif st.st_uid != uid:
            out.append(f"{path} belongs to uid {st.st_uid}, not to you (uid {uid})")
        elif st.st_mode & SHARED_WRITE:
            who = "everyone" if st.st_mode & stat.S_IWOTH else "its group"
            out.append(f"{path} is writable by {who} (mode {stat.S_IMODE(st.st_mode):04o})")

    for path in (run_dir, checkpoint.parent, checkpoint):
        check(path, os.lstat(path))
    for dirpath, dirs, files in os.walk(checkpoint):  # does not descend into linked folders
        for name in dirs + files:
            path = Path(dirpath) / name
            check(path, os.lstat(path))
    if len(out) > limit:
        out = out[:limit] + [f"... and {len(out) - limit} more"]
    return out


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
        for path in (self.root.parent, self.root):  # the run folder and checkpoints/: see trust_problems
            _drop_shared_write(path)
        return tmp

    def commit(self, tmp: Path, step: int) -> Path:
        """Make the folder `tmp` the complete checkpoint of `step` and the newest one; prune old ones."""
        final = self.root / self.name(step)
        try:
            (tmp / MARKER).write_text(f"{step}\n")
            for dirpath, dirs, files in os.walk(tmp):  # learner ranks wrote here under their own umask
                for name in [".", *dirs, *files]:
                    _drop_shared_write(Path(dirpath) / name)
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
        """Complete checkpoints, oldest first by step number (as text `step_100000` would sort before
        `step_99999`, and pruning would delete the newest). Links are skipped: the store writes none."""
        if not self.root.is_dir():
            return []
        found = [(step, p) for p in self.root.iterdir()
                 if (step := step_of(p.name)) is not None and not p.is_symlink() and (p / MARKER).is_file()]
        return [p for _, p in sorted(found)]

    def latest(self) -> Path | None:
        """The newest complete checkpoint by step number. `latest` normally names it; when it names an
        older one (a crash between the rename and the pointer update) the newer folder wins, and when
        it is not the name of a complete checkpoint here (`../x`, a path, garbage) it is ignored with
        a warning: it is never followed as a path."""
        done = self.complete()
        pointer = self.root / "latest"
        try:
            st = os.lstat(pointer)
        except OSError:
            return done[-1] if done else None
        named = None
        if stat.S_ISREG(st.st_mode):  # not a link, a FIFO that would block the read, ...
            with open(pointer, "rb") as f:
                named = f.read(64).decode("utf-8", "replace").strip()
        if named is None or step_of(named) is None or self.root / named not in done:
            log.warning("ignoring %s: %r is not the name of a complete checkpoint (step_NNNNN) in %s; using "
                        "the newest complete one by step number", pointer, named, self.root)
        return done[-1] if done else None

    def clean_leftovers(self) -> list[Path]:
        """Remove temporary folders of checkpoints that were never completed, and a `latest` pointer's
        temporary file (a kill between its write and its rename); returns them."""
        if not self.root.is_dir():
            return []
        left = [p for p in self.root.iterdir() if p.name.startswith((".tmp-", ".latest.tmp-")) or
                (p.name.startswith("step_") and not (p / MARKER).exists())]
        for p in left:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        return left

    def _prune(self) -> None:
        for old in self.complete()[: -self.keep]:
            shutil.rmtree(old, ignore_errors=True)

"""One job per run directory: a lock the driver holds for its whole life, and run names that cannot collide.

Two drivers on one run directory would wreck each other: the second one would remove the first one's
files (a run without a complete checkpoint starts over) or resume from its checkpoint while it is still
writing. The driver takes an exclusive `flock` on `<run>/.lock` before it decides anything about the
run; the kernel drops the lock when the process ends, however it ends (kill -9 included), so a crashed
run never leaves a stale lock behind and a restart with the same command gets it at once. The file
itself stays (removing a lock file races with a job that is opening it) and only says who holds it.

>>> import tempfile; from pathlib import Path; run = Path(tempfile.mkdtemp()) / "r"
>>> lock = RunLock(run); lock.acquire(); (run / ".lock").exists()
True
>>> lock.release()
"""

from __future__ import annotations

import fcntl
import os
import secrets
import socket
import time
from pathlib import Path

LOCK_FILE = ".lock"


class RunInUse(RuntimeError):
    """Another live job holds the run directory."""


class RunLock:
    def __init__(self, run_dir: str | Path) -> None:
        self.run_dir = Path(run_dir)
        self.fd: int | None = None

    def acquire(self) -> None:
        """Take the lock or raise RunInUse naming the holder. OSError when the folder cannot be made
        (the caller's write check reports that one)."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.run_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another job"
            os.close(fd)
            raise RunInUse(f"run {self.run_dir.name!r} is in use by {holder} ({self.run_dir}); "
                           "wait for it to end, or choose another train.run_name") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, (f"pid {os.getpid()} on {socket.gethostname()} "
                       f"since {time.strftime('%Y-%m-%d %H:%M:%S')}\n").encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock
            self.fd = None


def new_run_name(root: Path, preset: str) -> str:
    """A fresh run name under `root`: time, a random part, the preset. Its folder is created here, with
    an exclusive mkdir, so two jobs started in the same second never get the same name."""
    root.mkdir(parents=True, exist_ok=True)
    while True:
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}-{preset}"
        try:
            (root / name).mkdir()
            return name
        except FileExistsError:
            continue

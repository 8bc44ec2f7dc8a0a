"""The one `ninja` DeepSpeed builds its ops with, whatever the PATH of the process that starts a rank.

DeepSpeed builds its CPU ops (the shared-memory all-reduce) on first use, with whichever `ninja` PATH
finds first, into a persistent folder (`TORCH_EXTENSIONS_DIR`, cluster/runtime.py). Two ninja versions
keep build logs that do not agree (1.11 and 1.13 hash a command differently), so a rank started from a
shell whose PATH finds the system's ninja and one whose PATH finds the environment's each took the other's
build for stale and compiled the op again: two compilers for 35-85 s at the start of the learner, every
time the two kinds of start alternated (a `ray start` from the environment's bin folder, then a
`python train.py`). The environment's own ninja (DeepSpeed depends on the `ninja` package) goes first.

A build takes a lock file in the op's folder and removes it when done; a rank killed during a build
(kill -9, a lost node) leaves it, and every later rank would wait for it forever (torch waits with no
deadline). A lock far older than any build is removed first.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)
STALE_LOCK_S = 600.0  # a build takes 35-85 s on 2 busy cores


def use_environment_ninja() -> None:
    """Put the interpreter's bin folder first on PATH when it holds a `ninja` (no change otherwise)."""
    here = Path(sys.executable).parent
    if not (here / "ninja").is_file():
        return
    parts = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and Path(p) != here]
    os.environ["PATH"] = os.pathsep.join([str(here), *parts])


def clear_stale_build_locks(max_age_s: float = STALE_LOCK_S) -> list[Path]:
    """Remove the build locks under TORCH_EXTENSIONS_DIR older than `max_age_s`; returns them."""
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if not root or not Path(root).is_dir():
        return []
    removed = []
    for lock in Path(root).glob("*/lock"):
        try:
            if time.time() - lock.stat().st_mtime > max_age_s:
                lock.unlink()
                removed.append(lock)
                log.warning("removed %s, left by a build that did not finish", lock)
        except FileNotFoundError:  # the build it belonged to just finished
            continue
    return removed

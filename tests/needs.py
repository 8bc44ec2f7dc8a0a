"""A test that needs a program pip cannot install (`make test-all` installs what it can).

Where the program is missing the test is skipped, with the line that installs it; under CI=true (what CI
services set, and .ci/run) it fails instead: a CI run must not pass by skipping what it is there to run.
"""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def program(name: str, install: str) -> str:
    """The path of `name` on PATH; if there is none, skip the test naming `install` (fail it under CI)."""
    path = shutil.which(name)
    if path is None:
        why = f"no `{name}` on PATH: install it ({install}), or run `make test-all`, which does where it can"
        if in_ci():
            pytest.fail(f"{why} (CI=true: a missing program fails the run instead of skipping)")
        pytest.skip(why)
    return path

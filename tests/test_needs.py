"""tests/needs.py: a missing program skips its test with the line that installs it, and fails it under CI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.needs import program

GONE = "ngrpo-no-such-program"


def test_a_missing_program_skips_outside_ci_with_its_install_line(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        program(GONE, "apt-get install x")
    assert f"no `{GONE}` on PATH: install it (apt-get install x)" in str(skipped.value)


@pytest.mark.parametrize("value", ["true", "True", "1"])
def test_a_missing_program_fails_under_ci(monkeypatch, value):
    monkeypatch.setenv("CI", value)
    with pytest.raises(pytest.fail.Exception, match=r"apt-get install x.*CI=true"):
        program(GONE, "apt-get install x")


def test_a_program_on_path_is_found_in_and_outside_ci(monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    for ci in ("true", "false"):
        monkeypatch.setenv("CI", ci)
        assert Path(program(Path(sys.executable).name, "-")).samefile(sys.executable)

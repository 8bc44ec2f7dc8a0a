"""`python -m bench.warmup_curve` on a preset: one table row per measurement, shares that add up."""

from __future__ import annotations

import re

import pytest

from bench.warmup_curve import main


def test_the_curve_prints_a_row_every_n_steps_with_each_group(capsys):
    assert main(["--config", "examples/dataset_rewards/config.yaml", "--steps", "4", "--every", "2",
                 "--probe", "10"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("| step"))
    assert header.split("|")[4:6] == [" carry ", " no_carry "]  # the task's groups, as columns
    rows = [line for line in out.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [int(r.split("|")[1]) for r in rows] == [2, 4]
    for r in rows:
        cells = [float(c.strip().rstrip("%")) for c in r.strip().strip("|").split("|")[1:]]
        assert all(0.0 <= c <= 100.0 for c in cells)
    assert "on 10 probe, 20 held-out rows" in out


def test_a_probe_as_large_as_the_training_rows_is_refused(capsys):
    with pytest.raises(SystemExit, match="has only 80 training rows"):  # nothing left to warm up on
        main(["--config", "examples/dataset_rewards/config.yaml", "--probe", "80"])

"""A run whose rewards never differ says so (and stops when asked to), and a run's completions are kept:
every eval answer with its scores and verdict, a sample of training completions every N steps, both in
the report. In-process roles with the real learner and reward actors; the rollout worker is scripted
(tests/actors/scripted_worker.py) so that a test chooses what the model says."""

from __future__ import annotations

import json

import pytest

from actors.errors import RunStopped
from observe.report import write_report
from tests.actors.test_coordinator import _answers, _run

pytestmark = pytest.mark.deepspeed


def _always_junk(row: dict, n: int, stage) -> list[str]:
    """Every answer the same unparseable text: every reward at its minimum, every group zero spread."""
    return ["I think the answer is yes."] * (1 if stage == "eval" else n)


def _right_or_wrong(row: dict, n: int, stage) -> list[str]:
    a = _answers(row)
    return [a["right"]] if stage == "eval" else [a["right" if i % 2 else "wrong"] for i in range(n)]


def _events(coord) -> list[dict]:
    return [json.loads(x) for x in (coord.run.dir / "events.jsonl").read_text().splitlines()]


def test_a_reward_never_earned_is_named_once_with_a_completion(tmp_path, caplog):
    coord, rows = _run(tmp_path, ["train.no_signal_steps=2"], _always_junk, 3)
    found = [e for e in _events(coord) if e["event"] == "no_signal"]
    assert len(found) == 1 and found[0]["step"] == 2
    assert found[0]["scores"]["gt"] == min(r["reward_mean"] for r in rows)  # the reward at its minimum
    assert found[0]["completion"] == "I think the answer is yes."
    assert "gt=" in found[0]["message"] and "no reward signal in the first 2 steps" in found[0]["message"]
    assert sum("no reward signal" in r.message for r in caplog.records) == 1
    report = write_report(coord.run.dir).read_text()
    assert "step 2: no reward signal in the first 2 steps" in report
    assert "I think the answer is yes." in report


def test_stop_if_no_signal_stops_the_run_with_the_warning(tmp_path):
    with pytest.raises(RunStopped, match="no reward signal in the first 2 steps.*stop_if_no_signal"):
        _run(tmp_path, ["train.no_signal_steps=2", "train.stop_if_no_signal=true"], _always_junk, 4)


def test_rewards_that_differ_raise_no_warning_and_completions_are_kept(tmp_path):
    coord, rows = _run(tmp_path, ["train.no_signal_steps=2", "train.log_completions_every=2",
                                  "train.log_completions=3"], _right_or_wrong, 4)
    assert not [e for e in _events(coord) if e["event"] == "no_signal"]
    # eval answers: one per held-out row, with every reward's score and the judge's verdict
    before = [json.loads(x) for x in (coord.run.dir / "completions_before.jsonl").read_text().splitlines()]
    assert len(before) == coord.eval_tables["before"]["n"] == 4
    assert [r["completion"] for r in before] == [_answers(row)["right"] for row in coord.eval_rows[:4]]
    assert {"scores", "verdict", "prompt", "group"} <= set(before[0])
    assert all(r["verdict"] == 1.0 for r in before)  # the script answers every eval row right
    # training sample: 3 completions at steps 2 and 4, with their rewards
    train = [json.loads(x) for x in (coord.run.dir / "completions_train.jsonl").read_text().splitlines()]
    assert [r["step"] for r in train] == [2, 2, 2, 4, 4, 4]
    assert all(isinstance(r["reward"], float) and "gt" in r["scores"] for r in train)
    report = write_report(coord.run.dir).read_text()
    assert "## What the model said" in report and "- before (1):" in report and "- after (1):" in report

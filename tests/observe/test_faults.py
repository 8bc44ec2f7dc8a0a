"""The faults summary: what a run survived per role, from its events, in the end line and the report."""

from __future__ import annotations

import json

from observe.faults import fault_summary, faults_markdown, format_faults
from observe.report import write_report


def _events():
    return [
        {"event": "placement", "rollout": [], "learner": []},
        {"event": "recovery", "step": 3, "role": "rollout", "index": 1, "cause": "died"},
        {"event": "recovered", "step": 3, "role": "rollout", "index": 1, "seconds": 2.25, "redone": 0},
        {"event": "recovery", "step": 5, "role": "learner", "index": 0, "cause": "died"},
        {"event": "rollback", "step": 4},
        {"event": "recovered", "step": 4, "role": "learner", "index": 0, "seconds": 10.5, "redone": 1},
        {"event": "recovery", "step": 4, "role": "coordinator", "index": 0, "cause": "lost"},
        {"event": "resume", "step": 4},
        {"event": "recovered", "step": 4, "role": "coordinator", "index": 0, "seconds": 30.0, "redone": 2},
        {"event": "recovery", "step": 6, "role": "rollout", "index": 0, "cause": "no answer"},
        {"event": "recovered", "step": 6, "role": "rollout", "index": 0, "seconds": 1.0, "redone": 0},
        {"event": "resume", "step": 6},  # a driver resumed by hand
    ]


def test_each_role_counts_its_faults_their_seconds_and_the_steps_made_again():
    got = {f.role: (f.faults, f.seconds, f.redone) for f in fault_summary(_events())}
    assert got == {"rollout": (2, 3.25, 0), "learner": (1, 10.5, 1), "coordinator": (1, 30.0, 2),
                   "resumed": (1, 0.0, 0)}
    line = format_faults(fault_summary(_events()))
    assert line == ("faults survived: rollout 2 (3.2 s to recover), learner 1 (10.5 s to recover, 1 step "
                    "redone), coordinator 1 (30.0 s to recover, 2 steps redone), resumed by hand 1")


def test_a_run_without_faults_says_so():
    assert fault_summary([{"event": "placement"}, {"event": "setup"}]) == []
    assert format_faults([]) == "faults survived: none"
    assert faults_markdown([])[0].startswith("No faults")


def test_the_report_has_the_faults_table(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in _events()))
    text = write_report(run).read_text()
    assert "| role | faults survived | seconds to recover | steps redone |" in text
    assert "| learner | 1 | 10.5 | 1 |" in text and "| resumed by hand | 1 | — | — |" in text


def test_a_run_that_did_not_learn_says_so():
    from observe.faults import learning_line

    assert learning_line([{"event": "checkpoint", "step": 1}]) is None
    events = [{"event": "reward_failure", "step": 1, "detail": "x"}, {"event": "reward_failure", "step": 1},
              {"event": "no_update", "step": 1, "reason": "every completion's reward failed"},
              {"event": "reward_failure", "step": 2}, {"event": "no_update", "step": 2, "reason": "r"}]
    assert learning_line(events) == ("learning: 3 reward failures in 2 steps; 2 steps without an update "
                                     "(the last, step 2: r)")

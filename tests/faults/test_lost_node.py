"""Scaling out and losing nodes, on a 5-node local Ray cluster (a head without CPUs and four nodes of 2).

The straight run shows the placement: the two rollout workers SPREAD over two nodes, the two learner
ranks PACKed on one. The same run then loses the learner's node (its ranks are placed again on the
nodes left), a node with a rollout worker (no room is left for it, so it waits until a node is added
back) and the node with the reward actors, and ends with the straight run's rows and adapter
(`make lost-node` is the same with eight steps, with its log)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.faults.harness import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.faults, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]


def _events(run):
    return [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines() if x.strip()]


def test_a_run_that_loses_the_learner_node_and_a_worker_node_ends_as_the_straight_run(tmp_path):
    # Six steps with a loss after steps 2, 3 and 4 (`make lost-node`: eight, after 2, 4 and 6), and the
    # lost nodes added back after 8 s instead of 20: the lost rollout worker still finds no room and waits.
    p = subprocess.run([sys.executable, "-m", "tests.faults.lost_node", "--dir", str(tmp_path), "--steps",
                        "6", "--workers-at", "3", "--reward-at", "4", "--add-after", "8"], cwd=ROOT,
                       capture_output=True, text=True, timeout=2400)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    print(p.stdout)
    placement = next(e for e in _events(tmp_path / "straight") if e["event"] == "placement")
    node = {role: {x["node"] for x in placement[role]} for role in ("rollout", "learner", "reward")}
    assert len(node["rollout"]) == 2 and len(node["learner"]) == 1, placement  # SPREAD and PACK
    assert all(x["pid"] for x in placement["rollout"] + placement["learner"])
    assert "placement: 2 learner on 1 node(s), 2 rollout on 2 node(s)" in (
        next((tmp_path).glob("straight.*.log")).read_text())
    lost = _events(tmp_path / "lost")
    moved = {e["moved"] for e in lost if e["event"] == "recovered" and e["placed"]}
    assert {"learner", "rollout", "reward"} <= moved, [e for e in lost if e["event"] == "recovered"]
    # the lost rollout worker had no room until a node came back, 8 s after the loss: it waited for it
    # (the reward actors, a quarter CPU each, find room on the nodes left)
    waited = [e["seconds"] for e in lost if e["event"] == "recovered" and e["moved"] == "rollout"]
    assert waited and min(waited) >= 5, [e for e in lost if e["event"] == "recovered"]
    for role in ("learner", "rollout", "reward"):
        assert f"node removed (holding the {role})" in p.stdout
    assert p.stdout.count("node added") == 2 and "identical: 6 metrics rows" in p.stdout


def test_a_harness_run_that_loses_the_learner_node_and_a_worker_node_ends_as_the_straight_run(tmp_path):
    """The same with episodes an OpenAI harness plays through each worker's gateway (four steps, no reward
    actors): the lost worker's replacement serves its own gateway on the node that takes it."""
    p = subprocess.run([sys.executable, "-m", "tests.faults.lost_node", "--dir", str(tmp_path), "--harness",
                        "--steps", "4", "--learner-at", "1", "--workers-at", "2", "--add-after", "8"],
                       cwd=ROOT, capture_output=True, text=True, timeout=2400)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    print(p.stdout)
    events = _events(tmp_path / "lost")
    moved = {e["moved"] for e in events if e["event"] == "recovered" and e["placed"]}
    assert "learner" in moved, [e for e in events if e["event"].startswith("recover")]
    # The worker's share is played again by a worker on a node that is left (lost_node checks that nothing
    # stays on a lost node); the loss may be noticed as the worker's or, in a call to it, as a step's cause.
    assert any(e["event"] == "recovery" and (e["role"] == "rollout" or "rollout" in e["cause"])
               for e in events), [e for e in events if e["event"].startswith("recover")]
    # a worker of 1.25 CPUs finds no room on the nodes left: it waited for the node added back 8 s later
    waited = [e["seconds"] for e in events if e["event"] == "recovered" and e.get("moved") == "rollout"]
    assert waited and min(waited) >= 5, [e for e in events if e["event"].startswith("recover")]
    assert "node removed (holding the rollout)" in p.stdout and p.stdout.count("node added") == 1
    assert "identical: 4 metrics rows" in p.stdout

"""Scaling out: on a 3-node local cluster the rollout workers land on different nodes (SPREAD), the
two learner ranks share one (PACK), and a short run succeeds end to end."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cluster.runtime import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

OVERRIDES = [
    "rollout.num_workers=2", "rollout.num_cpus=1", "learner.world_size=2", "learner.num_cpus=1",
    "learner.zero_stage=3", "reward.num_actors=2", "reward.num_cpus=0.25", "rollout.n=4", "rollout.max_tokens=24",
    "rollout.kv_cache_memory_bytes=67108864", "train.prompts_per_step=4", "train.steps=2", "train.eval_limit=8",
    "train.warmup.enabled=false", "train.run_name=multinode", "train.progress=false",
]


def test_three_node_run_spreads_rollouts_and_packs_learners(tmp_path):
    p = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "cluster" / "multinode_job.py"), str(tmp_path),
         *[f"--set={o}" for o in OVERRIDES]],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    run = tmp_path / "multinode"
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    placement = next(e for e in events if e["event"] == "placement")
    node = {role: {x["node"] for x in placement[role]} for role in ("rollout", "learner", "reward")}
    assert len(node["rollout"]) == 2, placement  # SPREAD: one worker per node
    assert len(node["learner"]) == 1, placement  # PACK: both ranks on one node
    assert all(x["pid"] for x in placement["rollout"] + placement["learner"])  # and the process of each
    nodes = node["rollout"] | node["learner"] | node["reward"]
    assert len(nodes) == 3  # every node of the cluster took part
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["policy_version"] for r in rows] == [1, 2]  # both steps pushed to both workers
    assert "placement: 2 learner on 1 node(s), 2 rollout on 2 node(s)" in p.stdout

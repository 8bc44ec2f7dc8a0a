"""The GPU preset's layout, run on this machine: `configs/qwen2.5-7b-fund.yaml` itself with only the model,
the device and the counts swapped.

The tiny model in float32 and no GPUs; otherwise the preset's own layout: rollout workers with tensor
parallelism 2 over vLLM's `mp` executor, SPREAD over the nodes, serving the LoRA as an adapter; learner
ranks under ZeRO-3 with gradient checkpointing, STRICT_PACKed on one node; one-step-off. Two workers and
two ranks on a local cluster of three nodes, three steps. On the CPU each worker binds its ranks' threads
to the cores it reserved (`actors/worker/cpu_binding.py`): vLLM's own binding wants a NUMA node per
rank and stops the engine on a machine with one.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.faults.harness import ROOT, start

pytestmark = [pytest.mark.slow, pytest.mark.ray, pytest.mark.vllm, pytest.mark.deepspeed]

SWAPPED = ("model.name=tiny", "model.dtype=float32", "rollout.num_gpus=0", "learner.num_gpus=0",
           "rollout.num_workers=2", "learner.world_size=2", "rollout.num_cpus=1", "learner.num_cpus=1",
           "reward.num_actors=2", "reward.num_cpus=0.25", "rollout.max_model_len=1024",
           "rollout.gpu_memory_utilization=0.5", "cluster.env_vars={}", "cluster.ship_code=false",
           "rollout.call_timeout_s=120", "learner.call_timeout_s=180", "rollout.max_tokens=64")


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    # The nodes share this machine's disk; every process finds the code on the PYTHONPATH (ship_code off).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "object_store_memory": 150 * 1024**2})
    for _ in range(2):
        c.add_node(num_cpus=2, object_store_memory=150 * 1024**2)
    c.wait_for_nodes()
    yield c
    c.shutdown()


def test_the_gpu_preset_layout_runs_on_three_cpu_nodes(cluster, tmp_path):
    # The harness's counts too: 4 prompts x 4 samples a step, no warm-up, a small KV cache.
    run = start(tmp_path, "gpu-layout", *SWAPPED, f"cluster.address={cluster.address}", steps=3,
                config="configs/qwen2.5-7b-fund.yaml")
    code = run.finish(timeout=1200)
    assert code == 0, run.output()[-4000:]
    cfg = json.loads((run.run_dir / "config.json").read_text())
    assert cfg["rollout"]["tensor_parallel_size"] == 2 and cfg["rollout"]["serve_mode"] == "adapter"
    assert cfg["learner"]["zero_stage"] == 3 and cfg["learner"]["gradient_checkpointing"]
    assert cfg["train"]["pipeline"] == {"kind": "one_step_off"}
    where = run.events("placement")[0]
    rollout, learner = [x["node"] for x in where["rollout"]], [x["node"] for x in where["learner"]]
    assert len(set(rollout)) == 2 and len(set(learner)) == 1  # SPREAD workers, one node for the ranks
    rows = run.rows()
    assert [r["policy_version"] for r in rows] == [1, 2, 3]
    assert [r["policy_version_lag_max"] for r in rows] == [0.0, 1.0, 1.0]  # one-step-off
    assert all(r["probe_gap_max"] < 1e-3 for r in rows)  # every push took on both TP ranks
    assert rows[0]["logprob_gap_mean"] < 1e-3  # the on-policy step: vLLM sampled the learner's weights

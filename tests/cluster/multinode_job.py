"""A short training run on a 3-node local Ray cluster (`ray.cluster_utils.Cluster`), in its own process.

Used by test_multinode.py: a separate process so that the test session's own local Ray is untouched.
The nodes are CPU-only with 1 + 2 + 2 logical CPUs, so the placement groups must spread the two
rollout workers over two nodes and can pack the two learner ranks on one.

    python tests/cluster/multinode_job.py RUN_ROOT [--set key=value ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv: list[str]) -> int:
    import ray
    from ray.cluster_utils import Cluster

    run_root, overrides = argv[0], argv[1:]
    store = 150 * 1024**2
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": store})
    for _ in range(2):
        cluster.add_node(num_cpus=2, object_store_memory=store)
    cluster.wait_for_nodes()
    import train

    try:
        return train.main([f"--set=cluster.address={cluster.address}", f"--set=train.run_dir={run_root}", *overrides])
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""A lost node: a run on a multi-node local Ray cluster loses whole nodes and ends bit-identical to the
same run left alone.

    python -m tests.faults.lost_node            # `make lost-node`

Starts a local cluster (`ray.cluster_utils.Cluster`: a head with no CPU and four nodes with 2 each, all
on this machine), runs the fault harness's small steps with two rollout workers, two learner ranks
and two reward actors on it straight, then again while nodes are removed (the node's raylet and every
process of the run on it, as a preempted machine goes):

1. after step `--learner-at`, the node that holds the learner ranks: there is room left, so the
   learner group is placed again on the nodes left and the run goes back to its newest checkpoint;
2. after step `--workers-at`, the node that holds a rollout worker and the most other actors: now the
   cluster has no room for what it held, so that waits (`cluster.node_wait_s`) until a node is added
   back `--add-after` seconds later, and that node takes it;
3. after step `--reward-at`, the node that holds the reward actors, and again a node added later.

Prints the placement before and after each loss and compares the runs: every metrics row (times aside)
and the final adapter's fingerprint must be identical.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.faults.harness import ROLES, ROOT, Run, adapter_fingerprint, same_rows, start

# Two of each role, the learner under ZeRO-3, on a cluster whose nodes each hold at most two CPUs.
LAYOUT = ("rollout.num_workers=2", "rollout.num_cpus=1", "learner.world_size=2", "learner.num_cpus=1",
          "learner.zero_stage=3", "reward.num_actors=2", "reward.num_cpus=0.25", "train.max_restarts=20",
          "cluster.ship_code=false",
          "learner.call_timeout_s=120")
STORE = 150 * 1024**2
# Ray notices a lost node within a few seconds instead of its default half a minute.
FAST_HEALTH = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3,
               "health_check_timeout_ms": 1000}


@dataclass
class LostNodes:
    cluster: object
    run: Run
    phases: list[tuple[str, int, bool]]  # (role whose node goes, after how many rows, add a node after)
    add_after: float
    log: list[dict] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def play(self) -> None:
        try:
            for role, rows, add in self.phases:
                self._wait_rows(rows)
                self._remove(self._node_of(role), f"holding the {role}")
                if add:
                    time.sleep(self.add_after)
                    node = self.cluster.add_node(num_cpus=2, object_store_memory=STORE)
                    rows_now = len(self.run.rows())
                    self.log.append({"what": "node added", "node": node.node_id, "rows": rows_now})
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            self.errors.append(e)

    def _wait_rows(self, n: int) -> None:
        while len(self.run.rows()) < n:
            if self.run.proc.poll() is not None:
                raise RuntimeError(f"the run exited before step {n}")
            time.sleep(0.2)

    def _node_of(self, role: str) -> str:
        """Of the nodes that hold the role, the one holding the most actors of the run."""
        where = self.run.placement()
        count = Counter(x["node"] for xs in where.values() for x in xs)
        return max({x["node"] for x in where[role]}, key=lambda n: (count[n], n))

    def _remove(self, node_id: str, why: str) -> None:
        """The node's raylet and every process of the run on it, at once."""
        node = next(n for n in self.cluster.list_all_nodes() if n.node_id == node_id)
        where = self.run.placement()
        pids = [x["pid"] for role in where.values() for x in role if x["node"] == node_id]
        held = {role: sum(x["node"] == node_id for x in xs) for role, xs in where.items()}
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.cluster.remove_node(node, allow_graceful=False)
        self.log.append({"what": f"node removed ({why})", "node": node_id, "rows": len(self.run.rows()),
                         "held": {r: n for r, n in held.items() if n}})


def start_cluster():
    """A head with no CPU (the driver and the coordinator, which take none, and nothing else: a lost
    node is never the head) and four nodes of 2 CPUs: room for the run's 4.5 CPUs after one loss, not
    after two."""
    from ray.cluster_utils import Cluster

    # The nodes share this machine's disk: a working_dir shipped with the job would be one folder for all
    # of them, which Ray cleans up when the node that fetched it goes. The nodes (and every worker) find
    # the code on the PYTHONPATH they inherit from here instead, as on a cluster with a shared filesystem.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "object_store_memory": STORE, "_system_config": FAST_HEALTH})
    for _ in range(4):
        cluster.add_node(num_cpus=2, object_store_memory=STORE)
    cluster.wait_for_nodes()
    return cluster


def describe(where: dict[str, list[dict]], names: dict[str, str]) -> str:
    return "; ".join(f"{role}: " + ", ".join(names.get(x["node"], x["node"][:8]) for x in xs)
                     for role, xs in where.items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--learner-at", type=int, default=2)
    p.add_argument("--workers-at", type=int, default=4)
    p.add_argument("--reward-at", type=int, default=6)
    p.add_argument("--add-after", type=float, default=20.0)
    p.add_argument("--dir", default=None)
    p.add_argument("--harness", action="store_true",
                   help="episodes played by the OpenAI harness through each worker's gateway (the "
                        "tiny-cpu-agent-openai preset; no reward actors, so no reward phase)")
    a = p.parse_args(argv)
    config = "configs/tiny-cpu-agent-openai.yaml" if a.harness else None
    extra = ()
    if a.harness:
        # Without reward actors the run needs 4 CPUs, which two nodes hold: a worker of 1.25 leaves no room
        # beside it for a learner rank (or another worker), so the lost worker still waits for a node.
        extra = ("task.options.n_episodes=60", "env.max_turns=3", "rollout.call_timeout_s=120",
                 "rollout.num_cpus=1.25")
    parent = Path(a.dir or tempfile.mkdtemp(prefix="lost-node-"))
    cluster = start_cluster()
    names = {n.node_id: f"node{i}" for i, n in enumerate(cluster.list_all_nodes())}
    names[cluster.head_node.node_id] = "head"
    try:
        common = (*LAYOUT, *extra, f"cluster.address={cluster.address}")
        t0 = time.monotonic()
        straight = start(parent, "straight", *common, steps=a.steps, config=config)
        if straight.finish(timeout=1800) != 0:
            print(straight.output()[-4000:])
            return 1
        t1 = time.monotonic()
        run = start(parent, "lost", *common, steps=a.steps, config=config)
        phases = [("learner", a.learner_at, False), ("rollout", a.workers_at, True),
                  *([] if a.harness else [("reward", a.reward_at, True)])]
        chaos = LostNodes(cluster, run, phases, a.add_after)
        chaos.play()  # here: Ray starts a node only from the main thread (it installs signal handlers)
        if chaos.errors:
            run.kill_driver()
        added = [e["node"] for e in chaos.log if e["what"] == "node added"]
        names.update({node: f"node{len(names) + i}" for i, node in enumerate(added)})
        code = run.finish(timeout=1800)
        t2 = time.monotonic()
        print(f"straight run: {t1 - t0:.0f} s; run losing nodes: {t2 - t1:.0f} s (exit {code})")
        first = run.events("placement")[0]
        print("placement at start: " + describe({r: first[r] for r in ROLES if r in first}, names))
        for entry in chaos.log:
            held = f", holding {entry['held']}" if entry.get("held") else ""
            node = names.get(entry["node"], entry["node"][:8])
            print(f"  {entry['what']}: {node} after {entry['rows']} rows{held}")
        print("placement at the end: " + describe(run.placement(), names))
        if chaos.errors or code != 0:
            print(run.output()[-4000:])
            raise AssertionError(f"the run losing nodes failed: {chaos.errors or code}")
        now = run.placement()
        gone = {e["node"] for e in chaos.log if e["what"].startswith("node removed")}
        used = {x["node"] for xs in now.values() for x in xs}
        assert not gone & used, now  # nothing left on a lost node
        assert set(added) - gone <= used, now  # each node added back (and still there) took a role
        same_rows(straight.rows(), run.rows())
        fa, fb = adapter_fingerprint(straight.run_dir), adapter_fingerprint(run.run_dir)
        assert fa == fb, (fa, fb)
        print(f"identical: {len(run.rows())} metrics rows (times aside) and the adapter {fa[:16]}")
        return 0
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())

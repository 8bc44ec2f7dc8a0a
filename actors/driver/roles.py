"""The roles of a run — rollout workers, learner ranks, reward actors — with deadlines and recovery.

Owns starting the three groups, every call to them with its role's deadline, and what happens when a
role fails: a rollout worker that dies or misses its deadline is replaced in its own bundle, loaded
with the policy the others serve (verified by the probe), and its share of the generation is sampled
again with the same seed, so the step is what it would have been; a learner rank that fails raises
`RoleFailure`, and the coordinator rebuilds the learner group from the newest checkpoint. Each failure
is replaced inside `recovering(failure)`, which counts it against `train.max_restarts` and records how
long the role took to serve again. A role whose node was lost waits for room (`cluster.node_wait_s`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from actors.errors import PushError, RoleFailure, lost_process
from actors.generation import Generation, split_evenly
from actors.reward.pool import RewardPool
from cluster.actor_group import RETRY_S, ActorGroup
from cluster.backend import Backend
from configs.root import Config
from contracts import lora as lora_io
from contracts.types import Served, TrainBatch
from observe.schema import merge_ranks

log = logging.getLogger(__name__)


@dataclass
class PendingGeneration:
    """A generation the workers are running: each worker's share of the prompts and its call."""

    chunks: dict[int, list]
    refs: dict[int, Any]
    sampling: dict[str, Any]
    method: str = "generate"  # or "play_episodes" (the chunks are then episode rows)


class Roles:
    def __init__(self, cfg: Config, backend: Backend, classes: dict[str, type], env_vars: dict[str, str],
                 name_prefix: str, recovering: Callable[[RoleFailure], AbstractContextManager]) -> None:
        self.cfg, self.backend, self.classes = cfg, backend, classes
        self.env_vars, self.name_prefix, self.recovering = env_vars, name_prefix, recovering
        self.update_ref: Any = None  # the policy every worker serves (None: the base model)
        self.updates = 0  # learner updates asked for (a failure before one leaves the learner as it was)
        self.probe: tuple[list[int], list[int]] | None = None

    # ---- start ------------------------------------------------------------------------------------
    def start(self, model_dir: str, tokenizer_dir: str, judge: str | None) -> dict:
        """Learner ranks, rollout workers and reward actors (none without a `judge`: in a run of agent
        episodes the environment scores them); returns trainable params and placement.

        The three groups are placed in that order (so placement is what it always was), and each is
        waited for only once all are starting: the workers build their vLLM engines while the learner
        ranks set up DeepSpeed, instead of after (docs/architecture.md#start-up). A learner that fails
        is still reported before a worker that fails: the learner is waited for first."""
        self.model_dir, self.tokenizer_dir = model_dir, tokenizer_dir
        c = self.cfg
        self.learners = self._learner_group()
        self.rollout = self._group(
            "rollout", c.rollout.num_workers, c.rollout.placement_strategy, c.rollout.num_cpus,
            c.rollout.num_gpus,
            c.threads("rollout"), lambda i: ((model_dir, tokenizer_dir, c.rollout, c.model.lora),
                                              {"dtype": c.model.dtype, "worker_index": i,
                                               "seed": c.train.seed,
                                               # a harness run samples each call with its own seed
                                               **({"request_seeds": True} if c.env.kind == "harness"
                                                  else {})}))
        self.pool: RewardPool | None = None
        if judge is not None:
            functions = [(f.name, f.weight) for f in c.reward.functions]
            reward_group = self._group("reward", c.reward.num_actors, None, c.reward.num_cpus, 0, None,
                                       lambda i: ((functions, c.reward.timeout_s),
                                                  {"index": i, "judge": judge}))
            self.pool = RewardPool(reward_group, c.reward.timeout_s, len(functions) + 1, self.recovering)
        trainable = self._set_up_learners()
        self._wait(self.rollout, self.rollout.call("ready"), "rollout", c.rollout.start_timeout_s)
        if self.pool is not None:
            self.pool.wait_ready()
        return {"trainable_params": trainable, "placement": self.placement()}

    def start_learners(self) -> int:
        """A learner group (a new rendezvous port each time: a broken group cannot be rejoined)."""
        self.learners = self._learner_group()
        return self._set_up_learners()

    def _learner_group(self) -> ActorGroup:
        c, world = self.cfg, self.cfg.learner.world_size
        return self._group(
            "learner", world, c.learner.placement_strategy, c.learner.num_cpus, c.learner.num_gpus,
            c.threads("learner"),
            lambda i: ((self.model_dir, self.tokenizer_dir, c.model, c.learner, c.algorithm),
                                              {"rank": i, "world_size": world, "seed": c.train.seed,
                                               "rl_steps": c.train.steps}))

    def _set_up_learners(self) -> int:
        addr, port = self.learner_call("rendezvous", ranks=[0])[0]
        trainable = self.learner_call("setup", addr, port)
        if self.probe is not None:
            self.learner_call("set_probe", *self.probe)
        return trainable[0]

    def _group(self, role: str, count: int, strategy: str | None, cpus: float, gpus: float,
               threads: int | None,
               args_for: Callable[[int], tuple[tuple, dict]]) -> ActorGroup:
        env = dict(self.env_vars)
        if threads:  # explicit threads: Ray's CPU count is bookkeeping (docs/platform.md#threads-and-pinning)
            env["OMP_NUM_THREADS"] = str(threads)
        return ActorGroup(self.classes[role], count, name=role, backend=self.backend, strategy=strategy,
                          resources={"num_cpus": cpus, "num_gpus": gpus}, runtime_env={"env_vars": env},
                          name_prefix=self.name_prefix, args_for=args_for,
                          placement_timeout_s=self.cfg.cluster.node_wait_s)

    def placement(self) -> dict:
        """Per role: the node and process of each actor (processes for operators and fault tests)."""
        groups = {"learner": self.learners, "rollout": self.rollout,
                  **({"reward": self.pool.group} if self.pool else {})}
        return {role: [{"node": n, "pid": pid} for n, pid in g.get(g.call("identity"))]
                for role, g in groups.items()}

    def placed(self, role: str, index: int) -> list[dict]:
        """Where a replaced role runs now: the new learner group (every rank), or the one new actor."""
        group = {"learner": self.learners, "rollout": self.rollout}.get(role) or self.pool.group
        actors = group.actors if role == "learner" else [group.actors[index]]
        where = group.get([self.backend.call(a, "identity") for a in actors])
        return [{"node": n, "pid": pid} for n, pid in where]

    def set_probe(self, prompt_ids: list[int], completion_ids: list[int]) -> None:
        """The sequence every push is checked with (kept for a rebuilt learner group)."""
        self.probe = (list(prompt_ids), list(completion_ids))
        self.learner_call("set_probe", *self.probe)

    # ---- calls with deadlines ---------------------------------------------------------------------
    def _wait(self, group: ActorGroup, refs: list, role: str, timeout: float) -> list:
        answers, failures = group.gather(dict(enumerate(refs)), timeout)
        if failures:
            i, cause = next(iter(failures.items()))
            raise RoleFailure(role, i, self._node(group, i), cause)
        return [answers[i] for i in range(len(refs))]

    def _node(self, group: ActorGroup, i: int) -> str | None:
        try:
            return group.node_ids()[i]
        except Exception:  # noqa: BLE001 - a name for the message only
            return None

    def learner_call(self, method: str, *args: Any, ranks: list[int] | None = None,
                     timeout: float | None = None) -> list:
        """`method` on every learner rank (or `ranks`), within the learner's deadline."""
        actors = self.learners.actors if ranks is None else [self.learners.actors[r] for r in ranks]
        refs = [self.backend.call(a, method, *args) for a in actors]
        return self._wait(self.learners, refs, "learner", timeout or self.cfg.learner.call_timeout_s)

    def learn(self, batch: TrainBatch, meanwhile: Callable[[list], None] | None = None) -> dict[str, float]:
        """One update on every rank (the batch travels as one object reference); `meanwhile(refs)` runs
        while it does (a streamed pipeline keeps its workers sampling) and returns once refs are ready."""
        refs = [self.backend.call(a, "train_step", self.backend.put(batch)) for a in self.learners.actors]
        # Counted once asked for: a failure while it runs (a worker's, while `meanwhile` serves) must not
        # checkpoint the state before the step, since the learner may already hold the update.
        self.updates += 1
        if meanwhile is not None:
            meanwhile(refs)
        return merge_ranks(self._wait(self.learners, refs, "learner", self.cfg.learner.call_timeout_s))

    def sample(self, items: list, method: str = "generate", **sampling: Any) -> Generation:
        """n samples per item, split over the workers in order (`launch`, then `finish`)."""
        return self.finish(self.launch(items, method, **sampling))

    def launch(self, items: list, method: str = "generate", **sampling: Any) -> PendingGeneration:
        """Start sampling: completions of prompts (`generate`) or episodes of rows (`play_episodes`); the
        workers sample while the caller does other work (the learner's update in the one-step-off
        pipeline). Weights pushed later queue behind this call."""
        chunks = split_evenly(items, len(self.rollout))
        refs = {i: self.backend.call(self.rollout.actors[i], method, ch, **sampling)
                for i, ch in chunks.items()}
        return PendingGeneration(chunks, refs, sampling, method)

    def _collect(self, pending: PendingGeneration) -> list:
        """Every worker's answer to a launched call, in worker order; a worker that failed is replaced,
        loaded with the policy the others serve (no push lands before this returns) and its share run
        again with the same sampling and seed."""
        done: dict[int, Any] = {}
        refs = pending.refs
        while refs:
            answers, failures = self.rollout.gather(refs, self.cfg.rollout.call_timeout_s)
            done.update(answers)
            for i, cause in failures.items():
                self.replace_worker(i, cause)
            refs = {i: self.backend.call(self.rollout.actors[i], pending.method, pending.chunks[i],
                                         **pending.sampling)
                    for i in failures}
        return [done[i] for i in sorted(done)]

    def finish(self, pending: PendingGeneration) -> Generation:
        """Wait for a launched generation (a failed worker's share is generated again, `_collect`)."""
        return Generation.of(self._collect(pending))

    def replace_worker(self, i: int, cause: str, serve: bool = True) -> None:
        """Count the failure, start a new worker in the same bundle and (`serve`) load the served policy;
        `load` passes serve=False, since it loads the update on the new worker itself."""
        with self.recovering(RoleFailure("rollout", i, self._node(self.rollout, i), cause)):
            self.start_again(i)
            if serve and self.update_ref is not None:
                self.load([i], self.update_ref, rollback=True)

    def start_again(self, i: int) -> None:
        """A new worker in place of worker i, serving the base model (a streamed run then goes back to
        its checkpoint, whose policy every worker is loaded with); a RoleFailure if it does not start."""
        cause = self.rollout.start_again(i, self.cfg.rollout.start_timeout_s)
        if cause is not None:
            raise RoleFailure("rollout", i, self._node(self.rollout, i), cause)

    # ---- the weight push --------------------------------------------------------------------------
    def load(self, indices: list[int], update_ref: Any, rollback: bool = False,
             export_refs: list | None = None, replace: bool = True) -> list[Served]:
        """Load the update on workers `indices` (each verifies fingerprint and probe), replacing a worker
        that dies or misses its deadline; returns their receipts. With `export_refs` (the learner's
        export, still running) a failure is first checked against the learner: a learner that died or
        raised while exporting is the learner's failure, not the workers'. With `replace=False` a
        failed worker is raised as a RoleFailure instead (a streamed run's worker: a new one would have
        no stream, and the run goes back to its checkpoint, where every stream starts again)."""
        served: dict[int, Served] = {}
        pending = list(indices)
        while pending:
            refs = {i: self.backend.call(self.rollout.actors[i], "load_adapter", update_ref, rollback)
                    for i in pending}
            answers, failures = self._gather_loads(refs, export_refs)
            served.update(answers)
            pending = list(failures)
            for i, cause in failures.items():  # the new worker gets the update in the next round
                if not replace:
                    raise RoleFailure("rollout", i, self._node(self.rollout, i), cause)
                self.replace_worker(i, cause, serve=False)
        return [served[i] for i in indices]

    def _gather_loads(self, refs: dict[int, Any], export_refs: list | None) -> tuple[dict, dict]:
        try:
            answers, failures = self.rollout.gather(refs, self.cfg.rollout.call_timeout_s)
        except Exception:
            if export_refs is not None:  # the export raised: re-raised as the learner's error
                self._wait(self.learners, export_refs, "learner", self.cfg.learner.call_timeout_s)
            raise
        if failures and export_refs is not None:
            self._wait(self.learners, export_refs, "learner", self.cfg.learner.call_timeout_s)
        return answers, failures

    def push(self, rollback: bool = False) -> Served:
        """Export the learner's LoRA and load it on every worker; all must serve the same version and
        fingerprint. Returns the (common) receipt.

        The workers are handed the export's reference before it is ready: the update goes from the
        learner's object store to the workers without a round trip through this process (which never
        holds the weights), and the push costs one call's latency instead of two."""
        export_refs = self.learners.call("export_lora")  # every rank exports (ZeRO-3 gathers); rank 0 answers
        served = self.load(list(range(len(self.rollout))), export_refs[0], rollback, export_refs)
        # Done by now (rank 0 answered); a rank whose part failed still surfaces as the learner's error.
        self._wait(self.learners, export_refs, "learner", self.cfg.learner.call_timeout_s)
        first = served[0]
        if any((s.version, s.fingerprint) != (first.version, first.fingerprint) for s in served):
            raise PushError(f"workers serve different policies after a push: {[vars(s) for s in served]}")
        self.update_ref = export_refs[0]
        return first

    def export(self) -> Served:
        """The learner's new LoRA, exported and kept (`update_ref`) for the workers to load later, each at
        its own due point (a streamed pipeline); returns its version, fingerprint and size."""
        export_refs = self.learners.call("export_lora")
        update = self._wait(self.learners, export_refs, "learner", self.cfg.learner.call_timeout_s)[0]
        self.update_ref = export_refs[0]
        return Served(-1, update.version, update.fingerprint, lora_io.nbytes(update.weights))

    def serve_base(self) -> None:
        """Every worker serves the base model again (the policy of a checkpoint of step 0)."""
        self._wait(self.rollout, self.rollout.call("serve_base"), "rollout", self.cfg.rollout.call_timeout_s)
        self.update_ref = None

    # ---- checkpoints and rebuilding ---------------------------------------------------------------
    def save(self, folder: str) -> None:
        """Every rank's state, and the adapter (PEFT) for evaluate.py, into a checkpoint folder."""
        self.learner_call("save_state", f"{folder}/learner")
        self.learner_call("save_adapter", f"{folder}/adapter")

    def restore(self, folder: str) -> int:
        """Every rank's state from a checkpoint folder; returns the policy version."""
        return self.learner_call("load_state", f"{folder}/learner")[0]

    def rebuild_learners(self) -> None:
        """A new learner group in place of a broken one (its ranks killed, its placement released). A
        rank lost while the group starts (placed on a node that is gone but not yet known to be) makes
        it start again every few seconds, up to `cluster.node_wait_s`."""
        deadline = time.monotonic() + self.cfg.cluster.node_wait_s
        while True:
            self.learners.shutdown()
            try:
                self.start_learners()
                return
            except RoleFailure as failure:
                if not lost_process(failure) or time.monotonic() > deadline:
                    raise
                log.warning("the new learner group lost %s while it started; starting it again", failure)
                time.sleep(RETRY_S)

    def shutdown(self) -> None:
        for name in ("rollout", "learners", "pool"):
            group = getattr(self, name, None)
            if group is not None:
                group.shutdown()

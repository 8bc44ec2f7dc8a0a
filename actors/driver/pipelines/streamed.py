"""The driver's side of `train.pipeline: stream`: batches fed ahead, weights handed over at due points.

Every worker runs its own sample stream (`actors.worker.sample_stream`): the pipeline feeds it the
groups of each batch (its share, in order), keeps one `stream_advance` call in flight per worker, and
collects the groups each call finished. Batch b is drawn from the prompt order right after step
b - 1 - k's push (the first 1 + k at the start), so adaptive sampling sees what it would in any run of
the same config. A worker that stops at its due point for the policy of step p gets that policy as soon as the
learner has made it (loaded and verified by fingerprint and probe) and goes on; until then it waits,
and so does its engine. While the learner updates, the pipeline keeps serving the workers
(`_serve_until`), so generation goes on during the update. A step's batch is its groups in index order
whatever order they finished in: timing decides only who waits, never what is trained.

The numbers the stream adds to a step's row: `engine_occupancy` (running sequences per engine step
over the pipeline's `max_in_flight`), the per-token version lag of the batch (mean and max, policy tokens
only), `frac_partial` (samples whose tokens span more than one version), `stale_dropped` (samples with a
token more than k versions behind: never trained on; 0 unless something broke the schedule), and
`time/weight_wait`, the seconds workers stood at a due point waiting for the learner (summed over the
workers). The seconds the step waited for its batch are its `time/generate`.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from actors.driver.pipelines.base import Batch, Delivered, Sampler, learned, push_row
from actors.errors import RoleFailure
from actors.generation import Generation, split_evenly
from actors.worker.sample_stream import StreamGroup, StreamReport
from contracts.types import Sample, TrainBatch

POLL_S = 0.05


class StreamedPipeline:
    def __init__(self, sampler: Sampler, last_step: int, max_staleness: int, max_in_flight: int,
                 timeout_s: float = 600.0, checkpoint_every: int = 0) -> None:
        self.sampler, self.roles = sampler, sampler.roles
        self.k, self.max_in_flight, self.last_step = max_staleness, max_in_flight, last_step
        self.version = 0  # the newest policy's (served, or exported for the workers to load)
        self._batch: tuple[int, Generation, int, int] | None = None  # step, its samples, version, dropped
        self.saved_rows: dict[int, list[dict]] = {}  # drawn before a checkpoint, not yet trained on
        self.rows: dict[int, list[dict]] = {}
        self.got: dict[int, dict[int, list[Sample]]] = {}
        self.calls: dict[int, Any] = {}  # worker → its advance call in flight
        self.parked: dict[int, tuple[int, float]] = {}  # worker → (step whose policy it waits for, since)
        self.policies: dict[int, tuple[int, Any]] = {}  # step → (version, update reference or None)
        self.served: dict[int, int] = {}  # worker → the version it serves
        self.launched: dict[int, float] = {}  # worker → when its advance call was made
        self.timeout_s = timeout_s
        self.fed = 0
        self.started = False
        # batch → worker → [engine steps, running sequences summed over them]
        self.occupancy: dict[int, dict[int, list[int]]] = {}
        self.peak_rss = 0  # the workers' largest peak resident memory reported so far, bytes
        self.owner: dict[tuple[int, int], int] = {}  # (batch, index) → the worker it was fed to
        self.weight_wait_s = 0.0  # since the last row
        self.every, self.taken = checkpoint_every, 0
        # checkpoint step → worker → (the groups it had sent at its cut, its occupancy counts then)
        self.cuts: dict[int, dict[int, tuple[set, dict]]] = {}
        self.done: set[int] = set()  # workers whose stream ran dry (every group fed to them sent)
        self.restored: dict | None = None  # a checkpoint's stream, to begin from
        self._exact: dict | None = None  # the state of the last checkpoint's cut

    # ---- the protocol -----------------------------------------------------------------------------
    def _begin(self, step: int, version: int, update_ref: Any) -> None:
        """Start every worker's stream at `step` (the policy it serves now) and feed the first batches."""
        self.policies[step] = (version, update_ref)
        self.version = version
        roles = self.roles
        args = self.sampler.stream_args()
        for w, ref in enumerate([roles.backend.call(a, "stream_start", step=step, **args)
                                 for a in roles.rollout.actors]):
            self._answer(w, ref)
        self.fed, self.started, self.taken = step, True, step
        self.served = dict.fromkeys(range(len(roles.rollout.actors)), version)
        state, self.restored = self.restored or {}, None
        sent = {(b, i): g for b, got in state.get("got", {}).items() for i, g in got.items()}
        for b, per_worker in state.get("occupancy", {}).items():
            self.occupancy[b] = per_worker
        for _ in range(1 + self.k):
            self._feed(sent)
        for w in range(len(roles.rollout.actors)):
            self._launch(w)

    def next_batch(self, step: int, version: int) -> Batch:
        """Step `step`'s batch, its groups in index order (waiting for the workers as long as needed), with
        the samples that have a policy token more than k versions behind the learner's `version` masked."""
        t = time.perf_counter()
        if not self.started:
            self._begin(step - 1, version, self.roles.update_ref)
        while len(self.got.get(step, {})) < len(self.rows[step]):
            if not self.calls:
                raise RuntimeError(f"the stream stalled: no worker samples and batch {step} is incomplete")
            self._serve([])
        waited = time.perf_counter() - t
        self.taken = step
        got = self.got.pop(step)
        groups = [got[i] for i in range(len(got))]
        versions = [v for g in groups for s in g for v in (s.versions or [s.policy_version])]
        gen = Generation(groups, [min(versions)], self.peak_rss)
        stale = [version - min(_policy_versions(s), default=version) > self.k for s in gen.samples]
        self._batch = (step, gen, version, sum(stale))
        return Batch(self.rows.pop(step), gen, waited, stale)

    def deliver(self, step: int, batch: TrainBatch | None) -> Delivered:
        """The update runs while the workers go on sampling; its policy is exported (not pushed) and handed
        to each worker at its due point of `step` (the last policy again after a skipped update)."""
        t = time.perf_counter()
        learn = self.roles.learn(batch, self._serve_until) if batch is not None else None
        times = {"learn": time.perf_counter() - t}
        t = time.perf_counter()
        version, row = None, {}
        if learned(learn):
            update = self.roles.export()
            version, row = update.version, push_row(update)
            self.version = version
        times["sync"] = time.perf_counter() - t
        self._publish(step, self.version, self.roles.update_ref)
        return Delivered(learn, version, {**row, **self._metrics(step)}, times)

    def recover(self, failure: RoleFailure) -> str:
        """A lost worker is started again (its stream is gone: every stream starts again from the
        checkpoint); anything else rebuilds the learner group."""
        if failure.role == "rollout":
            self.roles.start_again(failure.index)
            return "rollout"
        self.roles.rebuild_learners()
        return "learner"

    def slots(self) -> float:
        """Sequences a worker can have in flight: the stream's bound."""
        return self.max_in_flight

    def settle(self) -> None:
        """Wait for the workers' calls in flight (a stream samples on after its step returns)."""
        while self.calls and self.roles.backend.wait(list(self.calls.values()), 1.0)[1]:
            pass

    def _serve_until(self, refs: list) -> None:
        """Keep the workers going until `refs` (the learner's update) are ready."""
        while self.roles.backend.wait(refs, timeout=0)[1]:
            self._serve(refs)

    def _publish(self, step: int, version: int, update_ref: Any) -> None:
        """The policy of `step` (a new version, or the last one again after a skipped update): handed to
        the workers waiting for it, and the batch it allows is drawn and fed."""
        self.policies[step] = (version, update_ref)
        self._feed()
        for w, (due, _) in list(self.parked.items()):
            if due <= step:
                self._resume(w)

    def _metrics(self, step: int) -> dict[str, float]:
        """The stream's part of step `step`'s row (see the module docstring)."""
        _, gen, version, dropped = self._batch
        lags = [version - v for s in gen.samples for v in _policy_versions(s)]
        counts = self.occupancy.pop(step, {}).values()
        steps, running = sum(c[0] for c in counts), sum(c[1] for c in counts)
        row = {
            # the engine steps that finished this batch (on each worker, since its previous batch)
            "engine_occupancy": running / max(1, steps) / self.max_in_flight,
            "version_lag_mean": sum(lags) / max(1, len(lags)), "version_lag_max": max(lags, default=0),
            "frac_partial": sum(len(set(_policy_versions(s))) > 1 for s in gen.samples)
            / max(1, len(gen.samples)),
            "stale_dropped": dropped, "time/weight_wait": self.weight_wait_s,
        }
        self.weight_wait_s = 0.0
        return row

    def stop(self) -> int:
        """End every worker's stream (before an eval, a rollback, the end); returns the samples dropped."""
        if not self.started:
            return 0
        roles, dropped = self.roles, 0
        for ref in self.calls.values():
            try:
                roles.backend.get(ref, timeout=self.timeout_s)
            except Exception:  # noqa: BLE001 - a worker that failed: its stream is gone with it
                pass
        for a in roles.rollout.actors:
            try:
                dropped += roles.backend.get(roles.backend.call(a, "stream_stop"), timeout=self.timeout_s)
            except Exception:  # noqa: BLE001
                pass
        # The policies too: after a rollback the steps after the checkpoint are made again, and a worker
        # must wait for the new ones (an old one would let it start a batch before it is fed).
        for name in ("calls", "parked", "policies", "rows", "got", "occupancy", "owner", "cuts", "done"):
            getattr(self, name).clear()
        self.started, self._exact = False, None
        return dropped

    def state_dict(self) -> dict:
        """What a checkpoint after the last step taken holds of the stream: the rows drawn ahead, and at a
        checkpoint's step (`train.checkpoint_every`) the groups each worker had finished when it reached
        its cut (its due point of that step's policy, where nothing is in flight:
        `actors.worker.sample_stream`) with
        their occupancy counts. A resumed run feeds each worker the groups it had not finished and goes
        on exactly as the straight run did. Any other time (a stop between checkpoints) the rows only:
        their samples are drawn again from the checkpoint's policy."""
        rows = {str(b): r for b, r in {**self.saved_rows, **self.rows}.items()}
        step = self.taken
        if not (self.started and self.every and step % self.every == 0):
            return {"rows": rows}
        if self._exact is not None and self._exact["step"] == step:
            return self._exact  # asked again (the step after a checkpoint keeps it for a final one)
        while any(w not in self.cuts.get(step, {}) and w not in self.done for w in self.served):
            if not self.calls:
                raise RuntimeError(f"the stream stalled before step {step}'s cut: no worker samples")
            self._serve([])  # the workers get to their cuts (waiting for nothing else)
        cuts = {w: self.cuts.get(step, {}).get(w) or self._sent_by(w, step) for w in self.served}
        got: dict[str, dict[str, list]] = {}
        occ: dict[str, dict[str, list[int]]] = {}
        for w, (keys, counts) in sorted(cuts.items()):
            for b, i in sorted(keys):
                got.setdefault(str(b), {})[str(i)] = [asdict(s) for s in self.got[b][i]]
            for b, c in counts.items():
                occ.setdefault(str(b), {})[str(w)] = c
        for old in [s for s in self.cuts if s <= step]:
            del self.cuts[old]
        self._exact = {"rows": rows, "step": step, "got": got, "occupancy": occ}
        return self._exact

    def load_state_dict(self, state: dict | None) -> None:
        self.stop()
        state = state or {}
        self.saved_rows = {int(b): rows for b, rows in state.get("rows", {}).items()}
        self.restored = None
        if "got" in state:
            self.restored = {
                "got": {int(b): {int(i): [Sample.from_dict(s) for s in g] for i, g in got.items()}
                        for b, got in state["got"].items()},
                "occupancy": {int(b): {int(w): list(c) for w, c in per.items()}
                              for b, per in state["occupancy"].items()}}

    # ---- inside ---------------------------------------------------------------------------------
    def _feed(self, sent: dict | None = None) -> None:
        """Draw the next batch (or take the checkpoint's rows) and feed each worker its share; `sent`:
        groups a checkpoint holds as finished, which are not sampled again."""
        b = self.fed + 1
        if b > self.last_step:
            return
        rows = self.saved_rows.pop(b) if b in self.saved_rows else self.sampler.draw()
        self.rows[b], self.got[b], self.fed = rows, {}, b
        groups = [StreamGroup(b, i, item) for i, item in enumerate(self.sampler.items(rows))]
        shares = split_evenly(groups, len(self.roles.rollout.actors))
        for w, actor in enumerate(self.roles.rollout.actors):  # queued behind the worker's advance call
            share = shares.get(w, [])
            self.owner.update({(b, g.index): w for g in share})
            if sent:
                self.got[b].update({g.index: sent[(b, g.index)] for g in share if (b, g.index) in sent})
                share = [g for g in share if (b, g.index) not in sent]
            self.roles.backend.call(actor, "stream_feed", b, share)

    def _sent_by(self, w: int, step: int) -> tuple[set, dict]:
        """The groups of batches after `step` that worker `w` has sent, and its occupancy counts of them."""
        keys = {(b, i) for b, got in self.got.items() if b > step for i in got if self.owner[(b, i)] == w}
        counts = {b: list(per[w]) for b, per in self.occupancy.items() if b > step and w in per}
        return keys, counts

    def _launch(self, w: int, step: int | None = None) -> None:
        self.calls[w] = self.roles.backend.call(self.roles.rollout.actors[w], "stream_advance", step)
        self.launched[w] = time.perf_counter()

    def _resume(self, w: int) -> None:
        """Worker `w` is at its due point and the policy it waits for is published: load it, go on."""
        due, since = self.parked.pop(w)
        version, ref = self.policies[due]
        if ref is not None and version != self.served[w]:
            self.roles.load([w], ref, replace=False)  # a dead worker: the step's RoleFailure
            self.served[w] = version
        self.weight_wait_s += time.perf_counter() - since
        self._launch(w, due)

    def _answer(self, w: int, ref: Any) -> Any:
        """Worker `w`'s answer; a worker that is gone is the step's RoleFailure (it is replaced and the
        run goes back to its checkpoint, where every stream starts again)."""
        try:
            return self.roles.backend.get(ref)
        except Exception as e:
            cause = self.roles.backend.actor_failure(e)
            if cause is None:
                raise
            raise RoleFailure("rollout", w, None, cause) from None

    def _serve(self, also: list) -> None:
        """Wait a moment for any worker's answer (or one of `also`), and act on it."""
        refs = [*self.calls.values(), *also]
        if not refs:
            time.sleep(POLL_S)
            return
        ready, _ = self.roles.backend.wait(refs, timeout=POLL_S)
        now = time.perf_counter()
        for w, since in self.launched.items():
            if w in self.calls and self.calls[w] not in ready and now - since > self.timeout_s:
                raise RoleFailure("rollout", w, None, f"no answer within {self.timeout_s:.0f}s")
        for w in [w for w, ref in self.calls.items() if ref in ready]:
            report: StreamReport = self._answer(w, self.calls.pop(w))
            self.peak_rss = max(self.peak_rss, report.peak_rss)
            for b, (steps, running) in report.occupancy.items():
                c = self.occupancy.setdefault(b, {}).setdefault(w, [0, 0])
                c[0] += steps
                c[1] += running
            for g in report.groups:
                self.got[g.batch][g.index] = g.samples
            if report.due is not None and self.every and report.due % self.every == 0:
                self.cuts.setdefault(report.due, {})[w] = self._sent_by(w, report.due)
            if report.hungry is not None:
                self.done.add(w)
            if report.due is not None:
                self.parked[w] = (report.due, time.perf_counter())
                if report.due in self.policies:
                    self._resume(w)
            elif report.hungry is None:
                self._launch(w)  # a batch finished: go on at once


def _policy_versions(s: Sample) -> list[int]:
    """The versions that sampled the policy's own tokens of `s`."""
    if s.versions is None:
        return [s.policy_version]
    if s.loss_mask is None:
        return list(s.versions)
    return [v for v, m in zip(s.versions, s.loss_mask) if m]

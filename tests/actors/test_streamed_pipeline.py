"""The driver's side of a stream (actors/driver/pipelines/streamed.py) driven step by step as the coordinator
drives it, with in-process workers whose engine is scripted (`ScriptedEngine`, a stand-in named so).

What it checks is the bookkeeping that the real runs exercise only by chance of timing: a rollback or a
resume to a checkpoint starts the streams from that checkpoint's policy alone. A policy published
before a rollback must not be handed out again: a worker that took one at its due point during the
replayed update would start a batch the coordinator has not fed yet, run dry, and the stream stall (a
CI run of tests/faults/test_stream_faults.py did)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from actors.driver.pipelines.streamed import StreamedPipeline
from actors.worker.rollout_worker import RolloutWorker
from actors.worker.sample_stream import SampleStream
from cluster.backend import LocalBackend, LocalRef
from tests.actors.test_sample_stream import ScriptedEngine

K, STEPS, EVERY, GROUPS = 2, 6, 2, 3


class ScriptedWorker:
    """A rollout worker's stream calls over a scripted engine (advance and stop are the real worker's);
    its sampler is reseeded (the engine's lengths restart from the version) at every due point, as the
    real worker's is."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.version, self.stream = tokenizer, 0, None

    def stream_start(self, *, n: int, max_in_flight: int, max_staleness: int, step: int, drain_every: int,
                     ) -> None:
        engine = ScriptedEngine()
        self.stream = SampleStream(engine, self.tokenizer, n=n, max_tokens=12, max_in_flight=max_in_flight,
                               max_staleness=max_staleness, reseed=lambda v: setattr(engine, "adds", 100 * v),
                               step=step, version=self.version, drain_every=drain_every)

    def stream_feed(self, batch: int, groups: list) -> None:
        self.stream.feed(batch, groups)

    # the real worker's own calls: they only touch `stream` and `version`
    stream_advance = RolloutWorker.stream_advance
    stream_stop = RolloutWorker.stream_stop


class Deferred(LocalBackend):
    """In-process calls that run later, one per look for answers (`wait`), oldest first; `get` runs
    calls until its answer is there. So the workers' calls made before the learner's update run while
    the pipeline serves them during it (`deliver`), as on Ray, where a worker typically reaches
    its next due point during the update."""

    def __init__(self) -> None:
        self.queue: list[tuple[LocalRef, tuple]] = []
        self.pending: set[int] = set()

    def call(self, actor, method: str, *args, **kwargs) -> LocalRef:
        ref = LocalRef()
        self.queue.append((ref, (actor, method, args, kwargs)))
        self.pending.add(id(ref))
        return ref

    def wait(self, refs, timeout=None):
        if self.queue:
            self._run_one()
        return [r for r in refs if id(r) not in self.pending], [r for r in refs if id(r) in self.pending]

    def get(self, refs, timeout=None):
        while any(id(r) in self.pending for r in (refs if isinstance(refs, list) else [refs])):
            self._run_one()
        return super().get(refs)

    def _run_one(self) -> None:
        ref, (actor, method, args, kwargs) = self.queue.pop(0)
        self.pending.discard(id(ref))
        done = super().call(actor, method, *args, **kwargs)
        ref.value, ref.error = done.value, done.error


class Learner:
    def update(self) -> None:
        pass


class Run:
    """A coordinator's loop around the pipeline (`next_batch`, `deliver`): version == step; the update
    reference is (step, attempt), the attempt counting rollbacks, so a policy handed out from before a
    rollback shows in `loaded`. The roles are in-process: the workers scripted, the learner a no-op whose
    update the pipeline serves the workers during, the export a new reference."""

    def __init__(self, tokenizer, backend: LocalBackend, workers: int = 2) -> None:
        self.version, self.attempt = 0, 0
        self.loaded: list[tuple[int, int]] = []
        actors = [ScriptedWorker(tokenizer) for _ in range(workers)]

        def load(indices: list[int], ref: tuple[int, int], replace: bool = True) -> None:
            assert not replace, "a lost worker is the step's failure, not replaced without its stream"
            self.loaded.append(ref)
            for i in indices:
                actors[i].version = ref[0]

        def learn(batch, meanwhile) -> dict:
            meanwhile([backend.call(Learner(), "update")])  # the workers go on during the update
            return {"update_skipped": False}

        def export() -> SimpleNamespace:
            self.version += 1
            roles.update_ref = (self.version, self.attempt)
            return SimpleNamespace(version=self.version, fingerprint=f"v{self.version}", nbytes=0)

        roles = SimpleNamespace(backend=backend, rollout=SimpleNamespace(actors=actors), load=load,
                                learn=learn, export=export, update_ref=None)
        sampler = SimpleNamespace(
            roles=roles, draw=lambda: [{"batch": self.pipe.fed + 1, "i": i} for i in range(GROUPS)],
            items=lambda rows: [[r["batch"] * 10 + r["i"]] for r in rows],
            stream_args=lambda: {"n": 2, "max_in_flight": 7, "max_staleness": K, "drain_every": EVERY})
        self.pipe = StreamedPipeline(sampler, STEPS, K, 7, checkpoint_every=EVERY)
        self.checkpoints: dict[int, str] = {}

    def steps(self, first: int, last: int) -> dict[int, list]:
        out = {}
        for step in range(first, last + 1):
            batch = self.pipe.next_batch(step, self.version)
            out[step] = [(s.token_ids, s.versions) for g in batch.gen.groups for s in g]
            done = self.pipe.deliver(step, object())
            assert done.version == step == self.version
            assert done.row["stale_dropped"] == 0 and not any(batch.stale)
            if step % EVERY == 0:  # as the checkpoint stores it
                self.checkpoints[step] = json.dumps(self.pipe.state_dict())
        return out

    def back_to(self, step: int) -> None:
        self.pipe.load_state_dict(json.loads(self.checkpoints[step]))
        self.version, self.attempt = step, self.attempt + 1
        self.pipe.roles.update_ref = (step, self.attempt)
        self.rolled_back_at = len(self.loaded)


@pytest.mark.parametrize("backend", [LocalBackend, Deferred])
def test_a_rollback_samples_what_the_straight_stream_sampled(tiny_tokenizer, backend):
    straight = Run(tiny_tokenizer, backend()).steps(1, STEPS)
    assert sorted(straight) == list(range(1, STEPS + 1))
    assert any(len(set(v)) > 1 for rows in straight.values() for _, v in rows), "no partial rollout"
    run = Run(tiny_tokenizer, backend())
    first = run.steps(1, 4)
    run.back_to(2)  # the policies of steps 3 and 4 were published; the replay must make them again
    again = run.steps(3, STEPS)
    assert {**first, **again} == straight
    replayed = run.loaded[run.rolled_back_at:]  # every policy loaded since: made after the rollback
    assert replayed and all(attempt == 1 for _, attempt in replayed), replayed


@pytest.mark.parametrize("backend", [LocalBackend, Deferred])
def test_a_resumed_stream_continues_the_straight_one(tiny_tokenizer, backend):
    straight = Run(tiny_tokenizer, backend()).steps(1, STEPS)
    before = Run(tiny_tokenizer, backend())
    before.steps(1, 4)
    resumed = Run(tiny_tokenizer, backend())  # a new coordinator from step 4's checkpoint
    resumed.checkpoints = before.checkpoints
    resumed.back_to(4)
    assert resumed.steps(5, STEPS) == {s: straight[s] for s in (5, 6)}

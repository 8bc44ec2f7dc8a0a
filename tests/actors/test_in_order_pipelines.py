"""The `sync` and `one_step_off` pipelines (actors/driver/pipelines/in_order.py) driven as the coordinator
drives them (`next_batch`, `deliver`), with in-process roles that record every call in order: two
rollout workers that sample a step's rows with the policy they serve (the samples say which version and
seed), a learner whose update makes the next version (or is skipped), and the push that loads it.

What is checked is the order the pipelines promise: one-step-off launches step s + 1's batch before
step s's update, with the policy before it, and collects it before the push; sync samples when the step
asks; a skipped update pushes nothing; a batch too far behind the learner is refused; a checkpoint's
waiting batch is the one a resumed run trains on."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from actors.driver.pipelines import make_pipeline
from actors.driver.pipelines.base import Sampler
from actors.driver.roles import PendingGeneration
from actors.errors import PushError, RoleFailure
from actors.generation import Generation
from configs.loader import load_config
from contracts.types import Sample, Served

STEPS = 4


class Roles:
    """In-process roles: every call is appended to `calls`; the workers serve `served`."""

    def __init__(self, skip: set[int] = frozenset()) -> None:
        self.calls: list[tuple] = []
        self.served = self.learned = 0
        self.skip = skip  # updates (by count) the learner skips, as after a non-finite loss
        self.update_ref = None

    def launch(self, items: list, method: str, seed: int, offsets: bool, **sampling) -> PendingGeneration:
        self.calls.append(("launch", seed % 100_003, self.served))
        return PendingGeneration({0: items}, {0: (list(items), self.served, seed)}, sampling, method)

    def finish(self, pending: PendingGeneration) -> Generation:
        items, version, seed = pending.refs[0]
        self.calls.append(("finish", seed % 100_003))
        groups = [[Sample([1], [seed % 100_003, i], [0.0, 0.0], f"{item}", "stop", version)] for i, item in
                  enumerate(items)]
        return Generation(groups, [version])

    def learn(self, batch, meanwhile=None) -> dict:
        self.learned += 1
        self.calls.append(("learn", self.learned))
        return {"update_skipped": self.learned in self.skip}

    def push(self) -> Served:
        self.served += 1
        self.calls.append(("push", self.served))
        return Served(0, self.served, f"fp{self.served}", 10, 0.0)

    def rebuild_learners(self) -> None:
        self.calls.append(("rebuild",))


def _pipeline(kind: str, roles: Roles):
    over = [f"train.pipeline={kind}", f"train.steps={STEPS}", "train.prompts_per_step=2"]
    cfg = load_config("tiny-cpu", over)
    sampler = Sampler(cfg, SimpleNamespace(items=lambda tok, rows: [r["id"] for r in rows], method="generate",
                                           sampling=dict), roles)
    drawn = iter(range(1000))
    sampler.prompts = SimpleNamespace(next_rows=lambda: [{"id": next(drawn)} for _ in range(2)])
    return make_pipeline(cfg, sampler)


def _run(pipe, roles: Roles, first: int = 1, version: int = 0) -> dict[int, list]:
    """Steps first..STEPS as the coordinator makes them; each step's samples (row, step seed, version)."""
    out = {}
    for step in range(first, STEPS + 1):
        batch = pipe.next_batch(step, version)
        out[step] = [(s.text, s.token_ids[0], s.policy_version) for s in batch.gen.samples]
        done = pipe.deliver(step, object())
        version = done.version if done.version is not None else version
    return out


def test_sync_samples_each_step_with_the_learners_policy_then_pushes():
    roles = Roles()
    rows = _run(_pipeline("sync", roles), roles)
    assert rows == {s: [(str(2 * s - 2), s, s - 1), (str(2 * s - 1), s, s - 1)] for s in range(1, STEPS + 1)}
    assert roles.calls[:5] == [("launch", 1, 0), ("finish", 1), ("learn", 1), ("push", 1), ("launch", 2, 1)]


def test_one_step_off_samples_the_next_batch_during_the_update_with_the_policy_before_it():
    roles = Roles()
    rows = _run(_pipeline("one_step_off", roles), roles)
    # step s+1 launched before step s's update, on the policy before it; collected before the push
    assert roles.calls[:6] == [("launch", 1, 0), ("finish", 1), ("launch", 2, 0), ("learn", 1), ("finish", 2),
                               ("push", 1)]
    assert [v for s in range(2, STEPS + 1) for _, _, v in rows[s]] == [s - 2 for s in range(2, STEPS + 1)
                                                                        for _ in range(2)]
    launches = [c for c in roles.calls if c[0] == "launch"]
    assert launches[-1] == ("launch", STEPS, STEPS - 2)  # none past the last step
    assert rows[1] == [("0", 1, 0), ("1", 1, 0)] and rows[2] == [("2", 2, 0), ("3", 2, 0)]


@pytest.mark.parametrize("kind", ["sync", "one_step_off"])
def test_a_skipped_update_pushes_nothing_and_the_workers_keep_their_policy(kind):
    roles = Roles(skip={2})
    pipe = _pipeline(kind, roles)
    versions = []
    version = 0
    for step in range(1, STEPS + 1):
        pipe.next_batch(step, version)
        done = pipe.deliver(step, object())
        versions.append(done.version)
        version = done.version if done.version is not None else version
    assert versions == [1, None, 2, 3]
    assert [c[1] for c in roles.calls if c[0] == "push"] == [1, 2, 3]
    assert pipe.deliver(STEPS, None).learn is None  # nothing to learn: no update, no push
    assert [c[1] for c in roles.calls if c[0] == "push"] == [1, 2, 3]


def test_a_batch_behind_the_bound_is_refused():
    sync_roles = Roles()
    sync = _pipeline("sync", sync_roles)
    sync_roles.served = 3  # the workers serve a version the learner does not have
    with pytest.raises(PushError, match="generated with version 3; the learner is at 2"):
        sync.next_batch(1, 2)
    off_roles = Roles()
    off = _pipeline("one_step_off", off_roles)
    off.next_batch(1, 0)
    off.deliver(1, object())  # step 2's batch was sampled with version 0; one behind the learner at 1
    off.load_state_dict(off.state_dict())
    with pytest.raises(PushError, match="generated with version 0; the learner is at 2"):
        off.next_batch(2, 2)


def test_a_resumed_one_step_off_run_trains_on_the_batch_its_checkpoint_held():
    roles = Roles()
    straight = _run(_pipeline("one_step_off", roles), roles)
    first_roles = Roles()
    first = _pipeline("one_step_off", first_roles)
    for step in (1, 2):
        first.next_batch(step, step - 1)
        first.deliver(step, object())
    saved = json.loads(json.dumps(first.state_dict()))  # as coordinator.json holds it
    resumed_roles = Roles()
    resumed_roles.served = 2
    resumed = _pipeline("one_step_off", resumed_roles)
    resumed.load_state_dict(saved)
    batch = resumed.next_batch(3, 2)
    assert [(s.text, s.token_ids[0], s.policy_version) for s in batch.gen.samples] == straight[3]
    assert not [c for c in resumed_roles.calls if c[0] == "finish"], "the held batch is not sampled again"


@pytest.mark.parametrize("kind", ["sync", "one_step_off"])
def test_what_reaches_recover_rebuilds_the_learner_group(kind):
    roles = Roles()
    assert _pipeline(kind, roles).recover(RoleFailure("learner", 0, None, "gone")) == "learner"
    assert roles.calls == [("rebuild",)]

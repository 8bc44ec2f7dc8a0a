"""A worker's sample stream (actors/worker/sample_stream.py): due points, partial rollouts, per-token
versions, order.

The engine here is scripted (a stand-in, named so: `ScriptedEngine`) so that sample lengths differ and
samples are in flight across due points; the stream with the real vLLM engine runs in
tests/integration/test_train_run.py (two streamed runs, value-identical rows)."""

from __future__ import annotations

import pytest

from actors.worker.sample_stream import SampleStream, StreamGroup
from configs.loader import load_config


class ScriptedEngine:
    """Stands in for vLLM: a request samples one token per engine step, (ids[-1] * 7 + serial) % 9 + 2
    tokens in all (capped at max_tokens), all 1s with logprob -1.0 (no end-of-sequence token)."""

    def __init__(self) -> None:
        self.live: dict[str, list] = {}  # key → [tokens still to sample, sampled so far, max_tokens]
        self.adds = 0
        self.log: list[tuple[str, int]] = []

    def add(self, key: str, ids: list[int], max_tokens: int) -> None:
        self.adds += 1
        self.live[key] = [min(max_tokens, (ids[-1] * 7 + self.adds) % 9 + 2), 0, max_tokens]
        self.log.append((key, len(ids)))

    def running(self) -> int:
        return len(self.live)

    def step(self):
        done = []
        for key, entry in list(self.live.items()):
            entry[1] += 1
            if entry[1] >= entry[0]:
                del self.live[key]
                done.append((key, [1] * entry[1], [-1.0] * entry[1],
                             "length" if entry[1] >= entry[2] else "stop"))
        return done

    def clear(self):
        sampled = {key: ([1] * e[1], [-1.0] * e[1]) for key, e in self.live.items()}
        self.live.clear()
        return sampled


def _drive(tokenizer, k: int, batches: int, feed_all_first: bool, groups: int = 3, n: int = 2):
    """Run a stream as the coordinator would: policy p published (and batch p + 1 + k fed) when asked
    for at a due point. `feed_all_first`: every batch fed at the start instead (the feed's timing must
    not change anything). Returns ({(batch, index): samples}, the engine's request log)."""
    engine = ScriptedEngine()
    seeds: list[int] = []
    s = SampleStream(engine, tokenizer, n=n, max_tokens=12, max_in_flight=7, max_staleness=k,
                 reseed=seeds.append)
    fed = 0

    def feed() -> None:
        nonlocal fed
        fed += 1
        s.feed(fed, [StreamGroup(fed, i, [fed * 10 + i]) for i in range(groups)])

    for _ in range(batches if feed_all_first else min(batches, 1 + k)):
        feed()
    out, report = {}, s.advance()
    while report.hungry is None:  # until it asks for a batch past the last
        out.update({(g.batch, g.index): g.samples for g in report.groups})
        if report.due is not None:
            if not feed_all_first and fed < batches:
                feed()
            s.take(report.due, report.due)  # version == step here
        report = s.advance()
    assert report.hungry == batches + 1 and not report.groups
    assert s.stop() == 0
    return out, engine.log, seeds


@pytest.mark.parametrize("k", [0, 1, 2])
def test_every_token_is_within_k_versions_of_the_learner_that_trains_on_it(tiny_tokenizer, k):
    out, _, seeds = _drive(tiny_tokenizer, k, batches=6, feed_all_first=False)
    assert sorted(out) == [(b, i) for b in range(1, 7) for i in range(3)]  # nothing lost or doubled
    for (batch, _), samples in out.items():
        for s in samples:
            assert len(s.versions) == len(s.token_ids) == len(s.logprobs)
            assert s.versions == sorted(s.versions) and s.versions[0] == s.policy_version
            # step `batch` trains at version batch - 1: lag between 0 and k, never ahead
            assert all(batch - 1 - k <= v <= batch - 1 for v in s.versions), (batch, s.versions)
    assert seeds == sorted(set(seeds))  # reseeded once at the start and at every due point, in order
    if k == 0:  # synchronous: each batch on exactly the policy of the step before
        assert all(set(s.versions) == {b - 1} for (b, _), g in out.items() for s in g)


def test_samples_in_flight_at_a_due_point_continue_under_the_new_policy(tiny_tokenizer):
    out, log, _ = _drive(tiny_tokenizer, 2, batches=6, feed_all_first=False)
    partial = [s for g in out.values() for s in g if len(set(s.versions)) > 1]
    assert partial, "no sample spanned a due point: the scripted lengths no longer exercise partial rollouts"
    for s in partial:  # continued with what it had sampled as its prompt, its length cap kept
        assert len(s.token_ids) <= 12
    keys = [key for key, _ in log]
    assert len(keys) > len(set(keys))  # the same sample was added again after a due point


def test_the_stream_depends_on_counts_not_on_when_batches_arrive(tiny_tokenizer):
    """Batches fed at the last moment or all at the start: the same samples, the same engine calls."""
    late, late_log, _ = _drive(tiny_tokenizer, 2, batches=6, feed_all_first=False)
    early, early_log, _ = _drive(tiny_tokenizer, 2, batches=6, feed_all_first=True)
    assert late_log == early_log
    assert {k: [(s.token_ids, s.versions) for s in g] for k, g in late.items()} == \
        {k: [(s.token_ids, s.versions) for s in g] for k, g in early.items()}


def test_a_batch_is_fed_in_order(tiny_tokenizer):
    s = SampleStream(ScriptedEngine(), tiny_tokenizer, n=2, max_tokens=8, max_in_flight=4, max_staleness=1,
                 reseed=lambda v: None)
    s.feed(1, [])
    with pytest.raises(ValueError, match="fed batch 3 after batch 1"):
        s.feed(3, [])


def test_episodes_stream_turn_by_turn(tiny_tokenizer, fund_task):
    """Episodes: each finished turn goes to the environment and the next turn to the engine; the policy's
    tokens carry their versions, the observations are masked."""
    from actors.worker.sample_stream import EpisodeSettings

    rows = fund_task.episode_rows()[0][:4]
    engine = ScriptedEngine()
    s = SampleStream(engine, tiny_tokenizer, n=2, max_tokens=12, max_in_flight=4, max_staleness=1,
                 reseed=lambda v: None,
                 episodes=EpisodeSettings(lambda: fund_task.environment(3), max_context=900))
    s.feed(1, [StreamGroup(1, i, r) for i, r in enumerate(rows[:2])])
    s.feed(2, [StreamGroup(2, i, r) for i, r in enumerate(rows[2:])])
    got, report = {}, s.advance()
    while report.hungry is None:
        got.update({(g.batch, g.index): g.samples for g in report.groups})
        if report.due is not None:
            s.take(report.due, report.due)
        report = s.advance()
    assert sorted(got) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    for samples in got.values():
        for e in samples:
            assert len(e.episode.turns) == 3 and e.truncated  # malformed turns until max_turns
            assert len(e.versions) == len(e.token_ids) == len(e.loss_mask)
            assert sum(e.loss_mask) < len(e.loss_mask)  # observations between the turns


def test_config_names_the_pipeline():
    """The pipeline's kind and its bound (the section's own key for a stream; tests/configs/test_modes.py
    has the rest of the spelling)."""
    assert load_config("tiny-cpu", []).train.pipeline.kind == "sync"
    for over, kind, k in ((["train.max_staleness=1"], "one_step_off", 1),
                          (["train.pipeline=one_step_off"], "one_step_off", 1),
                          (["train.pipeline=stream", "train.pipeline.max_staleness=8"], "stream", 8)):
        pipeline = load_config("tiny-cpu", over).train.pipeline
        assert (pipeline.kind, pipeline.max_staleness) == (kind, k)
    for bad, said in ((["train.max_staleness=2"], "only a streamed pipeline"),
                      (["train.pipeline=one_step_off", "train.max_staleness=3"], "only a streamed pipeline"),
                      (["train.pipeline=stream", "train.pipeline.max_staleness=9"],
                       "less than or equal to 8")):
        with pytest.raises(ValueError, match=said):
            load_config("tiny-cpu", bad)

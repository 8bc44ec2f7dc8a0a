"""A rollout worker's sample stream (`train.pipeline: stream`): samples in flight, weights at fixed points.

The worker keeps up to `max_in_flight` samples in flight in its engine, token by token: when a
completion or an episode finishes, the next group's samples start at the next engine step, so the
engine's batch stays full instead of waiting for the slowest sample of a batch. An episode's turn that
finishes goes to its environment and the episode's next turn is added to the engine at once.

What decides the numbers depends only on counts in the stream, never on timing:
- Groups start in the order they were fed (batch by batch, each batch's groups in order).
- A group of batch b may start once the worker serves the policy of step b - 1 - k (k:
  the pipeline's `max_staleness`).
  The worker takes the policy of step p at its *due point*: when the next group
  to start belongs to batch p + 1 + k and every group of batches up to max(p, p + k - 1) has finished.
  Up to p, because step p trains on batch p (the learner cannot make that policy before); up to
  p + k - 1, because those batches may finish under the policy held (their tokens stay within k) and
  batch p + 1 is what the learner asks for right after step p: it is ready when the policy is, and
  the learner's update and the worker's sampling overlap instead of waiting for each other. The worker
  stops there and waits if the policy is late, and never takes a policy early, whenever it arrived.
- At a due point the engine is emptied: the samples in flight keep what they sampled (each token
  tagged with the version that sampled it) and are added again, after the new weights are in, with
  their tokens so far as the prompt — a partial rollout, continued under the new policy. The sampler
  is reseeded there, so what follows a due point depends only on (weights, samples in flight, queue,
  seed), not on the engine's past.
- At the due point of a checkpoint's step (`drain_every`: `train.checkpoint_every`) the samples in
  flight finish first (no new group starts): a checkpoint then holds finished groups and groups not yet
  started, never half a sample, and a resumed run continues exactly where the straight run did.
So every token of a sample in batch b was sampled by a policy between steps b - 1 - k and b - 1: at
most k versions behind the learner that trains on it.

The engine is anything with `add(key, ids, max_tokens)`, `step()` (the requests that finished:
key, sampled ids, their logprobs, finish reason), `clear()` (abort all; what each had sampled so
far) and `running()`: the rollout worker's vLLM engine (`actors.worker.engine_stepper.EngineStepper`), or a
scripted one in tests.

Harness sessions (`env: harness`) are samples too, each a harness run talking to the worker's gateway
(`actors.worker.gateway.harness.LiveSessions`): a group's n sessions start together, the engine steps in
lock step with them, and a session lands when its harness returns. At a due point the engine is not
emptied: the calls in it finish on the policy held (a call is never continued by another policy), and
the calls asked after wait for the next policy; a session's tokens carry the versions that sampled them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from actors.worker.agent_loop import LiveEpisode, Wrapper
from actors.worker.offsets import token_char_offsets
from contracts.identity import peak_rss
from contracts.types import Sample
from tasks.env import Environment


class Stepper(Protocol):
    def add(self, key: str, ids: list[int], max_tokens: int) -> None: ...
    def step(self) -> list[tuple[str, list[int], list[float], str]]: ...
    def clear(self) -> dict[str, tuple[list[int], list[float]]]: ...
    def running(self) -> int: ...


@dataclass
class StreamGroup:
    """One group to sample: n completions of a rendered prompt (token ids), or n episodes of a row."""

    batch: int  # the step that trains on it
    index: int  # its place in that step's batch
    item: Any


@dataclass
class StreamedGroup:
    batch: int
    index: int
    samples: list[Sample]


@dataclass
class StreamReport:
    """What one `advance` call did: the groups finished, why it stopped, the engine's occupancy."""

    groups: list[StreamedGroup] = field(default_factory=list)
    due: int | None = None  # the step whose policy the worker waits for (at its due point)
    hungry: int | None = None  # the batch it waits to be fed
    # batch → (engine steps, running sequences summed over them) from the previous batch this worker
    # finished to this one: counted per batch, so a step's occupancy does not depend on timing
    occupancy: dict[int, tuple[int, int]] = field(default_factory=dict)
    peak_rss: int = 0  # the worker's peak resident memory so far, bytes


@dataclass
class EpisodeSettings:
    make_env: Callable[[], Environment]
    max_context: int


class Sessions(Protocol):
    """Harness sessions in flight (`actors.worker.gateway.harness.LiveSessions`)."""

    def start(self, key: str, row: dict) -> None: ...
    def step(self) -> tuple[bool, int, list[tuple[str, Sample]]]: ...
    def hold(self) -> None: ...
    def resume(self) -> None: ...
    def clear(self) -> int: ...


class _Flight:
    """One sample in flight: a completion, or an episode between its turns."""

    def __init__(self, group: tuple[int, int], slot: int, prompt: list[int], version: int,
                 live: LiveEpisode | None) -> None:
        self.group, self.slot, self.prompt, self.live = group, slot, prompt, live
        self.version0 = version  # the version that sampled its first token
        self.turn_ids: list[int] = []  # the current turn's tokens sampled so far (before a due point)
        self.turn_lps: list[float] = []
        self.turn_versions: list[int] = []

    def sequence(self) -> list[int]:
        return (self.live.sequence() if self.live is not None else self.prompt) + self.turn_ids


class SampleStream:
    """The stream of one worker (see the module docstring)."""

    def __init__(self, stepper: Stepper, tokenizer: Any, *, n: int, max_tokens: int, max_in_flight: int,
                 max_staleness: int, reseed: Callable[[int], None], episodes: EpisodeSettings | None = None,
                 offsets: bool = False, step: int = 0, version: int = 0, drain_every: int = 0,
                 sessions: Sessions | None = None) -> None:
        self.stepper, self.tokenizer, self.n, self.max_tokens = stepper, tokenizer, n, max_tokens
        self.max_in_flight, self.k, self.reseed = max_in_flight, max_staleness, reseed
        self.episodes, self.offsets, self.drain_every = episodes, offsets, drain_every
        self.sessions = sessions
        self.wrap = Wrapper.of(tokenizer) if episodes else None
        self.queue: deque[StreamGroup] = deque()
        self.fed_through = step  # the last batch fed (a stream resumed at `step` starts after it)
        self.flights: dict[str, _Flight] = {}
        self.open: dict[tuple[int, int], list[Sample | None]] = {}
        self.left: dict[int, int] = {}  # batch → its groups not finished on this worker
        self.held_step, self.version = step, version  # the step whose policy is served, and its version
        self._serial = 0
        self._steps = self._running = 0  # since the last batch this worker finished
        self.reseed(version)

    # ---- the coordinator's calls ------------------------------------------------------------------
    def feed(self, batch: int, groups: list[StreamGroup]) -> None:
        """Batch `batch`'s groups for this worker (possibly none), in order; batches are fed in order."""
        if batch != self.fed_through + 1:
            raise ValueError(f"the stream was fed batch {batch} after batch {self.fed_through}")
        self.fed_through = batch
        self.queue.extend(groups)
        self.left[batch] = len(groups)

    def take(self, step: int, version: int) -> None:
        """Serve the policy of `step` from the next engine step (called at the due point, after the
        weights are in): reseed, and add the samples in flight again with what they sampled so far."""
        self.held_step, self.version = step, version
        self.reseed(version)
        if self.sessions is not None:
            self.sessions.resume()
            return
        for key, f in self.flights.items():
            self.stepper.add(key, f.sequence(), self.max_tokens - len(f.turn_ids))

    def advance(self) -> StreamReport:
        """Run the engine until a batch finishes on this worker, the due point of the next policy, or
        the stream runs dry; returns the finished groups and why it stopped."""
        report = StreamReport(peak_rss=peak_rss())
        while True:
            self._fill()
            wait = self._waiting_for()
            if wait is not None:
                kind, value = wait
                if kind == "due":
                    self._pause()
                    report.due = value
                    if self._drains(value):  # a checkpoint's cut: nothing in flight, counts from zero
                        self._steps = self._running = 0
                else:
                    report.hungry = value
                break
            if not self.flights:
                break
            finished_batch = False
            if self.sessions is not None:
                stepped, running, ended = self.sessions.step()
                if stepped:
                    self._running += running
                    self._steps += 1
                for key, sample in ended:
                    finished_batch |= self._done(self.flights.pop(key), sample, report)
            else:
                self._running += self.stepper.running()
                self._steps += 1
                for key, ids, lps, reason in self.stepper.step():
                    finished_batch |= self._land(key, ids, lps, reason, report)
            if finished_batch:
                break
        return report

    def stop(self) -> int:
        """End the stream: the engine is emptied; returns the samples dropped (in flight or not started)."""
        if self.sessions is not None:
            self.sessions.clear()
        self.stepper.clear()
        dropped = len(self.flights) + self.n * len(self.queue)
        self.flights.clear()
        self.queue.clear()
        return dropped

    # ---- inside ---------------------------------------------------------------------------------
    def _pause(self) -> None:
        """Empty the engine at a due point: each sample in flight keeps what it sampled so far (and the
        version that did), and is added again at `take`. Harness sessions: their calls in the engine
        finish first, on the policy held."""
        if self.sessions is not None:
            self.sessions.hold()
            return
        for key, (ids, lps) in self.stepper.clear().items():
            f = self.flights[key]
            f.turn_ids += ids
            f.turn_lps += lps
            f.turn_versions += [self.version] * len(ids)

    def _allowed(self, batch: int) -> bool:
        return batch <= self.held_step + 1 + self.k

    def _fill(self) -> None:
        while self.queue and self._allowed(self.queue[0].batch) and (
                not self.flights or len(self.flights) + self.n <= self.max_in_flight):
            self._start(self.queue.popleft())

    def _waiting_for(self) -> tuple[str, int] | None:
        """("due", step) at a due point, ("hungry", batch) when the next batch is allowed but not fed,
        None while the engine should step."""
        nxt = self.queue[0].batch if self.queue else self.fed_through + 1
        if self._allowed(nxt):
            return None if self.queue or self.flights else ("hungry", nxt)
        step = nxt - 1 - self.k  # the policy the next group needs
        last = max(step, step + self.k - 1)  # batches that finish under the policy held (docstring)
        if all(left == 0 for b, left in self.left.items() if b <= last) and not (
                self.flights and self._drains(step)):
            return "due", step
        return None  # the flights of batches up to `last` (at a checkpoint's cut: all) finish first

    def _drains(self, step: int) -> bool:
        """Whether the due point of `step`'s policy is a checkpoint's cut: the worker lets every sample in
        flight finish first, so what a checkpoint of step `step` must hold of the stream is the groups
        finished and the groups not started, never a sample half done."""
        return bool(self.drain_every) and step % self.drain_every == 0

    def _start(self, group: StreamGroup) -> None:
        key = (group.batch, group.index)
        self.open[key] = [None] * self.n
        for slot in range(self.n):
            live = None
            if self.episodes is not None:
                live = LiveEpisode(self.episodes.make_env(), group.item, self.tokenizer, self.version)
                live.sample.versions = []
                prompt = live.sample.prompt_ids
            else:
                prompt = list(group.item) if self.sessions is None else []
            self._serial += 1
            # A session's name is its place in the run (its calls' seeds are functions of it), and name order
            # is start order (sessions land in the order of their names).
            name = f"s{self._serial}" if self.sessions is None else f"b{key[0]:06d}-{key[1]:05d}-{slot:03d}"
            self.flights[name] = f = _Flight(key, slot, prompt, self.version, live)
            if self.sessions is not None:
                self.sessions.start(name, group.item)
            else:
                self.stepper.add(name, f.sequence(), self.max_tokens)

    def _land(self, key: str, ids: list[int], lps: list[float], reason: str, report: StreamReport) -> bool:
        """A request finished: a completion is done, an episode's turn goes to its environment (and its
        next turn to the engine). True when that finished this worker's share of a batch."""
        f = self.flights.pop(key)
        turn_ids, turn_lps = f.turn_ids + list(ids), f.turn_lps + list(lps)
        versions = f.turn_versions + [self.version] * len(ids)
        if f.live is None:
            text = self.tokenizer.decode(turn_ids, skip_special_tokens=True)
            spans = token_char_offsets(self.tokenizer, turn_ids) if self.offsets else None
            first = versions[0] if versions else f.version0  # a sample may start before a due point and
            sample = Sample(f.prompt, turn_ids, turn_lps, text, reason, first, spans, versions=versions)
        else:
            live = f.live
            live.after_turn(turn_ids, turn_lps, self.tokenizer, self.wrap, self.episodes.max_context,
                            versions)
            if not live.done:
                self.flights[key] = nxt = _Flight(f.group, f.slot, f.prompt, f.version0, live)
                self.stepper.add(key, nxt.sequence(), self.max_tokens)
                return False
            sample = live.finish(self.tokenizer, self.offsets)
            sample.policy_version = next(  # sample its first token after it (its first policy token's)
                (v for v, m in zip(sample.versions, sample.loss_mask) if m), f.version0)
        return self._done(f, sample, report)

    def _done(self, f: _Flight, sample: Sample, report: StreamReport) -> bool:
        """A sample is done: into its group. True when that finished this worker's share of a batch."""
        group = self.open[f.group]
        group[f.slot] = sample
        if any(s is None for s in group):
            return False
        del self.open[f.group]
        report.groups.append(StreamedGroup(f.group[0], f.group[1], group))
        self.left[f.group[0]] -= 1
        if self.left[f.group[0]]:
            return False
        report.occupancy[f.group[0]] = (self._steps, self._running)
        self._steps = self._running = 0
        return True

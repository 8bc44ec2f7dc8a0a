"""Multi-turn episodes at the token level: many episodes in flight, the history never re-tokenized.

Per turn, every live episode's token sequence goes to the engine in one batch; each episode keeps the
ids its policy sampled exactly as sampled, hands the decoded text to its environment, and appends the
observation as ids rendered once from the chat template. An episode is then one `Sample`, the type a
single-turn completion has: the first messages (`prompt_ids`), then policy turns and observations
(`token_ids`), with a loss mask (1 on the policy's own tokens), the engine's logprobs of those tokens
(0.0 elsewhere), and the conversation, turn records and trajectory score as its `Episode`.

Why not re-render the conversation each turn: tokenizing the whole history again can merge the
sampled tokens differently at a turn boundary, and the learner would then train on tokens the sampler
never produced, without any error. Here the only text that is tokenized is the template's own wrapper
around each observation, and it must decode back to exactly that text (`TemplateDriftError`
otherwise); `check_transcript` compares a finished episode with the chat template's rendering.

The engine is any function from token sequences to (sampled ids, their logprobs), one per sequence:
the rollout worker passes its vLLM engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from actors.worker.offsets import token_char_offsets
from contracts.types import Episode, Sample
from tasks.env import OBSERVATION_ROLE, Environment

Generate = Callable[[list[list[int]]], list[tuple[list[int], list[float]]]]
_MARK = "\x00{}\x00"


class TemplateDriftError(ValueError):
    """The chat template's text does not survive tokenize → decode: ids appended for it would not be
    the tokens the template means."""


@dataclass
class Wrapper:
    """The chat template's text around an observation: `close` ends the assistant turn after its
    content (its end-of-turn token included), `before` / `after` surround the observation's content
    (`after` opens the next assistant turn)."""

    close: str
    before: str
    after: str

    @classmethod
    def of(cls, tokenizer: Any) -> Wrapper:
        said = [{"role": "user", "content": "u"}, {"role": "assistant", "content": _MARK.format("A")}]
        turn = tokenizer.apply_chat_template(said, tokenize=False)
        close = turn.split(_MARK.format("A"), 1)[1]
        full = tokenizer.apply_chat_template(said + [{"role": OBSERVATION_ROLE,
                                                      "content": _MARK.format("O")}],
                                             tokenize=False, add_generation_prompt=True)
        if not full.startswith(turn):
            raise TemplateDriftError("the chat template renders earlier turns "
                                     "differently once a tool message follows")
        before, after = full[len(turn):].split(_MARK.format("O"), 1)
        return cls(close, before, after)


def encode_exact(tokenizer: Any, text: str) -> list[int]:
    """`text` as ids that decode back to exactly `text`."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    back = tokenizer.decode(ids, skip_special_tokens=False)
    if back != text:
        raise TemplateDriftError(f"template text {text!r} decodes back as {back!r}")
    return ids


def first_prompt_ids(tokenizer: Any, messages: list[dict]) -> list[int]:
    """An episode's first messages as ids, tokenized as the single-turn prompts are: the rendered text,
    once (later turns are appended as ids, never re-tokenized)."""
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return tokenizer(text)["input_ids"]


class LiveEpisode:
    """One episode being played: its sample so far and its environment."""

    def __init__(self, env: Environment, row: dict, tokenizer: Any, version: int) -> None:
        self.env = env
        messages = list(env.reset(row))
        self.sample = Sample(first_prompt_ids(tokenizer, messages), [], [], "", "stop", version, loss_mask=[],
                             episode=Episode(messages=messages))
        self.done = False

    def sequence(self) -> list[int]:
        return self.sample.prompt_ids + self.sample.token_ids

    def add(self, ids: list[int], logprobs: list[float] | None, versions: list[int] | None = None) -> None:
        """Append a turn's ids: the policy's (with their logprobs, and in a stream the version that
        sampled each) or the environment's (`logprobs` None)."""
        s = self.sample
        s.token_ids += ids
        s.loss_mask += [1 if logprobs is not None else 0] * len(ids)
        s.logprobs += list(logprobs) if logprobs is not None else [0.0] * len(ids)
        if s.versions is not None:
            s.versions += versions if versions is not None else [s.versions[-1] if s.versions else
                                                                  s.policy_version] * len(ids)

    def end(self, truncated: bool) -> None:
        self.done = True
        self.sample.finish_reason = "length" if truncated else "stop"
        self.sample.episode.truncated = truncated

    def after_turn(self, ids: list[int], logprobs: list[float], tokenizer: Any, wrap: Wrapper,
                   max_context: int, versions: list[int] | None = None) -> None:
        """The policy's turn `ids` went to the environment: the episode ends (it says so, its
        `max_turns`, or no room for another turn in `max_context`) or its observation is appended."""
        eos = tokenizer.eos_token_id
        self.add(list(ids), list(logprobs), versions)
        text = tokenizer.decode([t for t in ids if t != eos], skip_special_tokens=False)
        episode = self.sample.episode
        episode.messages.append({"role": "assistant", "content": text})
        result = self.env.step(text)
        episode.turns.append(result.info)
        if result.done or len(episode.turns) >= self.env.max_turns:
            self.end(truncated=not result.done)
            return
        observation = result.observation or ""
        close = wrap.close
        if ids and ids[-1] == eos and close.startswith(tokenizer.eos_token):
            close = close[len(tokenizer.eos_token):]  # the policy sampled the end-of-turn token itself
        self.add(encode_exact(tokenizer, close + wrap.before + observation + wrap.after), None)
        episode.messages.append({"role": OBSERVATION_ROLE, "content": observation})
        if len(self.sequence()) >= max_context:
            self.end(truncated=True)

    def finish(self, tokenizer: Any, offsets: bool) -> Sample:
        """The finished episode's sample: its score, text and (for DART) token offsets."""
        s = self.sample
        s.episode.score = self.env.score()
        s.text = tokenizer.decode(s.token_ids, skip_special_tokens=True)
        s.offsets = token_char_offsets(tokenizer, s.token_ids) if offsets else None
        return s


def run_episodes(rows: Sequence[dict], make_env: Callable[[], Environment], tokenizer: Any,
                 generate: Generate, max_context: int, version: int = 0,
                 offsets: bool = False) -> list[Sample]:
    """Play one episode per row, all in flight together; an episode ends when its environment says
    so, after its `max_turns`, or when its next turn would not fit in `max_context` tokens
    (truncated). `version`: the policy that plays; `offsets`: each token's character span in the
    sample's text too (DART weights per turn)."""
    wrap = Wrapper.of(tokenizer)
    live = [LiveEpisode(make_env(), row, tokenizer, version) for row in rows]
    while active := [e for e in live if not e.done]:
        for e, (ids, logprobs) in zip(active, generate([e.sequence() for e in active]), strict=True):
            e.after_turn(ids, logprobs, tokenizer, wrap, max_context)
    return [e.finish(tokenizer, offsets) for e in live]


def scripted_samples(rows: Sequence[dict], make_env: Callable[[], Environment], tokenizer: Any,
                     scripts: Sequence[Sequence[str]], max_context: int) -> list[Sample]:
    """Episodes of `rows` played by a script (one list of assistant texts per row) against the real
    environment: the warm-up's token sequences and loss masks, built exactly as `run_episodes` builds
    the policy's own (each scripted turn ends with the end-of-turn token, as a sampled one does)."""
    out = []
    for row, script in zip(rows, scripts, strict=True):
        turns = iter(script)

        def say(sequences: list[list[int]]) -> list[tuple[list[int], list[float]]]:
            ids = tokenizer.encode(next(turns, ""), add_special_tokens=False) + [tokenizer.eos_token_id]  # noqa: B023
            return [(ids, [0.0] * len(ids))]

        out += run_episodes([row], make_env, tokenizer, say, max_context)
    return out


def check_transcript(tokenizer: Any, sample: Sample) -> None:
    """Raise TemplateDriftError unless the sample's ids decode to the chat template's rendering of its
    messages (up to the end of the last turn's closing text): what the learner trains on is the
    conversation the environment saw."""
    got = tokenizer.decode(sample.prompt_ids + sample.token_ids, skip_special_tokens=False)
    messages = sample.episode.messages
    ends_on_observation = messages[-1]["role"] == OBSERVATION_ROLE
    want = tokenizer.apply_chat_template(messages, tokenize=False,
                                         add_generation_prompt=ends_on_observation)
    rest = want[len(got):] if want.startswith(got) else None
    if rest is None or not Wrapper.of(tokenizer).close.endswith(rest):
        raise TemplateDriftError("episode ids decode to a different conversation than the template "
                                 f"renders:\nids:      {got[-200:]!r}\ntemplate: {want[-200:]!r}")


def episode_metrics(samples: Sequence[Sample]) -> dict[str, float]:
    """Per-step statistics of a batch of episodes: turns, tool calls and their error rate, success,
    truncation and the share of completion tokens that are observations (not trained on)."""
    n = max(1, len(samples))
    scores = [s.episode.score for s in samples]
    calls = sum(sc.get("tool_calls", 0.0) for sc in scores)
    tokens = sum(len(s.token_ids) for s in samples)
    return {
        "episode_turns_mean": sum(len(s.episode.turns) for s in samples) / n,
        "tool_calls_per_episode": calls / n,
        "tool_error_rate": sum(sc.get("tool_errors", 0.0) for sc in scores) / max(1.0, calls),
        "success_rate": sum(sc.get("success", 0.0) for sc in scores) / n,
        "frac_truncated_episodes": sum(s.truncated for s in samples) / n,
        "obs_token_frac": sum(len(s.token_ids) - s.policy_tokens for s in samples) / max(1, tokens),
    }


EPISODE_EVAL_KEYS = ("success_rate", "reward_mean", "tools", "params", "state", "outcome", "turns_mean",
                     "tool_error_rate", "truncated")
"""The scalar rows of an episode eval table, in the printed order: success, the mean trajectory reward
and its parts (the fund assistant's environment scores these four; a table has only the parts its
environment's `score()` gives), turns, tool errors, truncation."""
_PARTS = ("tools", "params", "state", "outcome")


def episode_eval(rows: Sequence[dict], samples: Sequence[Sample],
                 group_column: str = "category") -> dict:
    """The eval table of greedy episodes: success rate, mean reward and score parts, mean turns, tool
    error rate, truncation and the success rate per `group_column` value (rates in [0, 1], `n`)."""
    m = episode_metrics(samples)
    mean = lambda key: sum(s.episode.score.get(key, 0.0) for s in samples) / max(1, len(samples))  # noqa: E731
    groups: dict[str, list[float]] = {}
    for row, s in zip(rows, samples, strict=True):
        groups.setdefault(str(row.get(group_column)), []).append(s.episode.score.get("success", 0.0))
    parts = {k: mean(k) for k in _PARTS if any(k in s.episode.score for s in samples)}  # the env's own
    return {"success_rate": m["success_rate"], "reward_mean": mean("total"), **parts,
            "turns_mean": m["episode_turns_mean"],
            "tool_error_rate": m["tool_error_rate"], "truncated": m["frac_truncated_episodes"],
            "per_category": {k: sum(v) / len(v) for k, v in sorted(groups.items())}, "n": len(samples)}

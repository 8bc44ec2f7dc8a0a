"""A session's recorded engine calls as training samples, without re-tokenizing anything.

An agent that talks to the engine through an OpenAI-style endpoint makes one call per turn. Each call is
recorded as the engine saw it: the prompt's token ids, the ids it sampled, their logprobs and the policy
version of each. The calls of one session become one sample when every call's prompt starts with the
previous call's prompt and sampled ids, token for token: the tokens between (the tool's answer, the
chat template's turn markers) are the observation, kept in the sample with loss mask 0 and logprob 0.0,
as an in-worker episode's are. Where a prompt does not extend what came before (a chat template that
rewrites earlier turns, an agent that edits its messages), the session is cut there and goes on as a
new sample; every sample of a session gets the session's reward.

>>> calls = [Call([1, 2], [3, 4], [-0.1, -0.2], [0, 0]), Call([1, 2, 3, 4, 9], [5], [-0.3], [1])]
>>> [(s.prompt_ids, s.token_ids, s.loss_mask, s.versions) for s in session_samples(calls)]
[([1, 2], [3, 4, 9, 5], [1, 1, 0, 1], [0, 0, 0, 1])]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from contracts.types import Sample


@dataclass
class Call:
    """One engine call of a session, as recorded: what the engine was given and what it sampled."""

    prompt_ids: list[int]
    sampled_ids: list[int]
    logprobs: list[float]  # of each sampled id, from the engine
    versions: list[int]  # the policy version that sampled each id
    finish_reason: str = "stop"


def extends(prompt_ids: Sequence[int], before: Sequence[int]) -> bool:
    """Whether `prompt_ids` starts with `before`, token for token."""
    return len(prompt_ids) >= len(before) and list(prompt_ids[: len(before)]) == list(before)


def session_samples(calls: Sequence[Call], decode: Callable[[list[int]], str] | None = None) -> list[Sample]:
    """The samples of one session's calls, in order (one, unless a prompt does not extend its history).

    A call that sampled nothing still counts as a turn (its prompt may carry an observation forward)."""
    samples: list[Sample] = []
    current: Sample | None = None
    for call in calls:
        if len(call.logprobs) != len(call.sampled_ids) or len(call.versions) != len(call.sampled_ids):
            raise ValueError(f"a recorded call has {len(call.sampled_ids)} sampled ids but "
                             f"{len(call.logprobs)} logprobs and {len(call.versions)} versions")
        history = current.prompt_ids + current.token_ids if current is not None else None
        if current is None or not extends(call.prompt_ids, history):
            current = Sample(list(call.prompt_ids), [], [], "", call.finish_reason,
                             call.versions[0] if call.versions else 0, loss_mask=[], versions=[])
            samples.append(current)
        else:  # the observation: what the prompt adds after the history
            between = list(call.prompt_ids[len(history):])
            last = current.versions[-1] if current.versions else current.policy_version
            current.token_ids += between
            current.logprobs += [0.0] * len(between)
            current.loss_mask += [0] * len(between)
            current.versions += [last] * len(between)
        current.token_ids += list(call.sampled_ids)
        current.logprobs += list(call.logprobs)
        current.loss_mask += [1] * len(call.sampled_ids)
        current.versions += list(call.versions)
        current.finish_reason = call.finish_reason
    if decode is not None:
        for s in samples:
            s.text = decode(s.token_ids)
    return samples


def frac_split(sessions: Sequence[Sequence[Sample]]) -> float:
    """The share of sessions cut into more than one sample (a template or agent that rewrote history)."""
    return sum(len(s) > 1 for s in sessions) / max(1, len(sessions))

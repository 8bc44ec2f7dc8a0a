"""How a reward function is called: TRL's reward contract, exactly, so TRL's own rewards run unchanged.

    fn(prompts, completions, completion_ids, trainer_state, log_extra, log_metric, **other_columns)
        -> list[float | None]          (or an awaitable of one: `async def` rewards are awaited)

- `prompts`: each row's prompt as the dataset holds it: a string (TRL's standard format) or a list of
  chat messages (the conversational format).
- `completions`: a string for a standard prompt, `[{"role": "assistant", "content": text}]` for a
  conversational one (TRL #4202: a reward reading `completion[0]["content"]` works on the second).
- `completion_ids`: the token ids the policy sampled (no special tokens added).
- every other column of the row, one list per column (the prompt column excepted).
- `trainer_state` (`global_step`: the RL step), `log_extra` and `log_metric`: accepted for TRL's
  signature; what is logged through them goes to the Python log at debug level.
- `None` means "not applicable to this completion": it adds nothing to the weighted sum and is not a
  failure.

A reward that returns the wrong number of values, or something that is not a number or None, breaks the
contract for the whole call: `RewardContractError` names both lengths (or the bad value and where).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# Keyword arguments every call passes besides the row's columns (a column of one of these names is
# shadowed: preflight refuses such a dataset).
CALL_KEYS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")


class RewardContractError(ValueError):
    """A reward's answer that breaks the contract for the whole call (length or type)."""


@dataclass(frozen=True)
class TrainerState:
    """What TRL's `trainer_state` offers a reward that most rewards read: the step."""

    global_step: int = 0


def is_conversational(prompt: Any) -> bool:
    """A prompt in TRL's conversational format: a non-empty list of messages with a `role`."""
    return (isinstance(prompt, list) and bool(prompt)
            and all(isinstance(m, dict) and "role" in m for m in prompt))


def shaped(prompt: Any, text: str) -> Any:
    """A completion in the shape its prompt's format gives it."""
    return [{"role": "assistant", "content": text}] if is_conversational(prompt) else text


def _log_metric(name: str, value: float) -> None:
    log.debug("reward metric %s = %s", name, value)


def _log_extra(column: str, values: list) -> None:
    log.debug("reward extra column %s: %d values", column, len(values))


def reward_kwargs(prompts: list, texts: list[str], completion_ids: list[list[int]] | None,
                  columns: dict[str, list], step: int = 0) -> dict[str, Any]:
    """The keyword arguments of one call over these completions (all lists of one length)."""
    ids = completion_ids if completion_ids is not None else [[] for _ in texts]
    return {**columns, "prompts": list(prompts),
            "completions": [shaped(p, t) for p, t in zip(prompts, texts)],
            "completion_ids": [list(x) for x in ids], "trainer_state": TrainerState(step),
            "log_extra": _log_extra, "log_metric": _log_metric}


def call_reward(fn: Any, kwargs: dict[str, Any], n: int) -> list[float | None]:
    """`fn(**kwargs)`, awaited when it is a coroutine, checked: `n` values, each a finite number or None."""
    out = fn(**kwargs)
    if inspect.isawaitable(out):
        out = asyncio.run(_wait(out))  # reward calls run in worker threads: no loop is running there
    return checked(out, n)


async def _wait(awaitable: Any) -> Any:
    return await awaitable


def checked(out: Any, n: int) -> list[float | None]:
    """A reward's answer as a list of n floats or Nones; RewardContractError otherwise."""
    if isinstance(out, (str, bytes, dict)) or not hasattr(out, "__len__"):
        raise RewardContractError(f"returned a {type(out).__name__}; expected a list of {n} floats or None")
    values = list(out.tolist() if hasattr(out, "tolist") else out)  # numpy arrays and tensors too
    if len(values) != n:
        raise RewardContractError(f"returned {len(values)} values for {n} completions")
    result: list[float | None] = []
    for i, v in enumerate(values):
        if v is None:
            result.append(None)
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise RewardContractError(f"returned {v!r} ({type(v).__name__}) for completion {i}; "
                                      "expected a float or None") from None
        if not math.isfinite(x):
            raise ValueError(f"returned a NaN or inf ({x}) for completion {i}")
        result.append(x)
    return result


def needed_columns(fn: Any) -> list[str]:
    """The row columns a reward's signature requires: its parameters without a default that are not
    one of `CALL_KEYS` (a `**kwargs` takes whatever columns there are, and needs none)."""
    target = fn if inspect.isroutine(fn) or not callable(fn) else fn.__call__  # an instance: its __call__
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params
            if p.kind in kinds and p.default is inspect.Parameter.empty and p.name not in CALL_KEYS]

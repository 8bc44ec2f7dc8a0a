"""Name → reward function lookup, and weighted combinations of rewards.

This module owns how a config names a reward: a built-in name ("rule", "gt", "multistep_gt"), a name
registered with @register_reward, or an import path "package.module:attr". Built-in names are import
paths resolved on first use, so this generic module imports no task. A class found this way is
instantiated with no arguments. Every reward uses the TRL signature
`fn(prompts, completions, **columns) -> list[float]` and is called with keywords, as TRL does.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

RewardFn = Callable[..., list]
T = TypeVar("T")


class RewardNotFoundError(ValueError):
    """A reward name or import path that does not resolve to a callable reward."""


# The fund assistant's rewards (docs/fund_assistant.md#rule-reward, #ground-truth-reward), by import path.
BUILTINS: dict[str, str] = {
    "rule": "tasks.fund_assistant.rewards:rule_reward",
    "gt": "tasks.fund_assistant.rewards:gt_reward",
    "multistep_gt": "tasks.fund_assistant.rewards:gt_reward",
    # reasoning-gym's datasets, each scored by its own score_answer (docs/your_task.md#reasoning-gym)
    "reasoning_gym": "tasks.reasoning_gym:score",
    # an answer that ends with one closed <answer></answer> tag (rewards/answer_format.py)
    "answer_format": "rewards.answer_format:answer_format",
}
_REGISTRY: dict[str, Any] = {}


def known_rewards() -> list[str]:
    """Built-in and registered reward names, sorted."""
    return sorted({*BUILTINS, *_REGISTRY})


def register_reward(name: str, *, overwrite: bool = False) -> Callable[[T], T]:
    """Decorator registering a reward function (or a class, instantiated on lookup) under `name`.

    Re-registering the same object (a module imported twice, e.g. in a Ray worker) is allowed;
    another object under a taken name needs overwrite=True, so a typo cannot shadow "rule"."""

    def decorator(obj: T) -> T:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"reward name must be a non-empty string, got {name!r}")
        if not callable(obj):
            raise TypeError(f"reward {name!r} must be callable, got {obj!r}")
        old = _REGISTRY.get(name)
        same = old is obj or (
            old is not None
            and getattr(old, "__module__", None) == getattr(obj, "__module__", object())
            and getattr(old, "__qualname__", None) == getattr(obj, "__qualname__", object())
        )
        if old is not None and not same and not overwrite:
            raise ValueError(f"reward {name!r} is already registered ({old!r}); pass overwrite=True")
        if old is None and name in BUILTINS and not overwrite:
            raise ValueError(f"reward {name!r} is already registered (built "
                             f"in: {BUILTINS[name]}); pass overwrite=True")
        _REGISTRY[name] = obj
        return obj

    return decorator


def _not_found(what: str, why: str) -> RewardNotFoundError:
    return RewardNotFoundError(
        f"reward {what!r}: {why}. Known rewards: {', '.join(known_rewards())}; "
        "or give an import path 'package.module:function'."
    )


def _import_path(path: str) -> Any:
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise _not_found(path, "an import path needs both a module and an attribute")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise _not_found(path, f"cannot import module {module_name!r} ({e})") from e
    for part in attr.split("."):  # "module:Class.method" reaches nested attributes
        try:
            obj = getattr(obj, part)
        except AttributeError as e:
            raise _not_found(path, f"module {module_name!r} has no attribute {attr!r}") from e
    return obj


def get_reward(name_or_path: str | RewardFn) -> RewardFn:
    """The reward callable for a registered name, an import path 'package.module:attr', or a
    callable (returned as is). Classes are instantiated with no arguments."""
    if callable(name_or_path) and not isinstance(name_or_path, type):
        return name_or_path
    if isinstance(name_or_path, type):
        obj: Any = name_or_path
    elif not isinstance(name_or_path, str) or not name_or_path.strip():
        raise _not_found(str(name_or_path), "not a name, an import path or a callable")
    else:
        key = name_or_path.strip()
        if key in _REGISTRY:
            obj = _REGISTRY[key]
        elif key in BUILTINS:
            obj = _import_path(BUILTINS[key])
        elif ":" in key:
            obj = _import_path(key)
        else:
            raise _not_found(key, "unknown name")
    if isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as e:  # the class needs constructor arguments
            why = f"cannot instantiate {obj.__name__} with no arguments ({e})"
            raise _not_found(str(name_or_path), why) from e
    if not callable(obj):
        raise _not_found(str(name_or_path), f"resolves to {type(obj).__name__}, which is not callable")
    return obj


def combine(rewards: Sequence[tuple[str | RewardFn, float]], name: str | None = None) -> RewardFn:
    """One reward that is the weighted sum of others, like TRL's reward_weights: each function is
    called once per batch; a None score (TRL's "not applicable") contributes nothing. The sum is not
    clipped: weights summing to 1 over [0, 1] rewards keep it in [0, 1]."""
    if not rewards:
        raise ValueError("combine() needs at least one (reward, weight) pair")
    parts: list[tuple[RewardFn, float]] = []
    for fn, weight in rewards:
        w = float(weight)
        if not math.isfinite(w):
            raise ValueError(f"reward weight must be finite, got {weight!r}")
        parts.append((get_reward(fn), w))

    def combined(prompts: Any, completions: Any, **columns: Any) -> list[float]:
        n = len(completions)
        total = [0.0] * n
        for fn, w in parts:
            scores = list(fn(prompts=prompts, completions=completions, **columns))
            if len(scores) != n:
                label = getattr(fn, "__name__", repr(fn))
                raise ValueError(f"reward {label} returned {len(scores)} scores for {n} completions")
            for i, s in enumerate(scores):
                if s is not None:
                    total[i] += w * float(s)
        return total

    combined.__name__ = name or "+".join(f"{w:g}*{getattr(f, '__name__', 'reward')}" for f, w in parts)
    combined.parts = parts  # type: ignore[attr-defined]
    return combined

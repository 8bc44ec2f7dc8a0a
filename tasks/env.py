"""What an agent episode needs from a task: an environment the policy acts in, turn by turn.

A single-turn `Task` scores one completion. An `Environment` runs an episode: `reset(row)` gives the
first messages (system and user), each `step(assistant_text)` executes what the policy asked for and
returns the observation to append as the next message, until the policy answers or `max_turns` run
out (the episode is then truncated). `score()` judges the whole trajectory and returns a breakdown
whose `total` is the episode's reward and whose `success` says whether the episode did what was
asked. An environment holds one episode's state; make one per episode (`Task.environment()`).

`run_episode` drives an environment with any text policy (a function from the messages so far to the
next assistant text): the scripted agents of the tests and the evaluation of a trained policy use it.

>>> class Echo(Environment):
...     def reset(self, row): self.said = []; return [{"role": "user", "content": row["ask"]}]
...     def step(self, text):
...         self.said.append(text)
...         return StepResult(None if text == "bye" else "ok", done=text == "bye")
...     def score(self): return {"total": float(self.said[-1:] == ["bye"]), "success": 1.0}
>>> ep = run_episode(Echo(max_turns=3), {"ask": "hi"}, lambda msgs: "bye" if len(msgs) > 2 else "hello")
>>> [m["content"] for m in ep.messages], ep.truncated, ep.score["total"]
(['hi', 'hello', 'ok', 'bye'], False, 1.0)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from contracts.types import Episode

OBSERVATION_ROLE = "tool"
"""The chat role of an observation message (what a tool returned)."""


@dataclass
class StepResult:
    """What one policy turn led to: the observation to show next (None when the episode ended
    without one), whether the episode is over, and facts about the turn (tool, error, ...)."""

    observation: str | None
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class Environment(ABC):
    """One episode's world. Subclasses implement `reset`, `step` and `score`."""

    def __init__(self, max_turns: int = 6) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.max_turns = max_turns

    @abstractmethod
    def reset(self, row: dict) -> list[dict[str, str]]:
        """Start the episode of `row`; the first messages (system, user) the policy sees."""

    @abstractmethod
    def step(self, assistant_text: str) -> StepResult:
        """Execute the policy's turn (parse it, run the tool it calls) and say what came back."""

    @abstractmethod
    def score(self) -> dict[str, float]:
        """The trajectory's reward breakdown: every part in [0, 1], `total` (the reward) and
        `success` (1.0 when the episode did what was asked)."""


def run_episode(env: Environment, row: dict, policy: Callable[[list[dict[str, str]]], str]) -> Episode:
    """Play one episode of `row` with `policy` (messages so far → the next assistant text)."""
    messages = list(env.reset(row))
    turns: list[dict[str, Any]] = []
    done = False
    while not done and len(turns) < env.max_turns:
        text = policy(list(messages))
        messages.append({"role": "assistant", "content": text})
        result = env.step(text)
        turns.append(result.info)
        if result.observation is not None and not result.done:
            messages.append({"role": OBSERVATION_ROLE, "content": result.observation})
        done = result.done
    return Episode(messages, turns, env.score(), truncated=not done)

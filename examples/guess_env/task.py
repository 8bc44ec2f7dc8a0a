"""An environment of your own: multi-turn agent episodes. The policy guesses a secret number from 1 to 8;
the environment answers "higher" or "lower" until it is right or the turns run out. The task gives the
episode rows, a fresh environment per episode and, for the warm-up, a scripted trajectory per row
(binary search); the environment's score (`total`, `success`) is the reward and the judge.

    python train.py --config examples/guess_env/config.yaml
"""

from __future__ import annotations

import random

from pydantic import Field

from configs.base import Section
from tasks.base import Task
from tasks.env import Environment, StepResult, run_episode

SYSTEM = "Guess the secret number from 1 to 8. Reply with one number; you will hear higher or lower."


class GuessEnv(Environment):
    def reset(self, row: dict) -> list[dict[str, str]]:
        self.secret, self.guesses, self.errors = row["secret"], [], 0
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Your first guess?"}]

    def step(self, assistant_text: str) -> StepResult:
        text = assistant_text.strip()
        if not text.isdigit() or not 1 <= int(text) <= 8:
            self.errors += 1
            return StepResult("a number from 1 to 8, please", done=False, info={"tool_errors": 1})
        guess = int(text)
        self.guesses.append(guess)
        if guess == self.secret:
            return StepResult(None, done=True, info={"tool_calls": 1})
        return StepResult("higher" if self.secret > guess else "lower", done=False, info={"tool_calls": 1})

    def score(self) -> dict[str, float]:
        won = bool(self.guesses) and self.guesses[-1] == self.secret
        # right in fewer guesses scores more: binary search needs at most 4
        total = max(0.0, 1.0 - 0.2 * (len(self.guesses) - 1)) if won else 0.0
        return {"total": total, "success": float(won), "turns": float(len(self.guesses) + self.errors)}


class GuessOptions(Section):
    """`task.options` of the guessing game."""

    n_episodes: int = Field(400, ge=10, le=100_000)
    """Episode rows (a tenth held out); each is a secret number."""


class GuessTask(Task):
    name = "guess"
    options_model = GuessOptions
    options: GuessOptions
    group_column = "secret_is"

    def episode_rows(self) -> tuple[list[dict], list[dict]]:
        rng = random.Random(self.cfg.seed)
        rows = [{"id": i, "secret": (s := rng.randint(1, 8)), "secret_is": "low" if s <= 4 else "high"}
                for i in range(self.options.n_episodes)]
        cut = max(1, len(rows) // 10)
        return rows[cut:], rows[:cut]

    def rows(self) -> tuple[list[dict], list[dict]]:
        return self.episode_rows()

    def environment(self, max_turns: int) -> GuessEnv:
        return GuessEnv(max_turns)

    def episode_script(self, row: dict) -> list[str]:
        """Binary search: the warm-up's trajectory (the environment answers each guess)."""
        lo, hi, turns = 1, 8, []
        while True:
            guess = (lo + hi) // 2
            turns.append(str(guess))
            if guess == row["secret"]:
                return turns
            lo, hi = (guess + 1, hi) if row["secret"] > guess else (lo, guess - 1)

    def episode_corpus(self) -> list[str]:
        texts = []
        for row in self.episode_rows()[0][:64]:
            turns = iter(self.episode_script(row))
            episode = run_episode(GuessEnv(8), row, lambda _: next(turns))  # noqa: B023
            texts += [f"{m['role']}\n{m['content']}" for m in episode.messages]
        return texts

    def corpus(self) -> list[str]:
        return self.episode_corpus()

    def vocabulary(self) -> list[str]:
        return [str(i) for i in range(1, 9)]

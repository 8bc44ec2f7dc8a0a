"""Whether a run's rewards can teach anything at all. In the first `train.no_signal_steps` steps, every
completion getting the same score from every reward means every group has zero spread and every advantage
is 0. That is a reward the model never earns (a format it never writes, a tag it never closes), not bad
luck; the run says so once, with the reward's value and one completion, instead of running on silently.

    >>> w = NoSignal(steps=2)
    >>> w.observe(1, [{"answer_tag": 0.0, "total": 0.0}] * 4, ["The answer is 4."] * 4) is None
    True
    >>> print(w.observe(2, [{"answer_tag": 0.0, "total": 0.0}] * 4, ["4"] * 4)[:75])
    no reward signal in the first 2 steps: every completion scored answer_tag=0
    >>> w.observe(3, [{"answer_tag": 1.0, "total": 1.0}], ["x"]) is None   # said once, and only early
    True

A completion whose reward failed is not counted (its score is not the reward's). One step in which any
two completions differ in any reward ends the watch for the run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NoSignal:
    steps: int  # K: how many first steps are watched; 0 turns the watch off
    constant: dict[str, float] | None = None  # each reward's one value so far (None: nothing seen yet)
    example: str = ""  # the first completion seen
    done: bool = False  # a signal was seen, or the warning was given

    def observe(self, step: int, breakdowns: list[dict[str, float]], texts: list[str],
                failed: list[bool] | None = None) -> str | None:
        """Count one step's scores (`ScoreResult.breakdowns`, the completions' texts); returns the warning
        at step K when every score so far was one constant value per reward, else None."""
        if self.done or not self.steps or step > self.steps:
            return None
        kept = [(b, t) for i, (b, t) in enumerate(zip(breakdowns, texts)) if not (failed and failed[i])]
        for b, text in kept:
            values = {k: float(v) for k, v in b.items() if isinstance(v, int | float)}
            if self.constant is None:
                self.constant, self.example = values, text
            elif values != self.constant:
                self.done = True
                return None
        if step < self.steps or self.constant is None:
            return None
        self.done = True
        return self.message()

    def message(self) -> str:
        parts = {k: v for k, v in (self.constant or {}).items() if k != "total"} or self.constant or {}
        scores = ", ".join(f"{k}={v:g}" for k, v in parts.items())
        return (f"no reward signal in the first {self.steps} steps: every completion scored {scores} "
                "(every group had zero spread, every advantage 0: nothing to learn from); "
                f"one completion: {self.example[:300]!r}")

    def fields(self) -> dict:
        """The warning's event fields: the rewards' values and the example completion."""
        return {"steps": self.steps, "scores": dict(self.constant or {}), "completion": self.example[:1000]}

    def state_dict(self) -> dict:
        return {"constant": self.constant, "example": self.example, "done": self.done}

    def load_state_dict(self, state: dict | None) -> None:
        state = state or {}
        self.constant, self.example = state.get("constant"), state.get("example", "")
        self.done = bool(state.get("done", False))


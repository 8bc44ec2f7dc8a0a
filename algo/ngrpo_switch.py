"""The NGRPO switch: decides, step by step, whether NGRPO's virtual max-reward sample is used.

Owns: the mode (off / on / dynamic), the moving window of ``frac_reward_zero_std`` and the hysteresis
that turns NGRPO on and off, and the log of switch events. Does not compute the fractions (see
`algo.advantages.zero_std_stats`) nor the advantages.

Why dynamic (the field report's finding, docs/algorithm.md#the-dynamic-switch): early in training groups
differ naturally and NGRPO is not needed;
once the policy converges, most groups score identically and plain GRPO stops learning. Two thresholds
(on above 0.30, off below 0.20) keep the switch from flapping when the fraction hovers near one value.

Timing: the fraction of step t is measured on step t's rollout batch *before* its advantages are
computed, so ``update(t, frac_t)`` includes ``frac_t`` in the window and its answer applies to the same
batch. Until the window has filled, its mean is over the steps seen so far.

Example:
    >>> sw = NGRPOSwitch("dynamic", window=1)
    >>> [sw.update(step, f) for step, f in enumerate([0.1, 0.35, 0.25, 0.15])]
    [False, True, True, False]
    >>> [(e.step, e.active) for e in sw.events]
    [(1, True), (3, False)]
"""

from __future__ import annotations

from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Literal

SwitchMode = Literal["off", "on", "dynamic"]


@dataclass(frozen=True)
class SwitchEvent:
    """NGRPO turned on (``active=True``) or off at ``step``, when the window's mean was ``window_value``."""

    step: int
    active: bool
    window_value: float


class NGRPOSwitch:
    """Mode ``"off"``: never active. ``"on"``: always active. ``"dynamic"``: turns on when the moving
    mean of ``frac_reward_zero_std`` over the last ``window`` steps is strictly above ``on_above``, and
    off when it is strictly below ``off_below``; in between it keeps its state. Starts inactive.
    """

    def __init__(
        self,
        mode: SwitchMode = "dynamic",
        on_above: float = 0.30,
        off_below: float = 0.20,
        window: int = 5,
    ) -> None:
        _validate(mode, on_above, off_below, window)
        self.mode: SwitchMode = mode
        self.on_above = float(on_above)
        self.off_below = float(off_below)
        self.window = int(window)
        self._fracs: deque[float] = deque(maxlen=self.window)
        self._active = mode == "on"
        self.events: list[SwitchEvent] = []

    @classmethod
    def from_config(cls, cfg: Any) -> NGRPOSwitch:
        """Build from anything with ``mode``, ``on_above``, ``off_below``, ``window`` (an NGRPOConfig)."""
        return cls(cfg.mode, on_above=cfg.on_above, off_below=cfg.off_below, window=cfg.window)

    @property
    def active(self) -> bool:
        """Whether NGRPO is on for the batch of the latest `update`."""
        return self._active

    @property
    def window_value(self) -> float | None:
        """The moving mean of the fractions in the window, or None before the first update."""
        return sum(self._fracs) / len(self._fracs) if self._fracs else None

    def update(self, step: int, frac: float) -> bool:
        """Record step ``step``'s ``frac_reward_zero_std`` and return whether NGRPO is active for it.

        In ``"dynamic"`` mode a change of state appends a `SwitchEvent` to ``events``.
        """
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"frac_reward_zero_std must be in [0, 1], got {frac}")
        self._fracs.append(float(frac))
        if self.mode != "dynamic":
            return self._active
        value = self.window_value
        assert value is not None  # just appended
        if not self._active and value > self.on_above:
            self._active = True
            self.events.append(SwitchEvent(step=int(step), active=True, window_value=value))
        elif self._active and value < self.off_below:
            self._active = False
            self.events.append(SwitchEvent(step=int(step), active=False, window_value=value))
        return self._active

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: settings, window contents, state and the event log (JSON-safe)."""
        return {
            "mode": self.mode,
            "on_above": self.on_above,
            "off_below": self.off_below,
            "window": self.window,
            "fracs": list(self._fracs),
            "active": self._active,
            "events": [asdict(e) for e in self.events],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from `state_dict`. The settings come from the checkpoint too, so a resumed run
        switches exactly as the uninterrupted one would have."""
        _validate(state["mode"], state["on_above"], state["off_below"], state["window"])
        self.mode = state["mode"]
        self.on_above = float(state["on_above"])
        self.off_below = float(state["off_below"])
        self.window = int(state["window"])
        self._fracs = deque((float(f) for f in state["fracs"]), maxlen=self.window)
        self._active = bool(state["active"])
        self.events = [SwitchEvent(**e) for e in state["events"]]


def _validate(mode: str, on_above: float, off_below: float, window: int) -> None:
    if mode not in ("off", "on", "dynamic"):
        raise ValueError(f"mode must be 'off', 'on' or 'dynamic', got {mode!r}")
    if not 0.0 <= off_below <= on_above <= 1.0:
        raise ValueError(
            f"need 0 <= off_below <= on_above <= 1, got off_below={off_below}, on_above={on_above}"
        )
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")

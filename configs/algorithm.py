"""Algorithm configuration: advantages, NGRPO, the policy loss, overlong shaping, difficulty filtering.

Validated before any actor starts. Every field has bounds and a one-line docstring, which pydantic turns
into the field's description (``use_attribute_docstrings``), so errors and generated docs name them.
Defaults are the field report's (docs/algorithm.md). In YAML these live under ``algorithm:``, e.g.::

    algorithm:
      ngrpo: {mode: dynamic, on_above: 0.3, off_below: 0.2}
      loss: {agg: token_mean, eps_low: 0.2, eps_high: 0.28}

NGRPO's mode is a plain ``Literal`` field rather than a discriminated union of per-mode models, so that
overriding ``algorithm.ngrpo.mode`` alone never trips over the other modes' (forbidden) extra keys.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from configs.base import Section


class AdvantageConfig(Section):
    """Group-relative advantage: ``A_i = (r_i - mean) / (std + eps)`` within each prompt's group."""

    std: Literal["population", "unbiased", "none"] = "population"
    """Std estimator: population (/n), unbiased (/(n-1)), or none (Dr.GRPO: subtract the mean only)."""
    eps: float = Field(default=1e-6, ge=0.0, le=1.0)
    """Added to the std before dividing."""


class NGRPOConfig(Section):
    """NGRPO: virtual max-reward samples join each group's mean and std; off / on / dynamic."""

    mode: Literal["off", "on", "dynamic"] = "dynamic"
    """off: plain GRPO; on: always NGRPO; dynamic: switched by the moving frac_reward_zero_std."""
    max_reward: float = Field(default=1.0, gt=0.0, le=1e6)
    """Reward of each virtual sample (the reward scale's maximum)."""
    num_virtual: int = Field(default=1, ge=1, le=64)
    """How many virtual samples join each group."""
    on_above: float = Field(default=0.30, ge=0.0, le=1.0)
    """Dynamic mode: turn NGRPO on when the windowed frac_reward_zero_std is above this."""
    off_below: float = Field(default=0.20, ge=0.0, le=1.0)
    """Dynamic mode: turn NGRPO off when the windowed frac_reward_zero_std is below this."""
    window: int = Field(default=5, ge=1, le=10_000)
    """Dynamic mode: moving-mean window, in steps."""

    @model_validator(mode="after")
    def _hysteresis(self) -> NGRPOConfig:
        if self.off_below > self.on_above:
            raise ValueError(
                f"off_below ({self.off_below}) must be <= on_above ({self.on_above}) for the hysteresis"
            )
        return self


class LossConfig(Section):
    """The clipped token-level policy loss (GRPO-TCR) and DART token weights (docs/algorithm.md#the-loss)."""

    eps_low: float = Field(default=0.2, ge=0.0, lt=1.0)
    """Lower clip: the ratio is clipped below at 1 - eps_low."""
    eps_high: float = Field(default=0.28, ge=0.0, le=10.0)
    """Upper clip (clip-higher): the ratio is clipped above at 1 + eps_high."""
    agg: Literal["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"] = "token_mean"
    """Aggregation: over all tokens, per-sequence mean then mean, or Dr.GRPO's sum / max_tokens."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Dr.GRPO's constant normaliser for seq_mean_token_sum_norm; None: the batch's token dimension."""
    kl_coef: float = Field(default=0.0, ge=0.0, le=10.0)
    """Weight of the k3 KL to the reference (the model with the adapter disabled); 0 skips the reference."""
    tis_cap: float | None = Field(default=2.0, ge=1.0, le=100.0)
    """Truncated importance sampling: each token's surrogate is weighted by min(pi_old / pi_behaviour,
    tis_cap), pi_behaviour being the sampling policy (vLLM's logprobs: an older version in the one-step-off
    pipeline, or the same weights computed by another engine). None: no weight."""
    dart: bool = False
    """Weight completion tokens by field: thought_weight in thought, action_weight in action."""
    thought_weight: float = Field(default=0.3, ge=0.0, le=10.0)
    """DART: weight of tokens inside the thought string."""
    action_weight: float = Field(default=0.7, ge=0.0, le=10.0)
    """DART: weight of tokens inside the action object."""
    other_weight: float = Field(default=1.0, ge=0.0, le=10.0)
    """DART: weight of all other completion tokens (keys, punctuation, plan)."""


class OverlongConfig(Section):
    """Overlong reward shaping (docs/algorithm.md#overlong-shaping): 0, then linear to -1 over the last
    `buffer` tokens."""

    enabled: bool = True
    """Add the length penalty to every completion's reward."""
    buffer: int = Field(default=50, ge=0, le=1_000_000)
    """Width of the linear ramp in tokens, ending at max_len (50 of the field report's 350)."""
    max_len: int | None = Field(default=None, ge=1)
    """Length at which the penalty reaches -1; None: the rollout's max completion tokens."""

    @model_validator(mode="after")
    def _buffer_fits(self) -> OverlongConfig:
        if self.max_len is not None and self.buffer > self.max_len:
            raise ValueError(f"buffer ({self.buffer}) must be <= max_len ({self.max_len})")
        return self


class DifficultyConfig(Section):
    """Difficulty filter (docs/algorithm.md#difficulty-filtering): drop all-right / all-wrong prompts, keep a
    difficulty mix."""

    enabled: bool = False
    """Filter the prompt pool by the current policy's pass rates."""
    num_samples: int = Field(default=8, ge=2, le=1024)
    """Samples per prompt used to estimate its pass rate."""
    easy_min: float = Field(default=0.7, gt=0.0, le=1.0)
    """A pass rate at or above this is easy."""
    hard_max: float = Field(default=0.3, ge=0.0, lt=1.0)
    """A pass rate at or below this is hard; medium lies in between."""
    mix: tuple[float, float, float] = (0.3, 0.5, 0.2)
    """(easy, medium, hard) shares of the kept prompts; non-negative, summing to 1."""

    @model_validator(mode="after")
    def _consistent(self) -> DifficultyConfig:
        if self.hard_max >= self.easy_min:
            raise ValueError(f"hard_max ({self.hard_max}) must be < easy_min ({self.easy_min})")
        if any(m < 0 for m in self.mix) or abs(sum(self.mix) - 1.0) > 1e-6:
            raise ValueError(f"mix {self.mix} must be three non-negative shares summing to 1")
        return self


class AlgorithmConfig(Section):
    """Everything that defines the RL objective (docs/algorithm.md)."""

    advantage: AdvantageConfig = Field(default_factory=AdvantageConfig)
    """Group advantage normalisation."""
    ngrpo: NGRPOConfig = Field(default_factory=NGRPOConfig)
    """NGRPO virtual samples and the dynamic switch."""
    loss: LossConfig = Field(default_factory=LossConfig)
    """Policy loss: clipping, aggregation, KL, DART weights."""
    overlong: OverlongConfig = Field(default_factory=OverlongConfig)
    """Overlong reward shaping."""
    difficulty: DifficultyConfig = Field(default_factory=DifficultyConfig)
    """Difficulty filtering of the prompt pool."""

"""The root config: one section per component."""

from __future__ import annotations

from pydantic import model_validator

from configs.algorithm import AlgorithmConfig
from configs.base import Section
from configs.cluster import ClusterConfig
from configs.env import EnvConfig
from configs.learner import LearnerConfig
from configs.model import ModelConfig
from configs.reward import RewardConfig
from configs.rollout import RolloutConfig
from configs.task import TaskConfig
from configs.train import TrainConfig


class Config(Section):
    """Everything a run needs; validated as a whole before any actor starts."""

    model: ModelConfig = ModelConfig()
    """The policy model and its LoRA adapter."""
    task: TaskConfig = TaskConfig()
    """The task and its data."""
    rollout: RolloutConfig = RolloutConfig()
    """The vLLM rollout workers."""
    reward: RewardConfig = RewardConfig()
    """The reward functions and the reward pool."""
    learner: LearnerConfig = LearnerConfig()
    """The DeepSpeed learner ranks."""
    algorithm: AlgorithmConfig = AlgorithmConfig()
    """The RL objective."""
    train: TrainConfig = TrainConfig()
    """The step loop, warm-up, eval and outputs."""
    env: EnvConfig = EnvConfig()
    """Multi-turn agent episodes (off: single-turn completions)."""
    cluster: ClusterConfig = ClusterConfig()
    """How the job meets Ray."""

    @model_validator(mode="after")
    def _cross_checks(self) -> "Config":
        if self.rollout.max_tokens >= self.rollout.max_model_len:
            raise ValueError(
                f"rollout.max_tokens ({self.rollout.max_tokens}) must be below rollout.max_model_len "
                f"({self.rollout.max_model_len}) to leave room for the prompt"
            )
        if self.env.enabled:
            self._episode_checks()
        elif self.train.warmup.drill.steps or self.train.warmup.drill.mix:
            raise ValueError("train.warmup.drill: the entity drill is for agent episodes; set env.enabled")
        if self.model.name == "tiny":
            head = self.model.tiny.hidden_size // self.model.tiny.num_heads
            if head not in (32, 64, 80, 96, 112, 128, 160, 192, 224, 256):
                raise ValueError(
                    f"model.tiny: hidden_size/num_heads = {head}, but vLLM needs a head size of 32, 64, 80, …"
                )
        return self

    def _episode_checks(self) -> None:
        """What agent episodes do not combine with (yet): refused before anything starts."""
        if self.env.max_context + self.rollout.max_tokens > self.rollout.max_model_len:
            raise ValueError(f"env.max_context ({self.env.max_context}) + rollout.max_tokens ({self.rollout.max_tokens}) "
                             f"must fit in rollout.max_model_len ({self.rollout.max_model_len})")
        off = {"train.max_staleness": self.train.max_staleness != 0, "algorithm.loss.dart": self.algorithm.loss.dart,
               "algorithm.difficulty.enabled": self.algorithm.difficulty.enabled}
        on = [k for k, v in off.items() if v]
        if on:
            raise ValueError(f"env.enabled: agent episodes run synchronously, without DART token weights and "
                             f"without the difficulty filter; turn off {', '.join(on)}")

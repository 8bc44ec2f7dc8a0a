"""The root config: one section per component."""

from __future__ import annotations

from pydantic import model_validator

from configs.algorithm import AlgorithmConfig
from configs.base import Section
from configs.cluster import ClusterConfig
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
    cluster: ClusterConfig = ClusterConfig()
    """How the job meets Ray."""

    @model_validator(mode="after")
    def _cross_checks(self) -> "Config":
        if self.rollout.max_tokens >= self.rollout.max_model_len:
            raise ValueError(
                f"rollout.max_tokens ({self.rollout.max_tokens}) must be below rollout.max_model_len "
                f"({self.rollout.max_model_len}) to leave room for the prompt"
            )
        if self.model.name == "tiny":
            head = self.model.tiny.hidden_size // self.model.tiny.num_heads
            if head not in (32, 64, 80, 96, 112, 128, 160, 192, 224, 256):
                raise ValueError(
                    f"model.tiny: hidden_size/num_heads = {head}, but vLLM needs a head size of 32, 64, 80, …"
                )
        return self

"""The root config: one section per component."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator

from configs.algorithm import AlgorithmConfig
from configs.cluster import ClusterConfig
from configs.data import DataConfig
from configs.learner import LearnerConfig
from configs.model import ModelConfig
from configs.reward import RewardConfig
from configs.rollout import RolloutConfig
from configs.train import TrainConfig


class Config(BaseModel):
    """Everything a run needs; validated as a whole before any actor starts."""

    model_config = ConfigDict(extra="forbid")
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    rollout: RolloutConfig = RolloutConfig()
    reward: RewardConfig = RewardConfig()
    learner: LearnerConfig = LearnerConfig()
    algorithm: AlgorithmConfig = AlgorithmConfig()
    train: TrainConfig = TrainConfig()
    cluster: ClusterConfig = ClusterConfig()

    @model_validator(mode="after")
    def _cross_checks(self) -> "Config":
        if self.rollout.max_tokens >= self.rollout.max_model_len:
            raise ValueError(
                f"rollout.max_tokens ({self.rollout.max_tokens}) must be below rollout.max_model_len "
                f"({self.rollout.max_model_len}) to leave room for the prompt"
            )
        if self.model.lora.r > 0 and self.model.name == "tiny":
            head = self.model.tiny.hidden_size // self.model.tiny.num_heads
            if head not in (32, 64, 80, 96, 112, 128, 160, 192, 224, 256):
                raise ValueError(
                    f"model.tiny: hidden_size/num_heads = {head}, but vLLM needs a head size of 32, 64, 80, …"
                )
        return self

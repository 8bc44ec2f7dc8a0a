"""The root config: one section per component."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import field_validator, model_validator

from configs.algorithm import AlgorithmConfig
from configs.base import Section
from configs.cluster import ClusterConfig
from configs.env import Completions, EnvConfig, env_section
from configs.learner import LearnerConfig
from configs.model import ModelConfig, ModelSource
from configs.pipeline import upgrade
from configs.reward import RewardConfig
from configs.rollout import RolloutConfig
from configs.task import TaskConfig
from configs.tracking import TrackingConfig
from configs.train import MAX_SAMPLES_PER_STEP, TrainConfig


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
    env: EnvConfig = Completions()
    """What a sample is: a single-turn completion, or a multi-turn agent episode (configs/env.py)."""
    cluster: ClusterConfig = ClusterConfig()
    """How the job meets Ray."""
    tracking: TrackingConfig = TrackingConfig()
    """The experiment trackers (TensorBoard, MLflow, W&B) the run reports to."""

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        """Keys an older config has that now live in the pipeline's section, moved there (configs and run
        folders written before still load)."""
        if isinstance(data, dict):
            train, rollout = data.get("train", {}), data.get("rollout", {})
            if isinstance(train, dict) and isinstance(rollout, dict):
                train, rollout = upgrade(train, rollout)
                data = {**data, "train": train, "rollout": rollout}
        return data

    @field_validator("env", mode="before")
    @classmethod
    def _env_kind(cls, value: Any) -> Any:
        return env_section(value)

    @model_validator(mode="after")
    def _cross_checks(self) -> Config:
        if self.rollout.max_tokens >= self.rollout.max_model_len:
            raise ValueError(
                f"rollout.max_tokens ({self.rollout.max_tokens}) must be below rollout.max_model_len "
                f"({self.rollout.max_model_len}) to leave room for the prompt"
            )
        drill = self.train.warmup.drill
        if self.env.enabled:
            self._episode_checks()
        elif drill.steps or drill.mix or drill.answers:
            raise ValueError("train.warmup.drill: the entity drill is for agent episodes; set env: episodes")
        elif self.train.warmup.swap_entities:
            raise ValueError("train.warmup.swap_entities: entity swapping is for agent episodes; "
                             "set env: episodes")
        if self.model.source is ModelSource.TINY:
            head = self.model.tiny.hidden_size // self.model.tiny.num_heads
            if self.model.tiny.hidden_size % self.model.tiny.num_heads:
                raise ValueError(f"model.tiny.hidden_size ({self.model.tiny.hidden_size}) "
                                 f"must be a multiple of model.tiny.num_heads ({self.model.tiny.num_heads})")
            if head not in (32, 64, 80, 96, 112, 128, 160, 192, 224, 256):
                raise ValueError(
                    f"model.tiny: hidden_size/num_heads = {head}, but vLLM needs a head size of 32, 64, 80, …"
                )
        self._size_checks()
        self._input_checks()
        return self

    def _size_checks(self) -> None:
        """Sizes that only fail once roles run (a step's shaping, the engine's start, memory):
        refused here."""
        ov, ro = self.algorithm.overlong, self.rollout
        if ov.enabled and ov.max_len is None:
            # The penalty ramp is the last `buffer` tokens before max_len (algo.shaping.overlong_penalty needs
            # 0 <= buffer <= max_len); without algorithm.overlong.max_len, max_len is a single-turn
            # completion's rollout.max_tokens, or an episode's env.max_turns x rollout.max_tokens.
            ramp_end, what = ro.max_tokens, f"rollout.max_tokens ({ro.max_tokens})"
            if self.env.enabled:
                ramp_end = self.env.max_turns * ro.max_tokens
                what = f"env.max_turns x rollout.max_tokens ({ramp_end})"
            if ov.buffer > ramp_end:
                raise ValueError(f"algorithm.overlong.buffer ({ov.buffer}) must be at most {what}, where the "
                                 "overlong penalty reaches -1; "
                                 "lower the buffer or set algorithm.overlong.max_len")
        tiny = self.model.source is ModelSource.TINY
        if tiny and ro.max_model_len > self.model.tiny.max_position_embeddings:
            # vLLM refuses an engine longer than the model's positions (a named model: checked in preflight).
            raise ValueError(f"rollout.max_model_len ({ro.max_model_len}) must be at most "
                             "model.tiny.max_position_embeddings "
                             f"({self.model.tiny.max_position_embeddings}), "
                             "the tiny model's context")
        if ro.tensor_parallel_size > 1 and ro.num_gpus == 0 and ro.distributed_executor_backend != "mp":
            # vLLM's CPU platform has no Ray executor, and inside the worker's placement group vLLM would
            # pick Ray by default ("current platform cpu does not support ray").
            raise ValueError(f"rollout.tensor_parallel_size ({ro.tensor_parallel_size}) > 1 on CPU "
                             f"(rollout.num_gpus 0) needs rollout.distributed_executor_backend=mp (got "
                             f"{ro.distributed_executor_backend}): "
                             "vLLM on CPU runs tensor parallelism only with mp")
        samples = self.train.prompts_per_step * ro.n
        if samples > MAX_SAMPLES_PER_STEP:
            raise ValueError(f"train.prompts_per_step ({self.train.prompts_per_step}) x rollout.n ({ro.n}) = "
                             f"{samples} samples a step; at most {MAX_SAMPLES_PER_STEP} are allowed")

    def _input_checks(self) -> None:
        """Inputs that would be ignored, leaving a run that trains on nothing or not on what was given."""
        if not self.env.enabled and not self.reward.functions:
            # Single-turn rewards are the weighted sum of reward.functions: none would train on all-zero
            # rewards (agent episodes are scored by the environment and use none).
            raise ValueError("reward.functions is empty: single-turn completions need at least one reward "
                             "function (e.g. [{name: gt}]); "
                             "only agent episodes (env: episodes) are scored without")
        files = [k for k in ("train_file", "eval_file") if getattr(self.task, k)]
        if self.env.enabled and files:
            # Agent episodes play the task's episode_rows (its own generator); data files are never read.
            raise ValueError(f"{' and '.join(f'task.{k}' for k in files)}: agent episodes (env: episodes) "
                             "play the task's generated episodes and read no data file; "
                             "drop the file or set env: completions")

    def _episode_checks(self) -> None:
        """What agent episodes need besides the single-turn loop's settings: refused before anything
        starts. (The one-step-off pipeline, DART weights per turn and the difficulty filter all apply.)"""
        if self.env.kind == "harness":
            self._harness_checks()
        elif self.env.max_context + self.rollout.max_tokens > self.rollout.max_model_len:
            raise ValueError(f"env.max_context ({self.env.max_context}) + rollout.max_tokens "
                             f"({self.rollout.max_tokens}) must fit in rollout.max_model_len "
                             f"({self.rollout.max_model_len})")
        drill = self.train.warmup.drill
        if drill.answers and not (drill.steps or drill.mix):
            # The answer rows join the drill's steps and the warm-up steps that mix drill rows in; with
            # neither there is no drill to join, and the setting would do nothing.
            raise ValueError(f"train.warmup.drill.answers ({drill.answers}) needs the entity drill: "
                             "set train.warmup.drill.steps or train.warmup.drill.mix above 0")

    def _harness_checks(self) -> None:
        """A harness's turns are the model's own chat format, not ReAct JSON (DART weighs the latter)."""
        if self.algorithm.loss.dart:
            raise ValueError("algorithm.loss.dart weighs the fields of ReAct JSON turns; a harness's turns "
                             "are the model's own chat format: set algorithm.loss.dart false")

    def threads(self, role: Literal["rollout", "learner"], alone: bool = False) -> int | None:
        """Torch/OpenMP threads of one actor of `role` (its `num_threads`, with "auto" resolved), or None
        for Ray's default. "auto" gives each actor the cores its role may use while it works: in `sync`
        (or `alone`, as the warm-up runs before any worker starts) generation and learning take turns on
        the same cores, so the role's actors share all the CPUs both roles reserve; in `one_step_off` and
        `stream` both roles work at once and each actor keeps to its own `num_cpus` (two roles spinning
        two threads each on two cores ran each phase about twice as slowly: docs/performance.md).
        The rule assumes the roles share the machine, as on one CPU node; on GPU nodes set a number."""
        own = self.rollout if role == "rollout" else self.learner
        if own.num_threads != "auto":
            return own.num_threads
        if self.train.pipeline.overlaps and not alone:
            return max(1, int(own.num_cpus))
        reserved = (self.rollout.num_workers * self.rollout.num_cpus
                    + self.learner.world_size * self.learner.num_cpus)
        actors = self.rollout.num_workers if role == "rollout" else self.learner.world_size
        return max(1, int(reserved // actors))

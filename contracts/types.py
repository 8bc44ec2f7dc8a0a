"""The data contracts between roles: one dataclass per boundary.

Coordinator → RolloutWorker: rendered prompts (or episode rows) and sampling settings; back: a `Rollout`
of `Sample`s.
Coordinator → RewardPool: `ScoreRequest`; back: `ScoreResult`.
Coordinator → Learner: `TrainBatch`; back: a metrics dict, and on request an exported `LoraUpdate`.
Learner → RolloutWorker (by object reference, through the coordinator): `LoraUpdate`; back: `Served`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Episode:
    """An agent episode at the text level: the conversation, each turn's record, whether it was cut
    (its turn or context limit) and the environment's score of the whole trajectory (its reward,
    `success` its judge's verdict). A rollout worker's episode is a sample's `episode`; one played
    without an engine (`tasks.env.run_episode`) stands alone."""

    messages: list[dict[str, str]] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    score: dict[str, float] = field(default_factory=dict)
    truncated: bool = False
    error: str | None = None  # why the episode failed (a harness that raised or ran out of time)


@dataclass
class Sample:
    """One sample a rollout worker returns: a completion of a prompt, or a whole agent episode.

    For an episode, `token_ids` holds the policy's turns and, between them, the environment's
    observations (tokens the policy did not sample: `loss_mask` 0, logprob 0.0); `text` and `offsets`
    cover them all. Everything downstream (scores, statistics, the training batch) reads this one type.
    """

    prompt_ids: list[int]  # (P,) the prompt; an episode's first messages
    token_ids: list[int]  # (T,) what followed the prompt
    logprobs: list[float]  # (T,) raw-distribution (temperature 1) logprob of each sampled token
    text: str
    finish_reason: str  # "stop" | "length" (an episode cut at its turn or context limit) | …
    policy_version: int  # the adapter version that sampled its first token
    # (T,) character span of each token in `text`, when the caller asked for them (DART weights)
    offsets: list[tuple[int, int]] | None = None
    loss_mask: list[int] | None = None  # (T,) 1 on the policy's own tokens; None: every token is
    # (T,) the version that sampled each token, where a sample spans several; None: all policy_version
    versions: list[int] | None = None
    episode: Episode | None = None
    # A harness session cut where a call's prompt did not extend what came before: its later pieces, each
    # trained with this sample's advantage (actors.worker.sessions). None: the session is this sample.
    parts: list[Sample] | None = None

    @property
    def policy_tokens(self) -> int:
        """Tokens the policy sampled (an episode's observations left out; a cut session's parts counted)."""
        own = len(self.token_ids) if self.loss_mask is None else sum(self.loss_mask)
        return own + sum(p.policy_tokens for p in self.parts or [])

    def pieces(self) -> list[Sample]:
        """What the learner trains on for this sample: itself, then its parts."""
        return [self, *(self.parts or [])]

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Sample:
        """A sample from `dataclasses.asdict` of one (a checkpoint holds the pipeline's next batch so)."""
        episode = Episode(**d["episode"]) if d.get("episode") else None
        offsets = [tuple(o) for o in d["offsets"]] if d.get("offsets") is not None else None
        parts = [cls.from_dict(p) for p in d["parts"]] if d.get("parts") else None
        return cls(**{**d, "episode": episode, "offsets": offsets, "parts": parts})


@dataclass
class Rollout:
    """A worker's answer to one call: groups[i] holds the n samples of its i-th prompt (or episode row)."""

    groups: list[list[Sample]]
    policy_version: int
    worker_index: int
    fingerprint: str  # of the weights served while sampling
    peak_rss: int = 0  # the worker's peak resident memory so far, bytes


@dataclass
class ScoreRequest:
    """A shard of completions to score; `columns` are the data row columns, one list per column.
    `prompts` are the rows' prompts as the data holds them (a string, or a list of chat messages)."""

    prompts: list[Any]
    completions: list[str]
    columns: dict[str, list[Any]]
    completion_ids: list[list[int]] | None = None  # the sampled token ids of each completion
    step: int = 0  # the RL step (a reward's `trainer_state.global_step`)


@dataclass
class ScoreResult:
    rewards: list[float]
    breakdowns: list[dict[str, float]]
    failures: int = 0  # completions whose reward failed (raised, timed out, NaN/inf or out of range)
    failure_log: list[str] = field(default_factory=list)
    # per completion: its reward failed (scored 0, not trained on)
    failed: list[bool] = field(default_factory=list)


@dataclass
class TrainBatch:
    """Everything the learner needs for one update. Sequences are flattened groups (B = G·n)."""

    prompt_ids: list[list[int]]  # (B, P_i)
    completion_ids: list[list[int]]  # (B, T_i)
    rollout_logprobs: list[list[float]]  # (B, T_i) vLLM's logprobs, for the learner/rollout gap metric
    advantages: list[float]  # (B,)
    token_weights: list[list[float]] | None = None  # (B, T_i) DART weights
    # (B,) learner version - the version that sampled each sequence (0: on-policy); None: all 0
    lags: list[int] | None = None
    # (B, T_i) 1 on the policy's own tokens, 0 on tokens it did not sample (a multi-turn episode's tool
    # observations): loss, entropy, clip fractions and the logprob gap count only the 1s. None: all 1.
    loss_mask: list[list[int]] | None = None


@dataclass
class LoraUpdate:
    """The LoRA weights of one policy version, as pushed to every rollout worker."""

    version: int
    weights: dict[str, Any]  # PEFT state-dict key → CPU float32 tensor
    fingerprint: str
    scale: float  # lora_alpha / r, needed to merge
    # A fixed token sequence and the learner's logprobs of its tokens from probe_start on, under these
    # weights: a worker that scores the probe differently does not serve these weights.
    probe_ids: list[int] | None = None
    probe_start: int = 0
    probe_logprobs: list[float] | None = None

    # On the wire the weights travel as numpy arrays: Ray hands numpy buffers to its object store without
    # copying through pickle (torch tensors are pickled byte by byte), about 5 ms less per push here.
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["weights"] = {k: _as_numpy(v) for k, v in self.weights.items()}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        import numpy as np
        import torch

        # A buffer from the object store is read-only; a copy (~0.1 ms) gives tensors one may write.
        state["weights"] = {k: torch.from_numpy(np.array(v)) if isinstance(v, np.ndarray) else v
                            for k, v in state["weights"].items()}
        self.__dict__.update(state)


@dataclass
class Served:
    """A rollout worker's receipt for a `LoraUpdate`: what it serves from now on."""

    worker_index: int
    version: int
    fingerprint: str  # of the weights it received, equal to the learner's or the push raised
    nbytes: int  # size of the LoRA weights it received
    probe_gap: float | None = None  # largest |vLLM - learner| logprob of the probe, as served


def _as_numpy(value: Any) -> Any:
    """A CPU tensor as a numpy array; numpy has no bfloat16, so such a tensor (or anything else) stays."""
    import torch

    if isinstance(value, torch.Tensor) and value.dtype != torch.bfloat16:
        return value.detach().cpu().numpy()
    return value

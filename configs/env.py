"""`env`: what a sample is. Single-turn completions, or multi-turn agent episodes in the task's
environment (with their own turn and context limits, which completions do not have).

    env: completions                                   # the default
    env: {kind: episodes, max_turns: 6, max_context: 768}
    env: {kind: harness, harness: my_agents.support:play}   # an agent written against the OpenAI client

The older spelling `env: {enabled: true, ...}` still loads: `enabled: true` is `kind: episodes` with the
keys beside it, `enabled: false` is `completions` (any episode keys beside it did nothing, and are dropped).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from configs.base import Section

KINDS = ("completions", "episodes", "harness")
EPISODE_KEYS = ("max_turns", "max_context")


class Completions(Section):
    """One completion per sample, scored by the reward functions."""

    kind: Literal["completions"] = "completions"
    """The section's kind (a bare name stands for the kind with its defaults)."""

    @property
    def enabled(self) -> bool:
        """Whether the run trains on agent episodes."""
        return False


class Episodes(Section):
    """Agent episodes (the task must have an environment, `tasks.env`): each sample is a whole episode
    (policy turns, tool observations), its reward the environment's trajectory score."""

    kind: Literal["episodes"] = "episodes"
    """The section's kind (a bare name stands for the kind with its defaults)."""
    max_turns: int = Field(6, ge=1, le=32)
    """Policy turns per episode; an episode still going after them is counted as truncated."""
    max_context: int = Field(768, ge=64)
    """Tokens an episode may fill (first messages, turns, observations); the episode is truncated when
    its next turn would not fit. Must leave rollout.max_tokens free below rollout.max_model_len."""

    @property
    def enabled(self) -> bool:
        return True


class Harness(Section):
    """Agent episodes played by a harness: the user's own agent, an `async def f(client, row) -> float |
    dict` written against the OpenAI client, talking to the rollout worker's OpenAI endpoint (the gateway);
    each session's recorded engine calls are the sample, the harness's return its reward."""

    kind: Literal["harness"] = "harness"
    """The section's kind."""
    harness: str
    """`package.module:function`: the async function that plays one row's episode with the client it is
    given (bound to the gateway and its own session) and returns the reward, or a dict holding `reward`,
    optionally `success` (the judge; without it, success is reward >= 1) and any metrics."""
    max_turns: int = Field(6, ge=1, le=32)
    """Model calls a session may make; a call beyond them is answered with an error (HTTP 400) and the
    episode counts as truncated."""
    concurrency: int = Field(16, ge=1, le=1024)
    """Harnesses running at once on one worker (each waits on the engine between its calls)."""
    timeout_s: float = Field(120.0, gt=0)
    """One episode's time limit; a harness still running after it is cut, a counted failure."""
    chat_template: str = "tools"
    """`tools`: a ChatML template that renders tools, tool calls and tool results in the hermes format
    (models/tool_template.py); `model`: the tokenizer's own; anything else: a template file's path,
    relative to the directory `train.py` runs in (the driver reads it and hands the workers its text)."""
    tool_parser: str | None = "hermes"
    """vLLM's tool-call parser reading the model's calls back (`hermes` reads the `tools` template's
    format); None: no tool calls are parsed (content only)."""

    @field_validator("chat_template")
    @classmethod
    def _template_exists(cls, value: str) -> str:
        from pathlib import Path

        if value not in ("tools", "model") and not Path(value).is_file():
            raise ValueError(f"no template file {value!r} (tools, model, or a file's path relative to "
                             f"{Path.cwd()})")
        return value

    @property
    def enabled(self) -> bool:
        return True


EnvConfig = Annotated[Completions | Episodes | Harness, Field(discriminator="kind")]


def env_section(value: Any) -> Any:
    """The section's data in the current spelling: a bare kind is `{kind: ...}`; `enabled` (the older
    spelling) becomes the kind; a section without either is completions (as `enabled` was false)."""
    if isinstance(value, str):
        return {"kind": value}
    if not isinstance(value, dict):
        return value
    value = dict(value)
    if "enabled" in value:
        enabled = value.pop("enabled")
        if enabled is True:
            value["kind"] = "episodes"
        elif enabled is False:
            value = {k: v for k, v in value.items() if k not in EPISODE_KEYS}
            value["kind"] = "completions"
        else:
            raise ValueError(f"enabled: true or false (got {enabled!r}); or write kind: {' | '.join(KINDS)}")
    value.setdefault("kind", "completions")
    return value

"""Generic reward machinery (TRL signature `fn(prompts, completions, **columns) -> list[float]`).

- registry: name / import-path lookup, @register_reward, weighted combine.
- text: the text of a completion in TRL's shapes (string, message, list of messages).
- examples: user rewards to copy.

A task's own rewards live with the task (the fund assistant's: `tasks/fund_assistant/rewards.py`,
registered here as the built-in names `rule` and `gt`).
"""

from .registry import RewardNotFoundError, combine, get_reward, known_rewards, register_reward
from .text import completion_text

__all__ = ["RewardNotFoundError", "combine", "completion_text", "get_reward", "known_rewards",
           "register_reward"]

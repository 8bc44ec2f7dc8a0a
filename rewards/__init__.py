"""Reward functions (TRL signature `fn(prompts, completions, **columns) -> list[float]`).

- parsing: tolerant ReAct JSON parsing of completions.
- fund: the fund assistant's rule reward and ground-truth MultistepGTReward (SPEC §3).
- registry: name / import-path lookup, @register_reward, weighted combine.
- examples: user rewards to copy.
"""

from .fund import (
    GT_COMPONENTS,
    RULE_COMPONENTS,
    MultistepGTReward,
    extract_request,
    gt_reward,
    has_logic_keyword,
    has_market_keyword,
    rule_reward,
    rule_reward_breakdown,
)
from .parsing import (
    completion_text,
    get_action,
    get_params,
    get_plan,
    get_thought,
    get_tool,
    has_plan,
    has_thought,
    parse_react,
)
from .registry import RewardNotFoundError, combine, get_reward, known_rewards, register_reward

__all__ = [
    "GT_COMPONENTS",
    "RULE_COMPONENTS",
    "MultistepGTReward",
    "RewardNotFoundError",
    "combine",
    "completion_text",
    "extract_request",
    "get_action",
    "get_params",
    "get_plan",
    "get_reward",
    "get_thought",
    "get_tool",
    "gt_reward",
    "has_logic_keyword",
    "has_market_keyword",
    "has_plan",
    "has_thought",
    "known_rewards",
    "parse_react",
    "register_reward",
    "rule_reward",
    "rule_reward_breakdown",
]

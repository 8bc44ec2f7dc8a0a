"""The fund assistant's two reward functions: the rule reward and MultistepGTReward.

The scoring rules are written out in docs/fund_assistant.md#rule-reward and
docs/fund_assistant.md#ground-truth-reward.

This module owns how a parsed ReAct completion is scored against the request (rule reward) or the
label in the `solution` column (GT reward). Both use the TRL signature
`fn(prompts, completions, **columns) -> list[float]`, return values in [0, 1], score an unparseable
completion 0 and never raise. Each has a breakdown (per-component dicts) for metrics; the plain call
returns the breakdown's `total`, which is always the capped sum of its components.

Policies decided here (the field report leaves them open):
- `thought` counts when it is a non-blank string; `plan` when it is a list with at least one
  non-blank string step (an empty list is no plan -- see parsing.has_plan).
- A prediction's params score only when `action.params` is a JSON object; `{}` is valid for tools
  with no required parameter. A *label* without params means `{}` (the field report's labels omit them).
- GT params score does not require the right tool (valid for the predicted tool and agreeing
  with the label's params).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from tasks.fund_assistant.parsing import (
    completion_text,
    get_action,
    get_params,
    get_thought,
    get_tool,
    has_plan,
    has_thought,
    parse_react,
)
from tasks.fund_assistant.tools import TOOL_NAMES, params_agree, params_valid

logger = logging.getLogger(__name__)

MARKET_TOOL = "check_market_status"
PREVIOUS_STEPS = "Previous steps:"

RULE_WEIGHTS: dict[str, float] = {
    "thought": 0.2,
    "action": 0.3,  # action is a dict with a non-blank string tool
    "valid_tool": 0.2,
    "params": 0.1,
    "plan": 0.2,
    "market_penalty": -0.3,
}
RULE_COMPONENTS: tuple[str, ...] = tuple(RULE_WEIGHTS)
GT_COMPONENTS: tuple[str, ...] = ("tool", "params", "reasoning")

_MARKET_WORDS_CN = ("开市", "闭市", "休市", "开盘", "收盘", "盘中", "盘前", "盘后", "交易时间", "交易时段",
                    "市场", "股市")
# English words on ASCII-letter boundaries (plain \b fails in mixed text: "美股market" has no \b),
# plus clock times ("2:30", "14：30", "3点", "9am") -- the intraday example "现在是 2:30，还能下单吗？"
# has no market word but is a market-hours question.
_MARKET_RE = re.compile(
    r"(?<![A-Za-z])(?:markets?|open(?:s|ed|ing)?|clos(?:e|es|ed|ing)|trading[\s-]+(?:hours?|sessions?)"
    r"|pre-?market|after-?hours)(?![A-Za-z])"
    r"|(?<!\d)\d{1,2}\s*[:：]\s*\d{2}(?!\d)"
    r"|(?<!\d)\d{1,2}\s*点"
    r"|(?<!\d)\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?![A-Za-z])",
    re.IGNORECASE,
)
# English logic words on word boundaries ("then" must not fire inside "authentication").
_LOGIC_RE = re.compile(
    r"(?<![A-Za-z])(?:first|then|before|because|therefore|need\s+to|in\s+order\s+to|since)(?![A-Za-z])"
    r"|先|然后|因为|所以",
    re.IGNORECASE,
)


def has_market_keyword(text: Any) -> bool:
    """Whether a request mentions market hours / open / close (or a clock time)."""
    if not isinstance(text, str):
        return False
    return any(w in text for w in _MARKET_WORDS_CN) or _MARKET_RE.search(text) is not None


def has_logic_keyword(text: Any) -> bool:
    """Whether a thought spells out an ordering or a reason (first/then/because/先/因为 ...)."""
    return isinstance(text, str) and _LOGIC_RE.search(text) is not None


def prompt_text(prompt: Any) -> str:
    """A prompt's user text: the string itself, or the last user message of a chat prompt."""
    if isinstance(prompt, (list, tuple)):
        users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
        return (completion_text(users[-1:]) or "") if users else ""
    return completion_text(prompt) or ""


def extract_request(prompt: Any, request: Any = None) -> str:
    """The raw user request: the `request` column when it is a string, else the prompt's user text
    cut before "Previous steps:" (observations of earlier steps must not count as the request)."""
    if isinstance(request, str):
        return request
    return prompt_text(prompt).split(PREVIOUS_STEPS, 1)[0].rstrip()


def _cap(x: float) -> float:
    # Rounding first makes 0.2+0.3+0.2+0.1+0.2 exactly 1.0 rather than 0.9999999999999999.
    return min(1.0, max(0.0, round(x, 6)))


def _as_list(x: Any) -> list:
    if x is None or isinstance(x, (str, bytes, dict)):
        return [] if x is None else [x]
    try:
        return list(x)
    except Exception:
        return []


def _cell(column: Any, i: int) -> Any:
    """Row i of a column (list, tuple, array, Series); None when absent or short."""
    if column is None or isinstance(column, (str, bytes, dict)):
        return None
    try:
        return column[i] if i < len(column) else None
    except Exception:
        return None


# ---------------------------------------------------------------- rule reward


def _rule_one(completion: Any, request: str) -> dict[str, float]:
    b = dict.fromkeys(RULE_COMPONENTS, 0.0)
    obj = parse_react(completion)
    if obj is not None:
        tool = get_tool(obj)
        valid = tool in TOOL_NAMES
        b["thought"] = RULE_WEIGHTS["thought"] if has_thought(obj) else 0.0
        b["action"] = RULE_WEIGHTS["action"] if tool is not None else 0.0
        b["valid_tool"] = RULE_WEIGHTS["valid_tool"] if valid else 0.0
        b["params"] = RULE_WEIGHTS["params"] if valid and params_valid(tool, get_params(obj)) else 0.0
        b["plan"] = RULE_WEIGHTS["plan"] if has_plan(obj) else 0.0
        misuse = tool == MARKET_TOOL and not has_market_keyword(request)
        b["market_penalty"] = RULE_WEIGHTS["market_penalty"] if misuse else 0.0
    b["total"] = _cap(sum(b[k] for k in RULE_COMPONENTS))
    b["parsed"] = float(obj is not None)
    return b


def rule_reward_breakdown(prompts: Any, completions: Any, **columns: Any) -> list[dict[str, float]]:
    """Per-sample components (RULE_COMPONENTS), `total` (capped sum) and `parsed` (0/1)."""
    out = []
    requests = columns.get("request")
    for i, completion in enumerate(_as_list(completions)):
        try:
            out.append(_rule_one(completion, extract_request(_cell(prompts, i), _cell(requests, i))))
        except Exception:  # defensive: a reward must never take a training step down
            logger.exception("rule_reward failed on sample %d; scoring it 0", i)
            out.append({**dict.fromkeys(RULE_COMPONENTS, 0.0), "total": 0.0, "parsed": 0.0})
    return out


def rule_reward(prompts: Any, completions: Any, **columns: Any) -> list[float]:
    """The rule reward: thought +0.2, action with a tool +0.3, tool one of the six +0.2, params
    valid for it +0.1, plan +0.2, check_market_status without a market keyword in the request -0.3;
    capped to [0, 1]. Uses the `request` column when present, else the prompt."""
    return [b["total"] for b in rule_reward_breakdown(prompts, completions, **columns)]


rule_reward.reward_range = (0.0, 1.0)  # type: ignore[attr-defined]  # a value outside is a failure


# ---------------------------------------------------------------- ground-truth reward


def _parse_label(solution: Any) -> tuple[str | None, dict | None]:
    """(tool, params) of a label given as a dict or JSON string; tool None when unusable."""
    label = solution if isinstance(solution, dict) else parse_react(solution)
    tool = get_tool(label)
    if tool not in TOOL_NAMES:
        return None, None
    action = get_action(label) or {}
    # A label without params (the field report's format: {"tool": "check_balance"}) means the empty call.
    params = {} if action.get("params") is None else get_params(label)
    return tool, params


class MultistepGTReward:
    """The ground-truth reward against the `solution` column.

    tool == label tool 0.5, else one of the six 0.1, else 0; params 0.2 when valid for the predicted
    tool and agreeing with the label's; reasoning = thought 0.15 + plan 0.10 + logic word 0.05, and 0
    in a multistep sample without a plan. Multistep: `category == "multistep"`, or, when the row has
    no category, a prompt containing "Previous steps:". An unusable label (unparseable, or a tool
    outside the six) is counted in `bad_labels`, warned about once per call, and scores as if the
    label had no tool."""

    reward_range = (0.0, 1.0)  # the pool counts a value outside as a failure
    required_columns = ("solution",)  # the ReAct label (read from **columns): checked before a run starts

    def __init__(self, name: str = "multistep_gt") -> None:
        self.__name__ = name  # TRL names its reward metrics after reward_func.__name__
        self.bad_labels = 0

    @staticmethod
    def _is_multistep(prompt: Any, category: Any) -> bool:
        if isinstance(category, str):
            return category.strip().lower() == "multistep"
        return PREVIOUS_STEPS in prompt_text(prompt)

    def _one(
        self, prompt: Any, completion: Any, label: tuple[str | None, dict | None], category: Any
    ) -> dict[str, float]:
        label_tool, label_params = label
        obj = parse_react(completion)
        tool = get_tool(obj)
        params = get_params(obj)
        correct = label_tool is not None and tool == label_tool
        b = {
            "tool": 0.5 if correct else 0.1 if tool in TOOL_NAMES else 0.0,
            "params": 0.0,
            "reasoning": 0.0,
        }
        if tool in TOOL_NAMES and label_params is not None:
            if params_valid(tool, params) and params_agree(params, label_params):
                b["params"] = 0.2
        thought, plan = has_thought(obj), has_plan(obj)
        if plan or not self._is_multistep(prompt, category):
            logic = has_logic_keyword(get_thought(obj))
            b["reasoning"] = round(0.15 * thought + 0.10 * plan + 0.05 * logic, 6)
        b["total"] = _cap(sum(b[k] for k in GT_COMPONENTS))
        b["tool_correct"] = float(correct)
        b["parsed"] = float(obj is not None)
        return b

    def breakdown(self, prompts: Any, completions: Any, **columns: Any) -> list[dict[str, float]]:
        """Per-sample `tool`, `params`, `reasoning`, `total` (capped sum), `tool_correct` and
        `parsed` (0/1 each)."""
        out, bad, first_bad = [], 0, None
        solutions, categories = columns.get("solution"), columns.get("category")
        for i, completion in enumerate(_as_list(completions)):
            try:
                label = _parse_label(_cell(solutions, i))
                if label[0] is None:
                    bad += 1
                    first_bad = first_bad if bad > 1 else _cell(solutions, i)
                out.append(self._one(_cell(prompts, i), completion, label, _cell(categories, i)))
            except Exception:  # defensive: a reward must never take a training step down
                logger.exception("MultistepGTReward failed on sample %d; scoring it 0", i)
                zero = dict.fromkeys((*GT_COMPONENTS, "total", "tool_correct", "parsed"), 0.0)
                out.append(zero)
        if bad:
            self.bad_labels += bad
            logger.warning(
                "%s: %d of %d samples have an unusable `solution` label (first: %.200s); they score "
                "without a label tool", self.__name__, bad, len(out), repr(first_bad)[:200],
            )
        return out

    def __call__(self, prompts: Any, completions: Any, **columns: Any) -> list[float]:
        return [b["total"] for b in self.breakdown(prompts, completions, **columns)]


gt_reward = MultistepGTReward()

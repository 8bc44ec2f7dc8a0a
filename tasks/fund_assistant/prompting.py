"""How a data row becomes a chat prompt for the policy.

Owns the system prompts. The row's `prompt` column is the user message (request plus any
`Previous steps:`); rewards see that same text, never the system prompt, so a tool description
that mentions "market" cannot trigger the market-keyword rule.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.examples import example_turns
from tasks.fund_assistant.tools import tool_catalogue

SYSTEM_PROMPTS: dict[str, str] = {
    # One line: the tiny model's context is short and it learns the tools from the warm-up.
    "short": "You are a fund assistant. Reply with one JSON object: thought, action, plan.",
    "full": (
        "You are a fund assistant SubAgent. Tools:\n"
        + tool_catalogue()
        + "\nReply with ONE JSON object and nothing else: "
        '{"thought": "<reasoning before acting>", "action": {"tool": "<tool name>", "params": {...}}, '
        '"plan": ["<step>", ...]}. `action` is the single tool call for THIS turn; `plan` lists the whole '
        "route (later steps run in later turns, after their observations appear under Previous steps)."
    ),
}


def system_prompt(name_or_text: str) -> str:
    """A named system prompt (`short`, `full`) or the literal text given."""
    return SYSTEM_PROMPTS.get(name_or_text, name_or_text)


def chat_messages(user_prompt: str, system: str,
                  examples: Sequence[tuple[str, str]] = ()) -> list[dict[str, str]]:
    """The messages the chat template turns into the model's prompt: the system message, each example
    as a finished user/assistant exchange, then the request."""
    return ([{"role": "system", "content": system_prompt(system)}, *example_turns(examples),
             {"role": "user", "content": user_prompt}])


def render_prompt(tokenizer, user_prompt: str, system: str, examples: Sequence[tuple[str, str]] = ()) -> str:
    """The prompt string (with the assistant turn opened) via the tokenizer's chat template."""
    return tokenizer.apply_chat_template(
        chat_messages(user_prompt, system, examples), tokenize=False, add_generation_prompt=True
    )

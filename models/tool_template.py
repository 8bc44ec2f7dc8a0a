"""A ChatML chat template that also renders tools, tool calls and tool results, in the format vLLM's
`hermes` tool parser reads back (a `<tool_call>` block holding `{"name": ..., "arguments": {...}}`).

The tiny model's own template (`models.tiny.CHAT_TEMPLATE`) renders messages only: the tools a request
offers and an assistant's `tool_calls` vanish from the prompt. An agent served through the OpenAI
gateway needs them: the functions are listed in the system turn (name, description and parameters
only, so a tool renders the same whatever else a client or server adds to its record), each call the
model made is rendered
as it wrote it, and tool results come back as a user turn holding `<tool_response>` blocks. Earlier turns
render the same whatever follows, so a conversation's prompt extends the previous call's prompt and
reply token for token (what `actors.worker.sessions` joins into one sample).
"""

from __future__ import annotations

TOOL_PARSER = "hermes"

TOOLS_CHAT_TEMPLATE = (
    "{%- set rest = messages %}"
    "{%- if messages and messages[0].role == 'system' %}{%- set rest = messages[1:] %}{%- endif %}"
    "{%- if tools %}<|im_start|>system{{ '\\n' }}"
    "{%- if messages and messages[0].role == 'system' %}{{ messages[0].content }}{{ '\\n\\n' }}{%- endif %}"
    "# Tools{{ '\\n\\n' }}Call a function by answering with its name and arguments as JSON inside"
    " <tool_call></tool_call> tags. The functions:{{ '\\n' }}<tools>"
    "{%- for tool in tools %}{{ '\\n' }}{%- set f = tool.function if tool.function is defined else tool %}"
    "{%- if f.description %}{{ {'name': f.name, 'description': f.description, 'parameters': f.parameters}"
    " | tojson }}{%- else %}{{ {'name': f.name, 'parameters': f.parameters} | tojson }}{%- endif %}"
    "{%- endfor %}"
    "{{ '\\n' }}</tools><|im_end|>{{ '\\n' }}"
    "{%- elif messages and messages[0].role == 'system' %}"
    "<|im_start|>system\n{{ messages[0].content }}<|im_end|>{{ '\\n' }}"
    "{%- endif %}"
    "{%- for m in rest %}"
    "{%- if m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content or '' }}"
    "{%- for call in m.tool_calls or [] %}"
    "{%- if (m.content and not m.content.endswith('\\n')) or not loop.first %}{{ '\\n' }}{%- endif %}"
    "<tool_call>\n{\"name\": \"{{ call.function.name }}\", "
    "\"arguments\": {{ call.function.arguments | tojson }}}"
    "\n</tool_call>"
    "{%- endfor %}<|im_end|>{{ '\\n' }}"
    "{%- elif m.role == 'tool' %}"
    "{%- if loop.first or rest[loop.index0 - 1].role != 'tool' %}<|im_start|>user{%- endif %}"
    "{{ '\\n' }}<tool_response>\n{{ m.content }}\n</tool_response>"
    "{%- if loop.last or rest[loop.index0 + 1].role != 'tool' %}<|im_end|>{{ '\\n' }}{%- endif %}"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{{ '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant{{ '\\n' }}{%- endif %}"
)


def template_text(name: str) -> str | None:
    """`env.chat_template` as template text: `tools` this module's, `model` None (the tokenizer's own),
    template text itself (what the driver hands a worker for a file, which the worker's node may not
    have), else the file at that path."""
    if name == "tools":
        return TOOLS_CHAT_TEMPLATE
    if name == "model":
        return None
    if "{%" in name or "{{" in name:
        return name
    from pathlib import Path

    return Path(name).read_text()


def render(template: str, messages: list[dict], tools: list[dict] | None, generation: bool) -> str:
    """A conversation as `template` renders it, by transformers' renderer (the one vLLM's goes through),
    each tool call's arguments read from JSON text into an object first, as vLLM does before rendering."""
    from transformers.utils.chat_template_utils import render_jinja_template

    texts, _ = render_jinja_template(conversations=[[_as_rendered(m) for m in messages]], tools=tools,
                                     chat_template=template, add_generation_prompt=generation)
    return texts[0]


def _as_rendered(message: dict) -> dict:
    import json

    calls = message.get("tool_calls")
    if not calls:
        return message
    read = []
    for c in calls:
        args = c["function"].get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        read.append({**c, "function": {**c["function"], "arguments": args}})
    return {**message, "tool_calls": read}

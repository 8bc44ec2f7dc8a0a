"""The start-up probe of a chat template (actors/worker/gateway/probe.py) on the tiny tokenizer: the
gateway's template keeps earlier turns as a prefix; one that rewrites them is caught at its turn."""

from __future__ import annotations

from actors.worker.gateway.probe import probe
from models.tiny import CHAT_TEMPLATE
from models.tool_template import TOOLS_CHAT_TEMPLATE

# Like templates that drop past reasoning: an assistant turn's content shows only while it is the last.
REWRITES = ("{% for m in messages %}<|im_start|>{{ m.role }}\n"
            "{% if m.role != 'assistant' or loop.last %}{{ m.content }}{% endif %}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _check(tok, template):
    def render(messages, tools, generation):
        return tok.apply_chat_template(messages, tools=tools, chat_template=template, tokenize=False,
                                       add_generation_prompt=generation)

    return probe(render, lambda text: tok(text, add_special_tokens=False)["input_ids"])


def test_the_gateways_template_keeps_earlier_turns(tiny_tokenizer):
    assert _check(tiny_tokenizer, TOOLS_CHAT_TEMPLATE).keeps_prefix
    assert _check(tiny_tokenizer, CHAT_TEMPLATE).keeps_prefix  # it drops tool calls, the same each time


def test_the_real_model_agent_template_keeps_earlier_turns_and_shows_its_example(tiny_tokenizer):
    """configs/smollm2-agent-tools.jinja (the tools template with a worked episode before the request):
    a conversation still extends the previous call's prompt token for token, and the example sits
    between the tools and the request only when tools are offered."""
    from pathlib import Path

    from models.tool_template import render
    from tasks.fund_assistant.harness import tool_specs

    text = (Path(__file__).parents[2] / "configs" / "smollm2-agent-tools.jinja").read_text()
    assert _check(tiny_tokenizer, text).keeps_prefix
    said = [{"role": "system", "content": "S"}, {"role": "user", "content": "Buy 5 MSFT"}]
    with_tools = render(text, said, tool_specs(), True)
    where = [with_tools.index(s) for s in ("</tools>", "buy 10 shares of AAPL", "Buy 5")]
    assert where == sorted(where)
    assert "<|im_end|>\n<|im_start|>user\nBuy 5 MSFT" in with_tools
    assert "AAPL" not in render(text, said, None, True)


def test_a_template_that_rewrites_past_turns_is_caught_at_the_turn(tiny_tokenizer):
    found = _check(tiny_tokenizer, REWRITES)
    assert not found.keeps_prefix and found.broken_at == 2 and "rewrites" in found.detail


def test_the_tools_template_renders_a_tool_without_a_description_as_vllm_hands_it_over():
    """A client's tool without a description: the warm-up renders the client's dict (no key), vLLM its
    record (`description: None`); both must give the same text."""
    from models.tool_template import TOOLS_CHAT_TEMPLATE, render

    bare = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    dumped = {"type": "function", "defer_loading": None,
              "function": {**bare["function"], "description": None, "strict": None}}
    said = [{"role": "user", "content": "hi"}]
    rendered = render(TOOLS_CHAT_TEMPLATE, said, [bare], True)
    assert rendered == render(TOOLS_CHAT_TEMPLATE, said, [dumped], True)
    assert '{"name": "f", "parameters": {"type": "object", "properties": {}}}' in render(
        TOOLS_CHAT_TEMPLATE, said, [bare], True)

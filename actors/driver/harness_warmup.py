"""A harness run's warm-up examples: the task's scripted replies played through the run's own harness.

The harness builds its conversation (system text, tools, tool results) and the gateway renders it with the
run's chat template; the warm-up must teach that same text. So the harness is run with a client that
answers from the task's script (`tasks.scripted_client`, `Task.harness_script`), each request it makes is
rendered as the gateway renders it (`models.tool_template.render`), and each scripted reply becomes the
ids the model should sample (its rendered text up to the end-of-turn token, which closes it). The calls
of one conversation are then joined exactly as a played session's are (`actors.worker.sessions`): one
example whose tool results are masked out, cut where a prompt does not extend the one before.
"""

from __future__ import annotations

import asyncio
from typing import Any

from actors.worker.gateway.harness import load_harness
from actors.worker.sessions import Call, session_samples
from configs.root import Config
from models.tool_template import render, template_text
from tasks.base import Task
from tasks.scripted_client import Asked, ScriptedClient


def conversations(cfg: Config, task: Task, rows: list[dict]) -> list[list[Asked]]:
    """Each row's scripted conversation as the harness asks it: its requests and the scripted replies."""
    harness, out = load_harness(cfg.env.harness), []
    for row in rows:
        client = ScriptedClient(iter(task.harness_script(row)))
        asyncio.run(harness(client, dict(row)))
        out.append(client.asked)
    return out


def run_template(cfg: Config, tokenizer: Any = None) -> str:
    """The chat template the gateway renders with (`env.chat_template`; `model`: the tokenizer's own)."""
    text = template_text(cfg.env.chat_template)
    if text is None:
        if tokenizer is None:
            raise ValueError("env.chat_template model: the tokenizer's template is read once it exists")
        text = tokenizer.chat_template
    return text


def corpus(cfg: Config, task: Task, rows: list[dict]) -> list[str]:
    """The rendered text of the rows' scripted conversations (what a tiny model's tokenizer learns from);
    none for a task without scripted replies or a harness that cannot play them (it will fail in the run,
    where its failures are counted, not here)."""
    template = template_text(cfg.env.chat_template)
    if template is None:
        return []
    try:
        played = conversations(cfg, task, rows)
    except Exception:  # noqa: BLE001 - see the docstring
        return []
    return [render(template, [*asked[-1].messages, asked[-1].reply], asked[-1].tools, False)
            for asked in played if asked]


def reply_text(template: str, asked: Asked, eos: str) -> tuple[str, str]:
    """(the prompt's text, the scripted reply's text up to its end-of-turn token, which is left out)."""
    prompt = render(template, asked.messages, asked.tools, True)
    full = render(template, [*asked.messages, asked.reply], asked.tools, False)
    if not full.startswith(prompt) or eos not in full[len(prompt):]:
        raise ValueError("the chat template does not render an assistant reply after the generation prompt, "
                         "closed by the end-of-turn token")
    reply = full[len(prompt):]
    return prompt, reply[: reply.index(eos)]


def fallback_probe(cfg: Config, tokenizer: Any, row: dict) -> tuple[list[int], list[int]]:
    """A probe sequence for a run without scripted conversations (the push check needs any fixed one): the
    row as a user turn, rendered by the run's template, and a short fixed reply."""
    import json

    asked = [{"role": "user", "content": json.dumps(row, ensure_ascii=False)[:400]}]
    text = render(run_template(cfg, tokenizer), asked, None, True)
    return (tokenizer.encode(text, add_special_tokens=False),
            tokenizer.encode("ok", add_special_tokens=False) + [tokenizer.eos_token_id])


def harness_examples(cfg: Config, task: Task, tokenizer: Any, rows: list[dict]) -> list[tuple]:
    """(prompt ids, completion ids, loss mask) of each row's scripted conversation (several where a
    session would be cut)."""
    template, eos = run_template(cfg, tokenizer), tokenizer.eos_token
    out = []
    for asked in conversations(cfg, task, rows):
        calls = []
        for a in asked:
            prompt, reply = reply_text(template, a, eos)
            ids = tokenizer.encode(reply, add_special_tokens=False) + [tokenizer.eos_token_id]
            calls.append(Call(tokenizer.encode(prompt, add_special_tokens=False), ids, [0.0] * len(ids),
                              [0] * len(ids)))
        out += [(s.prompt_ids, s.token_ids, s.loss_mask) for s in session_samples(calls)]
    return out

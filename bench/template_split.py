"""What a chat template that rewrites history costs a harness run: `frac_split` and the learner's tokens.

    python -m bench.template_split --model runs/<run>/warmup_model [--adapter runs/<run>/adapter]

Plays the OpenAI-harness preset's held-out rows (temperature 1, 4 sessions each) through a worker's
gateway twice: with the `tools` template, which renders every earlier turn as it was written, and with a
template that rewrites earlier tool calls (the same, but a past call's JSON without the line breaks
around it: what a template that normalises tool calls does). Prints, for each, the share of sessions
cut into several samples, the calls per session and the tokens the learner would process (prompt and
completion of every piece) against the tokens of the same sessions kept whole.
"""

from __future__ import annotations

import argparse

from models.tool_template import TOOLS_CHAT_TEMPLATE

PRESET = "configs/tiny-cpu-agent-openai.yaml"


def rewriting_template() -> str:
    """The `tools` template with every earlier call written on one line (no line breaks inside the
    `<tool_call>` tags): a prompt no longer holds the call as the model sampled it."""
    call = '<tool_call>\n{"name"'
    if TOOLS_CHAT_TEMPLATE.count(call) != 1:
        raise RuntimeError("the tools template changed: update bench/template_split.py")
    return TOOLS_CHAT_TEMPLATE.replace(call, '<tool_call>{"name"').replace("}\n</tool_call>", "}</tool_call>")


def measure(worker, work, template: str, seed: int = 0) -> dict:
    """Sessions of the held-out rows through `worker`'s gateway served with `template`."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".jinja", delete=False) as f:
        f.write(template)
    worker.gateway_stop()  # the next play starts the gateway with this template
    rows = work.rows()[1][:32]
    sampling = {**work.sampling(), "chat_template": f.name}
    samples = [s for g in worker.play_harness(rows, **sampling, n=4, temperature=1.0, seed=seed).groups
               for s in g]
    whole = sum(len(s.prompt_ids) + sum(len(p.token_ids) for p in s.pieces()) for s in samples)
    learned = sum(len(p.prompt_ids) + len(p.token_ids) for s in samples for p in s.pieces())
    return {"sessions": len(samples), "frac_split": sum(bool(s.parts) for s in samples) / len(samples),
            "calls_per_episode": sum(len(s.episode.turns) for s in samples) / len(samples),
            "learner_tokens": learned, "tokens_if_whole": whole, "ratio": round(learned / whole, 3)}


def main(argv: list[str] | None = None) -> int:
    from actors.driver.workloads import workload_for
    from actors.worker.rollout_worker import RolloutWorker
    from configs.loader import load_config
    from contracts.lora import load_peft_adapter
    from models.resolve import resolve_model
    from tasks.base import load_task

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--adapter", default=None)
    a = p.parse_args(argv)
    cfg = load_config(PRESET)
    work = workload_for(cfg, load_task(cfg.task))
    tokenizer = resolve_model(cfg.model, *work.tokenizer_text()).tokenizer_dir
    worker = RolloutWorker(a.model, str(tokenizer), cfg.rollout, cfg.model.lora, request_seeds=True)
    if a.adapter:
        worker.load_adapter(load_peft_adapter(a.adapter, version=1))
    for name, template in (("tools (keeps history)", TOOLS_CHAT_TEMPLATE),
                           ("rewrites past calls", rewriting_template())):
        print(name, measure(worker, work, template), flush=True)
    worker.gateway_stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

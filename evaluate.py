"""The seeds' eval table for a base model or a trained adapter on the held-out set.

    python evaluate.py                                   # the tiny base model (after building it)
    python evaluate.py --adapter runs/<run>/adapter          # on the base it was trained on
    python evaluate.py --config configs/qwen2.5-7b-fund.yaml --adapter path/to/adapter

Average score (ground-truth reward), tool accuracy, and tool accuracy per category, on the held-out
split of the configured data (or --data FILE). Greedy decoding with vLLM, in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="tiny-cpu", help="preset or YAML path (model, data, rollout settings)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--base", help="base model directory (default: the adapter's own base when that folder "
                                  "exists, else the config's model)")
    p.add_argument("--adapter", help="PEFT LoRA adapter directory to evaluate on top of the base")
    p.add_argument("--data", help="held-out JSONL (default: the generated eval split)")
    p.add_argument("--limit", type=int, default=None, help="evaluate at most this many rows")
    p.add_argument("--json", dest="json_out", help="also write the table as JSON here")
    return p.parse_args(argv)


def load_adapter_update(adapter_dir: str, lora_cfg):
    """A PEFT adapter folder as a LoraUpdate that a RolloutWorker can serve."""
    from safetensors.torch import load_file

    from actors.types import LoraUpdate
    from learner import lora as lora_io

    d = Path(adapter_dir)
    conf = json.loads((d / "adapter_config.json").read_text())
    weights = load_file(str(d / "adapter_model.safetensors"))
    scale = conf.get("lora_alpha", lora_cfg.alpha) / conf.get("r", lora_cfg.r)
    return LoraUpdate(1, weights, lora_io.fingerprint(weights), scale)


def _adapter_base(adapter_dir: str | None) -> str | None:
    """The base an adapter was trained on (e.g. runs/<run>/warmup_model), when that folder exists."""
    if not adapter_dir:
        return None
    conf = json.loads((Path(adapter_dir) / "adapter_config.json").read_text())
    base = conf.get("base_model_name_or_path")
    return base if base and Path(base).exists() else None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from configs.loader import ConfigError, load_config

    try:
        cfg = load_config(args.config, args.overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for path, what in ((args.base, "--base"), (args.adapter, "--adapter"), (args.data, "--data")):
        if path and not Path(path).exists():
            print(f"error: {what} {path} does not exist", file=sys.stderr)
            return 2

    from cluster.runtime import apply_role_env

    apply_role_env()
    from actors.batching import eval_table, format_eval_tables
    from actors.rollout_worker import RolloutWorker
    from models.tiny import resolve_model
    from rewards.fund import MultistepGTReward
    from tasks.fund_assistant import generate, load_jsonl
    from tasks.fund_assistant.prompting import render_prompt

    mc = cfg.model
    paths = resolve_model(mc.name, mc.tokenizer, mc.tiny, cfg.data.seed)
    base = args.base or _adapter_base(args.adapter) or str(paths.model_dir)
    rows = load_jsonl(args.data) if args.data else generate(
        seed=cfg.data.seed, n_single=cfg.data.n_single, n_multistep_samples=cfg.data.n_multistep_samples,
        eval_fraction=cfg.data.eval_fraction)[1]
    rows = rows[: args.limit] if args.limit else rows
    rollout = cfg.rollout.model_copy(update={"serve_mode": "merged" if mc.name == "tiny" else cfg.rollout.serve_mode})
    worker = RolloutWorker(base, str(paths.tokenizer_dir), rollout, mc.lora, dtype=mc.dtype)
    if args.adapter:
        worker.load_adapter(load_adapter_update(args.adapter, mc.lora))
    prompts = [render_prompt(worker.tokenizer, r["prompt"], cfg.data.system_prompt) for r in rows]
    out = worker.generate(prompts, n=1, temperature=0.0)
    texts = [g[0].text for g in out.groups]
    cols = {k: [r.get(k) for r in rows] for k in ("solution", "category", "request")}
    breakdowns = MultistepGTReward().breakdown([r["prompt"] for r in rows], texts, **cols)
    table = eval_table(rows, texts, breakdowns)
    label = "adapter" if args.adapter else "base"
    print(format_eval_tables({label: table}))
    print(f"\n{len(rows)} held-out rows; model {base}" + (f" + adapter {args.adapter}" if args.adapter else ""))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

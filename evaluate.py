"""The eval table of a base model or a trained adapter on the held-out set.

    python evaluate.py                                   # the tiny base model (after building it)
    python evaluate.py --adapter runs/<run>/adapter          # on the base it was trained on
    python evaluate.py --config configs/qwen2.5-7b-fund.yaml --adapter path/to/adapter

The task's eval table (for the fund assistant: average ground-truth score, tool accuracy, reasoning
score and tool accuracy per category) on the held-out split of the configured task (or --data FILE),
measured exactly as a training run measures it before and after RL (`actors.generation.evaluate`).
Greedy decoding with vLLM, in-process.
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
    from actors.generation import Generation
    from actors.rollout_worker import RolloutWorker
    from actors.workloads import workload_for
    from contracts.lora import load_peft_adapter
    from models.tiny import resolve_model
    from observe.tables import format_eval_tables
    from tasks.base import load_task

    try:
        task = load_task(cfg.task)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mc, work = cfg.model, workload_for(cfg, task)
    paths = resolve_model(mc, *task.tokenizer_text(episodes=work.episodes))  # the run's own tokenizer
    base = args.base or _adapter_base(args.adapter) or str(paths.model_dir)
    held = work.rows()[1]
    rows = task.load_rows(args.data) if args.data else held
    rows = rows[: args.limit] if args.limit else rows
    rollout = cfg.rollout.model_copy(update={"serve_mode": "merged" if mc.name == "tiny"
                                             else cfg.rollout.serve_mode})
    worker = RolloutWorker(base, str(paths.tokenizer_dir), rollout, mc.lora, dtype=mc.dtype)
    if args.adapter:
        worker.load_adapter(load_peft_adapter(args.adapter, version=1))

    def sample(items: list, **sampling) -> Generation:  # the one worker, as a run's roles call theirs
        return Generation.of([getattr(worker, work.method)(items, **work.sampling(), **sampling)])

    # The held-out eval a training run makes before and after RL: one answer (or episode) per row.
    table = work.eval_table(sample, worker.tokenizer, rows, cfg.rollout.eval_temperature, "eval")
    keys = work.eval_keys
    label = "adapter" if args.adapter else "base"
    print(format_eval_tables({label: table}, keys))
    print(f"\n{len(rows)} held-out {'episodes' if work.episodes else 'rows'}; model {base}"
          + (f" + adapter {args.adapter}" if args.adapter else ""))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

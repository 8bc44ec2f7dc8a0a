"""The eval table of a run, a base model or a trained adapter on the held-out set.

    python evaluate.py runs/<run>                        # the run's own config: before and after RL
    python evaluate.py                                   # the tiny base model (after building it)
    python evaluate.py --adapter runs/<run>/adapter      # on the base it was trained on
    python evaluate.py --config configs/qwen2.5-7b-fund.yaml --adapter path/to/adapter

Given a run directory, the run's own config (`config.json`: task, model, chat template, rewards) is
used, and the table has two columns: `before` (the base the run trained from: its warm-up model when it
had one) and `after` (that base with the run's adapter). The task's eval table (the fund assistant:
average ground-truth score, tool accuracy, reasoning score, per category; a dataset or reasoning-gym
task: the judge's accuracy, the reward, per group or per dataset) on the held-out split of the task (or
--data FILE), measured as a training run measures it before and after RL (the workload's
`eval_table`). Greedy decoding with vLLM, in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", nargs="?",
                   help="a run directory: its config, its base before RL and its adapter after")
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


def _run_config(run: Path, overrides: list[str]):
    """The config a run was made with (its config.json), with `--set` overrides applied."""
    from configs.loader import config_from_data

    file = run / "config.json"
    if not file.is_file():
        from configs.loader import ConfigError

        raise ConfigError(f"{run} is not a run directory (no config.json)")
    return config_from_data(json.loads(file.read_text(encoding="utf-8")), overrides, str(file))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from configs.loader import ConfigError, load_config

    run = Path(args.run) if args.run else None
    if run is not None and (args.adapter or args.config != "tiny-cpu"):
        print("error: give a run directory, or --config/--adapter, not both", file=sys.stderr)
        return 2
    try:
        cfg = _run_config(run, args.overrides) if run else load_config(args.config, args.overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    adapter = str(run / "adapter") if run else args.adapter
    for path, what in ((args.base, "--base"), (adapter, "the adapter" if run else "--adapter"),
                       (args.data, "--data")):
        if path and not Path(path).exists():
            print(f"error: {what} {path} does not exist", file=sys.stderr)
            return 2

    from cluster.runtime import apply_role_env

    apply_role_env()
    from actors.driver.workloads import workload_for
    from actors.generation import Generation
    from actors.worker.rollout_worker import RolloutWorker
    from configs.model import ModelSource
    from contracts.lora import load_peft_adapter
    from models.resolve import resolve_model
    from observe.tables import format_eval_tables
    from tasks.base import load_task

    try:
        task = load_task(cfg.task, cfg.reward.functions)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    mc, work = cfg.model, workload_for(cfg, task)
    paths = resolve_model(mc, *work.tokenizer_text())  # the run's own tokenizer
    warm = run / "warmup_model" if run else None
    base = args.base or (str(warm) if warm and (warm / "config.json").exists() else None) \
        or _adapter_base(adapter) or str(paths.model_dir)
    held = work.rows()[1]
    rows = task.load_rows(args.data) if args.data else held
    rows = rows[: args.limit] if args.limit else rows
    rollout = cfg.rollout.model_copy(update={"serve_mode": "merged" if mc.source is ModelSource.TINY
                                             else cfg.rollout.serve_mode})
    worker = RolloutWorker(base, str(paths.tokenizer_dir), rollout, mc.lora, dtype=mc.dtype,
                           request_seeds=cfg.env.kind == "harness")

    def sample(items: list, **sampling) -> Generation:  # the one worker, as a run's roles call theirs
        return Generation.of([getattr(worker, work.method)(items, **work.sampling(), **sampling)])

    def table() -> dict:  # the held-out eval a training run makes before and after RL
        return work.eval_table(sample, worker.tokenizer, rows, cfg.rollout.eval_temperature, "eval")

    tables = {}
    if run or not adapter:
        tables["before" if run else "base"] = table()
    if adapter:
        worker.load_adapter(load_peft_adapter(adapter, version=1))
        tables["after" if run else "adapter"] = table()
    print(format_eval_tables(tables, work.eval_keys))
    print(f"\n{len(rows)} held-out {'episodes' if work.episodes else 'rows'}; model {base}"
          + (f" + adapter {adapter}" if adapter else ""))
    if args.json_out:
        out = tables if run else next(iter(tables.values()))
        Path(args.json_out).write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The Ray job: load config → connect/start Ray → build the Coordinator → run the step loop.

    python train.py                                  # local Ray, tiny CPU preset
    python train.py --config configs/X.yaml --set train.steps=50
    ray job submit --working-dir . -- python train.py --config configs/X.yaml
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="tiny-cpu", help="YAML preset name or path (default: tiny-cpu)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=20 (repeatable)")
    p.add_argument("--log-level", default="WARNING")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s: %(message)s")
    from configs.loader import ConfigError, load_config

    try:
        cfg = load_config(args.config, args.overrides)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from actors.coordinator import Coordinator
    from cluster.runtime import connect, role_env, run_root
    from observe.tables import format_eval_tables

    name = cfg.train.run_name or time.strftime("%Y%m%d-%H%M%S") + f"-{Path(str(args.config)).stem}"
    run_dir = (run_root(cfg.train.run_dir) / name).resolve()
    where = connect(cfg.cluster)
    print(f"ngrpo-ray: Ray {where['mode']}; run directory {run_dir}", flush=True)
    # The coordinator writes the run directory: keep it on this (the driver's) node.
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    coord = ray.remote(Coordinator).options(
        num_cpus=0, scheduling_strategy=here, runtime_env={"env_vars": role_env(cfg.cluster.env_vars)},
        name=f"{name}/coordinator",
    ).remote(cfg, str(run_dir))
    try:
        info = ray.get(coord.setup.remote())
        print("placement: " + ", ".join(f"{len(ids)} {role} on {len(set(ids))} node(s)"
                                        for role, ids in info["placement"].items()), flush=True)
        if info.get("warmup_steps"):
            print(f"warm-up: {info['warmup_steps']} SFT steps, loss {info['warmup_loss_first']:.3f} → "
                  f"{info['warmup_loss_last']:.3f} ({info['warmup_seconds']:.0f}s)", flush=True)
        if cfg.train.eval_before:
            before = ray.get(coord.evaluate.remote("before"))
            print(f"eval before RL: tool accuracy {before['tool_accuracy']:.3f}, "
                  f"average score {before['average_score']:.3f}", flush=True)
        _loop(ray, coord, cfg)
        if cfg.train.eval_after:
            ray.get(coord.evaluate.remote("after"))
        summary = ray.get(coord.finish.remote())
    finally:
        try:
            ray.get(coord.shutdown.remote(), timeout=60)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        report = _report(run_dir)  # also for a run that died half-way: its plots show where
    print("\n" + format_eval_tables(summary["eval"], summary["eval_keys"]))
    events = summary["switch_events"]
    print(f"\nNGRPO switch events: {events if events else 'none'}")
    print(f"adapter: {summary['adapter']}\nrun directory: {summary['run_dir']} "
          f"(metrics.jsonl, eval.json, eval_table.md, events.jsonl, tensorboard/)")
    if report:
        print(f"report: {report} (plots beside it)")
    return 0


def _report(run_dir: Path) -> Path | None:
    """The end-of-run report (PNG plots + Markdown); a plotting failure must not fail the run."""
    from observe.report import write_report

    if not run_dir.is_dir():
        return None
    try:
        return write_report(run_dir)
    except Exception as e:  # noqa: BLE001 - the run's results are already on disk
        logging.getLogger("train").warning("could not write the report for %s: %s", run_dir, e)
        return None


def _loop(ray, coord, cfg) -> None:
    from tqdm import tqdm

    bar = tqdm(total=cfg.train.steps, desc="RL", disable=not cfg.train.progress, dynamic_ncols=True)
    for _ in range(cfg.train.steps):
        row = ray.get(coord.train_step.remote())
        bar.set_postfix(
            reward=f"{row['reward_mean']:.3f}", zero_std=f"{row['frac_reward_zero_std']:.2f}",
            tool=f"{row['tool_accuracy']:.2f}", ngrpo="on" if row["ngrpo_active"] else "off",
        )
        bar.update(1)
    bar.close()


if __name__ == "__main__":
    sys.exit(main())

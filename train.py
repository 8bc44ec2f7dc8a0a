"""The Ray job: load config → check input → connect/start Ray → build the Coordinator → run the step loop.

    python train.py                                  # local Ray, tiny CPU preset
    python train.py --config configs/X.yaml --set train.steps=50
    ray job submit --working-dir . -- python train.py --config configs/X.yaml

Exit status: 0 done; 2 the input was refused before anything started; 1 the run stopped (the message
says why and where it can resume); 128 + N after signal N (SIGTERM: 143, SIGINT: 130).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import time
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="tiny-cpu", help="YAML preset name or path (default: tiny-cpu)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a config value, e.g. --set train.steps=20 (repeatable)")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument("--print-config", action="store_true",
                   help="print the resolved config (presets it extends and --set applied) and exit")
    return p.parse_args(argv)


class Interrupted(Exception):
    """A stop signal reached the driver."""


class StopSignals:
    """SIGTERM / SIGINT set a flag the driver checks while it waits (`ray job stop` sends SIGTERM, then
    SIGKILL about 3 s later); a second SIGINT interrupts at once."""

    def __init__(self) -> None:
        self.signum: int | None = None
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.signum == signal.SIGINT and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signum = signum

    def wait(self, ray, ref):
        """ray.get(ref), but give up when a stop signal has arrived (also between two calls)."""
        while self.signum is None:
            ready, _ = ray.wait([ref], timeout=0.5)
            if ready and self.signum is None:
                return ray.get(ref)
        raise Interrupted(signal.Signals(self.signum).name)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s: %(message)s")
    from actors.driver.preflight import PreflightError, preflight, start_over
    from actors.driver.run_lock import RunInUse
    from cluster.runtime import run_root
    from configs.loader import ConfigError, load_config

    made: Path | None = None  # a run folder this start made: removed again when the input is refused
    lock = None
    try:
        cfg = load_config(args.config, args.overrides)
        if args.print_config:
            return _print_config(cfg)
        root, preset = run_root(cfg.train.run_dir), Path(str(args.config)).stem
        if cfg.train.resume in ("auto", "never"):
            name = cfg.train.run_name
            if not name or not (root / name).exists():
                name = name or _fresh_name(root, preset)  # (a fresh name's folder is made at once)
                made = (root / name).resolve()
            run_dir = (root / name).resolve()
            lock = _lock(run_dir)  # before anything looks at the run's files
            plan = preflight(cfg, run_dir)
        else:  # a checkpoint path names its own run: lock that one once it is known
            plan = preflight(
                cfg, (root / (cfg.train.run_name or time.strftime("%Y%m%d-%H%M%S-") + preset)).resolve())
            lock = _lock(plan.run_dir.resolve())
    except (ConfigError, RunInUse) as e:
        print(f"error: {e}", file=sys.stderr)
        return _refused(made, lock)
    except PreflightError as e:
        print("\n".join(f"error: {line}" for line in e.lines), file=sys.stderr)
        return _refused(made, lock)
    if plan.resume is None and (plan.run_dir / "config.json").exists():
        gone = start_over(plan.run_dir)
        print(f"run {plan.run_dir.name} has no complete checkpoint: starting it over (removed "
              f"{', '.join(gone)})")
    from observe.tracking import note_tags

    note_tags(cfg.tracking, plan.run_dir, preset)  # the trackers' tags that only the driver knows
    resume_hint = f"python train.py --config {args.config} --set train.run_name={plan.run_dir.name}"
    status = 2
    try:
        status = _run(cfg, plan, resume_hint)
        return status
    finally:
        lock.release()
        if status == 2:  # refused once Ray was up (the cluster has too little room): nothing left behind
            _refused(made, None)


def _refused(made: Path | None, lock) -> int:
    """Exit status 2 for refused input, and the run folder this start made removed again (it holds only
    the lock file, or nothing): a refused run leaves nothing behind."""
    if lock is not None:
        lock.release()
    if made is not None and made.is_dir():
        from actors.driver.run_lock import LOCK_FILE

        if {p.name for p in made.iterdir()} <= {LOCK_FILE}:
            (made / LOCK_FILE).unlink(missing_ok=True)
            made.rmdir()
    return 2


def _print_config(cfg) -> int:
    """The config a run would use, as YAML (secrets redacted), to read or to save as a preset."""
    import yaml

    from cluster.runtime import redacted

    print(yaml.safe_dump(redacted(cfg.model_dump(mode="json")), sort_keys=False, allow_unicode=True), end="")
    return 0


def _fresh_name(root: Path, preset: str) -> str:
    """A default run name that no other job has (its folder is made here); a root that cannot be
    written is left to the pre-start check, which names it."""
    from actors.driver.run_lock import new_run_name

    try:
        return new_run_name(root, preset)
    except OSError:
        return time.strftime("%Y%m%d-%H%M%S") + f"-{preset}"


def _lock(run_dir: Path):
    """The run directory's lock, held until the driver exits (see actors/driver/run_lock.py)."""
    from actors.driver.run_lock import RunLock

    lock = RunLock(run_dir)
    try:
        lock.acquire()
    except OSError:
        pass  # cannot make the folder: the pre-start write check reports it
    return lock


def _run(cfg, plan, resume_hint: str) -> int:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from actors.driver.checkpoints import CheckpointStore
    from actors.driver.coordinator import Coordinator
    from actors.driver.preflight import resource_problems
    from actors.errors import RunStopped, describe
    from cluster.runtime import connect, role_env
    from observe.tracking import finish_runs

    where = connect(cfg.cluster)
    problems = resource_problems(cfg, ray.cluster_resources())
    if problems:
        print("\n".join(f"error: {line}" for line in problems), file=sys.stderr)
        ray.shutdown()
        return 2
    run_dir = plan.run_dir
    print(f"ngrpo-ray: Ray {where['mode']}; run directory {run_dir}"
          + (f"; resuming from {plan.resume}" if plan.resume else ""), flush=True)
    stop = StopSignals()
    # The coordinator writes the run directory: keep it on this (the driver's) node.
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    cls = ray.remote(Coordinator)

    def coordinator(restarts: int):  # a restarted one gets a new name: the old one's may not be free yet
        coords.append(cls.options(
            num_cpus=0, scheduling_strategy=here, runtime_env={"env_vars": role_env(cfg.cluster.env_vars)},
            name=f"{run_dir.name}/coordinator" + (f".{restarts}" if restarts else ""),
        ).remote(cfg, str(run_dir)))
        return coords[-1]

    status, summary, coords = 0, None, []
    try:
        summary = _supervise(ray, coordinator, cfg, run_dir, plan.resume, stop)
    except Interrupted as e:
        status = 128 + stop.signum
        newest = CheckpointStore(run_dir).latest()
        print(f"\nstopped by {e}; the newest complete checkpoint is {newest or 'none'}.\n"
              f"resume with: {resume_hint}", file=sys.stderr, flush=True)
    except RunStopped as e:
        status = 1
        why = describe(e, "coordinator")  # the coordinator's own message, not Ray's wrapper and traceback
        print(f"\nerror: {why}\nresume with: {resume_hint}", file=sys.stderr, flush=True)
    except ray.exceptions.RayError as e:
        # A role that could not start, or a call that raised (a RoleFailure too, in Ray's wrapper): its
        # role, node and root cause on one line instead of Ray's traceback.
        status = 1
        where = f"coordinator on node {ray.util.get_node_ip_address()}"  # the coordinator runs here
        hint = f"\nresume with: {resume_hint}" if CheckpointStore(run_dir).latest() else ""
        print(f"\nerror: {describe(e, where)}{hint}", file=sys.stderr, flush=True)
    finally:
        try:  # a stopped run does not wait for the step in flight: its roles go with the coordinator
            ray.get(coords[-1].shutdown.remote(), timeout=60) if status == 0 else ray.kill(coords[-1])
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        report = _report(run_dir)  # also for a run that stopped half-way: its plots show where
        if status:
            _print_faults(run_dir)  # what it met before it stopped
        finish_runs(cfg.tracking, run_dir, status)  # report and adapter to the trackers; never raises
    if summary is not None:
        _print_summary(summary, report)
    return status


def _supervise(ray, coordinator, cfg, run_dir: Path, resume, stop: StopSignals) -> dict:
    """Drive the run with a coordinator from `coordinator(restarts)`. The coordinator recovers from a
    role lost during a step itself; a process lost anywhere else (a role at set-up, in a recovery, an
    eval or the finish, or the coordinator itself) makes the driver start a new coordinator from the
    newest checkpoint, as a restarted driver would, so the run ends as if nothing had happened; at
    most train.max_restarts times within train.restart_window steps."""
    from actors.driver.checkpoints import CheckpointStore
    from actors.driver.preflight import start_over
    from actors.driver.restarts import RestartBudget
    from actors.errors import describe, lost_process

    def step_of(checkpoint: Path | None) -> int:
        return int(checkpoint.name.removeprefix("step_")) if checkpoint else 0

    t, restarts, note = cfg.train, 0, None
    budget = RestartBudget(t.max_restarts, t.restart_window)
    while True:
        coord = coordinator(restarts)
        try:
            return _drive(ray, coord, cfg, resume, stop, note)
        except ray.exceptions.RayError as e:
            newest = CheckpointStore(run_dir).latest()
            recent = budget.spend("coordinator", step_of(newest))
            if not lost_process(e) or budget.exhausted(recent):
                raise
            restarts, resume = restarts + 1, newest
            note = (describe(e, "coordinator"), restarts, time.perf_counter(), _last_step(run_dir))
            ray.kill(coord)  # its roles and placement groups go with it
            if resume is None:  # lost before the first checkpoint: a fresh start
                start_over(run_dir)
            print(f"\nlost {note[0]}; starting the coordinator again from {resume or 'the start'} (restart "
                  f"{recent} of train.max_restarts={t.max_restarts} within {t.restart_window} steps)",
                  file=sys.stderr, flush=True)


def _drive(ray, coord, cfg, resume, stop: StopSignals, restarted: tuple | None = None) -> dict:
    """Set-up, eval before, the RL steps, eval after, finish; every wait gives way to a stop signal.
    `restarted`: why the driver started this coordinator again, how many times it has, when the old one
    was lost and the last step it had recorded (recorded once it is set up)."""
    from actors.errors import RoleFailure

    info = stop.wait(ray, coord.setup.remote(str(resume) if resume else None))
    if restarted:
        cause, count, lost_at, last_step = restarted
        failure = RoleFailure("coordinator", 0, None, cause)
        stop.wait(ray, coord.record_recovery.remote(failure, count, time.perf_counter() - lost_at,
                                                    max(0, last_step - info["step"])))
    print("placement: " + ", ".join(f"{len(v)} {role} on {len({x['node'] for x in v})} node(s)"
                                    for role, v in info["placement"].items()), flush=True)
    if info.get("drill_steps"):
        print(f"entity drill: {info['drill_steps']} steps on {info['drill_rows']} rows, loss "
              f"{info['drill_loss_first']:.3f} → {info['drill_loss_last']:.3f}", flush=True)
    if info.get("warmup_steps"):
        print(f"warm-up: {info['warmup_steps']} SFT steps, loss {info['warmup_loss_first']:.3f} → "
              f"{info['warmup_loss_last']:.3f} ({info['warmup_seconds']:.0f}s)"
              + (f", reused from the cache (trained in {info['warmup_trained_seconds']:.0f}s)"
                 if info.get("warmup_reused") else ""), flush=True)
    # Not when resuming past step 0; but a run lost between its first checkpoint and this eval has none.
    if cfg.train.eval_before and info["step"] == 0 and "before" not in info["evaluated"]:
        before = stop.wait(ray, coord.evaluate.remote("before"))
        shown = [k for k in info.get("eval_keys", []) if isinstance(before.get(k), (int, float))]
        print("eval before RL: " + ", ".join(f"{k.replace('_', ' ')} {before[k]:.3f}" for k in shown),
              flush=True)
    _loop(ray, coord, cfg, info["step"], stop)
    if cfg.train.eval_after:
        stop.wait(ray, coord.evaluate.remote("after"))
    return stop.wait(ray, coord.finish.remote())


def _last_step(run_dir: Path) -> int:
    """The step of the newest metrics row (0 without one): what a lost coordinator had done."""
    from observe.runs import read_jsonl

    return max((row.get("step", 0) for row in read_jsonl(run_dir / "metrics.jsonl")), default=0)


def _loop(ray, coord, cfg, start: int, stop: StopSignals) -> None:
    from tqdm import tqdm

    bar = tqdm(total=cfg.train.steps, initial=start, desc="RL", disable=not cfg.train.progress,
               dynamic_ncols=True)
    step = start
    while step < cfg.train.steps:
        row = stop.wait(ray, coord.train_step.remote())
        if row is None:  # the learner group was rebuilt and the run went back to its newest checkpoint
            step = stop.wait(ray, coord.get_step.remote())
            bar.n = step
            bar.refresh()
            continue
        step = row["step"]
        bar.set_postfix(
            reward=f"{row['reward_mean']:.3f}", zero_std=f"{row['frac_reward_zero_std']:.2f}",
            acc=f"{row['accuracy']:.2f}", ngrpo="on" if row["ngrpo_active"] else "off",
        )
        bar.update(step - bar.n)
    bar.close()


def _print_summary(summary: dict, report: Path | None) -> None:
    from observe.tables import format_eval_tables

    print("\n" + format_eval_tables(summary["eval"], summary["eval_keys"]))
    events = summary["switch_events"]
    print(f"\nNGRPO switch events: {events if events else 'none'}")
    _print_faults(Path(summary["run_dir"]))
    print(f"adapter: {summary['adapter']}\ncheckpoint: {summary['checkpoint']}\nrun directory: "
          f"{summary['run_dir']} (metrics.jsonl, eval.json, eval_table.md, events.jsonl, tensorboard/)")
    if report:
        print(f"report: {report} (plots beside it)")


def _print_faults(run_dir: Path) -> None:
    """What the run survived, per role (also after a run that stopped: it says what it met)."""
    from observe.faults import fault_summary, format_faults, learning_line
    from observe.runs import read_jsonl

    events = read_jsonl(run_dir / "events.jsonl")
    print(format_faults(fault_summary(events)), flush=True)
    if learning := learning_line(events):
        print(learning, flush=True)


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


if __name__ == "__main__":
    sys.exit(main())

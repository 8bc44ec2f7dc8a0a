"""What is checked before Ray starts anything, and the resume decision.

Each problem is one line naming the key or the file and what is allowed; `train.py` prints them all
and exits with status 2, so a bad reward path or a missing data file costs a second, not a warm-up.
Config values themselves (types, bounds, finite numbers, a plain run name) are validated by the config
models before this runs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from actors.driver.checkpoints import MARKER, CheckpointStore, step_of, trust_problems
from actors.driver.preflight_model import (
    memory_problems,
    model_problems,
    plans_memory,
    prompt_length_problems,
)
from configs.root import Config

# Files of a run that a fresh start replaces (a run that never reached a complete checkpoint).
RUN_OUTPUTS = ("metrics.jsonl", "events.jsonl", "eval.json", "eval_table.md", "ngrpo_switch_events.json",
               "tensorboard", "report", "checkpoints", "adapter", "tracking.json")


class PreflightError(Exception):
    """Problems found before starting; `lines` holds one message per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines

    def __reduce__(self):
        # Pickled (by Ray, by multiprocessing) it must be rebuilt from its lines: BaseException's default
        # would call cls(message) and split the message into characters.
        return type(self), (self.lines,), self.__dict__


@dataclass
class Plan:
    run_dir: Path
    resume: Path | None  # the checkpoint to continue from, or None for a fresh start


def preflight(cfg: Config, run_dir: Path) -> Plan:
    """Check the run directory, the reward functions, the task's data and prompt lengths; decide
    whether the run resumes. Raises PreflightError listing every problem found."""
    problems: list[str] = []
    plan = Plan(run_dir, None)
    try:
        from cluster.runtime import run_root

        plan = resume_plan(cfg.train.resume, run_dir, run_root(cfg.train.run_dir),
                           cfg.train.resume_trusted_dirs)
        if plan.resume is not None:
            problems += config_changes(cfg, plan.run_dir)
    except PreflightError as e:
        problems += e.lines
    problems += _writable(plan.run_dir)
    problems += _rewards(cfg)
    problems += _task(cfg)
    problems += _trackers(cfg)
    if problems:
        raise PreflightError(problems)
    return plan


def resume_plan(mode: str, run_dir: Path, root: Path, trusted: Sequence[str] = ()) -> Plan:
    """`auto`: continue from the run's newest complete checkpoint (none: start over); `never`: the run
    must be new; else a checkpoint folder, whose run it continues.

    Resuming unpickles the checkpoint's torch files, which can run any code, so a checkpoint is taken
    only from where the user alone writes: resolved (links followed), it must lie under the run root
    `root` or one of the `trusted` folders (train.resume_trusted_dirs), be named `step_NNNNN` inside a
    run's `checkpoints` folder, and it, its files and its run folder must belong to the current user
    and be writable by no one else (actors.driver.checkpoints.trust_problems)."""
    exists = (run_dir / "config.json").exists()
    if mode == "never":
        if exists:
            raise PreflightError([f"train.resume=never: run {run_dir.name!r} exists ({run_dir}); choose "
                                  "another train.run_name, or set train.resume=auto to continue it"])
        return Plan(run_dir, None)
    roots = [Path(root).expanduser().resolve()] + [Path(t).expanduser().resolve() for t in trusted]
    if mode == "auto":
        newest = CheckpointStore(run_dir).latest() if exists else None
        if newest is None:
            return Plan(run_dir, None)
        path = newest.resolve()
        # The run folder's own checkpoints/ (not resolved: a linked checkpoints/ leads elsewhere).
        if path.parent != run_dir.resolve() / "checkpoints":
            raise PreflightError([(f"train.resume=auto: the newest checkpoint {newest} leads to {path}, "
                                   "outside the run's checkpoints folder; remove the link, "
                                   "or start a new run (another train.run_name)")])
        _inside(path, roots, "train.resume=auto")
        _trusted(path, "train.resume=auto")
        return Plan(run_dir, path)
    path = Path(mode).expanduser().resolve()
    if not (path / MARKER).exists() or not (path / "coordinator.json").exists():
        raise PreflightError([f"train.resume: {path} is not a complete checkpoint folder (one with {MARKER} "
                              "and coordinator.json, e.g. runs/<run>/checkpoints/step_00010)"])
    if step_of(path.name) is None or path.parent.name != "checkpoints":
        raise PreflightError([(f"train.resume: {path} is not named like a checkpoint folder "
                               "(<run>/checkpoints/step_NNNNN, as training writes it)")])
    _inside(path, roots, "train.resume")
    _trusted(path, "train.resume")
    return Plan(path.parent.parent, path)


def _inside(checkpoint: Path, roots: list[Path], key: str) -> None:
    if any(checkpoint.parent.parent.is_relative_to(r) for r in roots):
        return
    trusted = f" and train.resume_trusted_dirs ({', '.join(map(str, roots[1:]))})" if roots[1:] else ""
    raise PreflightError([(f"{key}: {checkpoint} is outside the run root {roots[0]}{trusted}; resuming loads "
                           "pickled files, which can run code: copy the run under the run root "
                           "(train.run_dir), or add the folder that holds it to train.resume_trusted_dirs "
                           "if no one else can write there")])


def _trusted(checkpoint: Path, key: str) -> None:
    problems = trust_problems(checkpoint, checkpoint.parent.parent)
    if problems:
        # One line per problem (train.py prefixes each with "error: "), then what to do.
        raise PreflightError([f"{key}: {p}" for p in problems] + [(
            f"{key}: refusing to load {checkpoint}: resuming unpickles its files, which can run code, so the "
            "checkpoint and its run folder must belong to you and be writable by no one else; "
            "if you wrote it, fix it (chown -R, chmod -R go-w on the run folder), else start a new run")])


# Keys a resumed run may change: how long it runs, how it is watched and where it runs.
MAY_CHANGE = ("train.steps", "train.resume", "train.progress", "train.max_restarts", "train.restart_window",
              "train.max_skipped_updates", "train.max_failed_steps", "train.max_idle_steps",
              "train.checkpoint_every", "train.keep_checkpoints",
              "train.eval_after", "train.run_dir",
              "train.run_name", "cluster.", "rollout.call_timeout_s", "rollout.start_timeout_s",
              "learner.call_timeout_s", "tracking")


def config_changes(cfg: Config, run_dir: Path) -> list[str]:
    """A resumed run must be the same run: list the keys whose value differs from its config.json."""
    import json

    from cluster.runtime import redacted

    saved_path = run_dir / "config.json"
    if not saved_path.exists():
        return []
    saved = json.loads(saved_path.read_text(encoding="utf-8"))
    try:  # as this version writes it: keys an older version spelled elsewhere are moved (configs/pipeline.py)
        saved = redacted(Config.model_validate(saved).model_dump(mode="json"))
    except Exception:  # noqa: BLE001 - what no longer loads is compared as written, key by key
        pass
    now = redacted(cfg.model_dump(mode="json"))
    diff = [k for k in _diff(saved, now) if not k.startswith(MAY_CHANGE)]
    if not diff:
        return []
    return [f"train.resume: the config differs from the run's {saved_path} in {', '.join(diff)}; resume with "
            "the same settings, or start a new run (another train.run_name)"]


def _diff(a, b, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [k for key in sorted(set(a) | set(b))
                for k in _diff(a.get(key), b.get(key), f"{prefix}{key}.")]
    return [] if a == b else [prefix.rstrip(".")]


def start_over(run_dir: Path) -> list[str]:
    """Remove the outputs of a run that never reached a complete checkpoint; returns what went."""
    gone = []
    for name in RUN_OUTPUTS:
        p = run_dir / name
        if p.exists():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
            gone.append(name)
    return gone


def _writable(run_dir: Path) -> list[str]:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=run_dir, prefix=".write-check-"):
            pass
    except OSError as e:
        return [f"train.run_dir: cannot write the run directory {run_dir} ({e.strerror or e})"]
    return []


def _rewards(cfg: Config) -> list[str]:
    from rewards.registry import RewardNotFoundError, get_reward

    out = []
    for i, f in enumerate(cfg.reward.functions):
        try:
            get_reward(f.name)
        except (RewardNotFoundError, TypeError, ValueError) as e:
            out.append(f"reward.functions[{i}].name: {e}")
        except Exception as e:  # noqa: BLE001 - user code raised while importing
            out.append(f"reward.functions[{i}].name: importing {f.name!r} raised {type(e).__name__}: {e}")
    return out


def _trackers(cfg: Config) -> list[str]:
    """Each named tracker's package imports (mlflow and wandb are optional extras)."""
    from observe.tracking import unavailable

    return unavailable(cfg.tracking.backends)


def _task(cfg: Config) -> list[str]:
    """The task loads, its data files exist and parse and have the columns the rewards need, each reward
    runs on the first rows, and its prompts fit the engine."""
    from configs.loader import ConfigError
    from tasks.base import load_task

    for key in ("train_file", "eval_file"):
        path = getattr(cfg.task, key)
        if path and not Path(path).exists():
            return [f"task.{key}: {path} does not exist"]
    try:
        task = load_task(cfg.task, cfg.reward.functions)
        train, held = task.rows()
    except ConfigError as e:
        return [str(e)]
    except (ValueError, OSError) as e:  # a data file's error names the file and line
        return [f"task data: {e}"]
    if not train:
        return ["task: no training rows"]
    problems = _rows(cfg, task, train)
    if cfg.env.kind == "harness":
        problems += _harness(cfg, task)
    if problems:
        return problems
    paths, problems = model_problems(cfg, task)
    if problems:
        return problems
    problems = memory_problems(cfg, paths.model_dir) if plans_memory(cfg) else []
    if cfg.env.enabled:  # episodes start from the environment's messages, cut at env.max_context
        return problems
    return problems + prompt_length_problems(cfg, task, train + held, paths)


def _harness(cfg: Config, task=None) -> list[str]:
    """The run's harness imports and is an async function of (client, row); a warm-up has the task's
    scripted replies to teach."""
    from actors.worker.gateway.harness import load_harness
    from tasks.base import overrides

    try:
        load_harness(cfg.env.harness)
    except (ValueError, ImportError) as e:
        return [f"env.harness: {e}"]
    if cfg.train.warmup.enabled and task is not None and not overrides(task, "harness_script"):
        return [f"train.warmup: task {task.name!r} has no scripted replies to warm a harness run up with "
                "(Task.harness_script); set train.warmup.enabled false or give the task them"]
    return []


def _rows(cfg: Config, task, train: list[dict]) -> list[str]:
    """What the run reads of the rows: `train.adaptive_by`, the warm-up's targets, the rewards' columns
    and a call of each reward on the first two rows (single-turn runs; episodes score themselves)."""
    from configs.loader import ConfigError
    from rewards.check import reward_problems

    problems = []
    if cfg.train.sampling == "adaptive":
        from actors.driver.prompts import adaptive_values

        try:
            adaptive_values(train, cfg.train.adaptive_by)
        except ValueError as e:
            problems.append(str(e))
    if cfg.env.enabled:
        return problems
    if cfg.train.warmup.enabled:
        try:
            task.warmup_rows(train[:2])
        except ConfigError as e:
            problems.append(str(e))
    where = f"task.train_file {cfg.task.train_file}" if cfg.task.train_file else f"task {cfg.task.name!r}'s"
    judge = task.judge_name()
    return problems + reward_problems(cfg.reward.functions, judge, train, task.columns(train[:2]), where,
                                      cfg.reward.timeout_s)


def resource_problems(cfg: Config, total: dict[str, float]) -> list[str]:
    """What the roles ask of the cluster, all alive at once, against what it has."""
    c = cfg
    parts = {"rollout": (c.rollout.num_workers, c.rollout.num_cpus, c.rollout.num_gpus),
             "learner": (c.learner.world_size, c.learner.num_cpus, c.learner.num_gpus)}
    if not c.env.enabled:  # a run of agent episodes starts no reward actors
        parts["reward"] = (c.reward.num_actors, c.reward.num_cpus, 0.0)
    out = []
    for res, col, key in (("CPU", 1, "num_cpus"), ("GPU", 2, "num_gpus")):
        need = sum(p[0] * p[col] for p in parts.values())
        have = total.get(res, 0.0)
        if need > have + 1e-9:
            asked = ", ".join(f"{role} {p[0]} x {p[col]:g}" for role, p in parts.items() if p[col])
            out.append(f"the roles ask for {need:g} {res} ({asked}) but the cluster has {have:g}: lower "
                       f"rollout.{key} / learner.{key} / reward.{key}, or add nodes (Ray's CPU count is "
                       "bookkeeping: threads are set by rollout.num_threads and learner.num_threads)")
    return out

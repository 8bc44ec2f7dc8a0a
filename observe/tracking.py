"""Experiment trackers: a run's records fanned out to TensorBoard, MLflow and W&B.

Owns what each tracker receives and the tracker runs' bookkeeping, `<run>/tracking.json`. Each tracker
gets the run's config as flat params (`section.key`, the values of cluster.env_vars never), every
metrics row's numbers at its step, the eval tables (`eval/<tag>/<key>`), and tags (run name, git commit,
config file); at the end the driver hands over the report and the adapter (`finish_runs`).

tracking.json keeps each backend's run id, the highest step it was sent and the eval tables it was
sent: a resumed run reopens the same tracker run, and the steps it does again after its checkpoint
(whose rows come back identical) are not sent twice. TensorBoard needs none of it (its event files are
in the run directory). A tracker that raises is logged once, counted and dropped; the run goes on.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from configs.loader import REDACTED, SECRET_SECTION
from configs.tracking import TrackingConfig
from observe.files import atomic_write_text
from observe.tensorboard import TensorBoardLog
from observe.tracker_backends import MlflowTracker, WandbTracker, finish_mlflow, finish_wandb

log = logging.getLogger(__name__)
STATE_FILE = "tracking.json"
EXTRAS = ("mlflow", "wandb")  # backends whose package is an optional extra of the project
ROOT = Path(__file__).resolve().parents[1]
_SECRET = ".".join(SECRET_SECTION) + "."


class Tracker(Protocol):
    """What RunLog sends to: TensorBoardLog, MlflowTracker, WandbTracker."""

    name: str

    def metrics(self, row: dict[str, Any]) -> None: ...

    def eval(self, tag: str, table: dict[str, Any], step: int | None = None) -> None: ...

    def completions(self, step: int, records: list[dict[str, Any]]) -> None: ...

    def close(self) -> None: ...


class Trackers:
    """Every record to every live tracker. One that raises (also while opening) is dropped: one warning,
    an entry in `dropped`, and `on_drop(name, error)` (RunLog writes it to events.jsonl)."""

    def __init__(self, trackers: Iterable[Tracker] = (), on_drop: Callable[[str, str], None] | None = None):
        self.live = list(trackers)
        self.dropped: list[tuple[str, str]] = []
        self.on_drop = on_drop

    def open(self, name: str, make: Callable[[], Tracker]) -> None:
        try:
            self.live.append(make())
        except Exception as e:  # noqa: BLE001 - a tracker that cannot open must not stop the run
            self._drop(name, e)

    def metrics(self, row: dict[str, Any]) -> None:
        self._each("metrics", row)

    def eval(self, tag: str, table: dict[str, Any], step: int | None = None) -> None:
        self._each("eval", tag, table, step)

    def completions(self, step: int, records: list[dict[str, Any]]) -> None:
        self._each("completions", step, records)

    def close(self) -> None:
        self._each("close")
        self.live = []

    def _each(self, method: str, *args: Any) -> None:
        for tracker in list(self.live):
            try:
                getattr(tracker, method)(*args)
            except Exception as e:  # noqa: BLE001 - the run and the other trackers go on
                self.live.remove(tracker)
                self._drop(tracker.name, e)

    def _drop(self, name: str, e: Exception) -> None:
        why = f"{type(e).__name__}: {e}"[:300]
        log.warning("tracker %s failed and is dropped for the rest of the run: %s", name, why)
        self.dropped.append((name, why))
        if self.on_drop is not None:
            self.on_drop(name, why)


class TrackingState:
    """`<run>/tracking.json`: the run's tags, and per backend {run_id, step (the highest sent), evals}."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / STATE_FILE
        try:
            self.data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.data = {}

    @property
    def tags(self) -> dict[str, str]:
        return self.data.get("tags", {})

    def backend(self, name: str) -> dict[str, Any]:
        return self.data.setdefault("runs", {}).setdefault(name, {"step": None, "evals": []})

    def sent(self, name: str, step: int) -> bool:
        last = self.backend(name)["step"]
        return last is not None and step <= last

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(self.data, indent=2) + "\n")


def flat_params(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config dump as {"section.key": value}; lists stay whole, cluster.env_vars values are replaced.

    >>> flat_params({"train": {"steps": 3}, "cluster": {"env_vars": {"HF_TOKEN": "hf_x"}}})
    {'train.steps': 3, 'cluster.env_vars.HF_TOKEN': '<redacted>'}
    """
    out: dict[str, Any] = {}
    for k, v in config.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flat_params(v, key + "."))
        else:
            out[key] = REDACTED if key.startswith(_SECRET) else v
    return out


def git_commit() -> str | None:
    """The project's commit; None where it is no git checkout (a Ray job's working dir is a copy)."""
    try:
        p = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = p.stdout.strip()
    return sha if p.returncode == 0 and re.fullmatch(r"[0-9a-f]{40,64}", sha) else None


def unavailable(backends: Iterable[str]) -> list[str]:
    """One line per named backend whose package does not import here (checked before a run starts)."""
    out = []
    for name in backends:
        if name not in EXTRAS:
            continue
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - missing, or broken by another package
            out.append(f"tracking.backends: {name} needs the {name} package, which does not import here "
                       f"({type(e).__name__}: {e}); install it with: pip install '.[{name}]' "
                       f"(in the repository), or drop {name} from tracking.backends")
    return out


def note_tags(cfg: TrackingConfig, run_dir: str | Path, config_file: str) -> None:
    """The driver's part of the tags (the config file it was given, the git commit) for the trackers
    that the coordinator opens; nothing is written for TensorBoard alone."""
    if not set(cfg.backends) & set(EXTRAS):
        return
    state = TrackingState(run_dir)
    commit = git_commit()
    state.data["tags"] = {"config": config_file, **({"git_commit": commit} if commit else {})}
    try:
        state.save()
    except OSError as e:  # the tags are a nicety; the run's own checks decide whether it can write
        log.warning("could not write %s: %s", state.path, e)


def open_trackers(cfg: TrackingConfig, run_dir: str | Path, config: dict[str, Any]) -> Trackers:
    """The trackers of `cfg.backends` for the run in `run_dir`, whose config dump is `config`; those
    named in tracking.json reopen their run there."""
    run_dir = Path(run_dir)
    state, name = TrackingState(run_dir), cfg.run_name or run_dir.name
    params, tags = flat_params(config), {"run_name": name, **state.tags}
    makers: dict[str, Callable[[], Tracker]] = {
        "tensorboard": lambda: TensorBoardLog(run_dir / "tensorboard"),
        "mlflow": lambda: MlflowTracker(cfg, state, name, params, tags, run_dir),
        "wandb": lambda: WandbTracker(cfg, state, name, params, tags, run_dir),
    }
    fan = Trackers()
    for backend in cfg.backends:
        fan.open(backend, makers[backend])
    return fan


def finish_runs(cfg: TrackingConfig, run_dir: str | Path, status: int) -> None:
    """In the driver once the coordinator is gone: each tracker run in tracking.json gets report/ (PNGs,
    report.md) and adapter/ as artifacts and is closed with the run's outcome (exit `status`). A
    tracker that fails here is logged and skipped: the run's results are on disk."""
    run_dir = Path(run_dir)
    state = TrackingState(run_dir)
    runs = state.data.get("runs", {})
    folders = {d: run_dir / d for d in ("report", "adapter") if (run_dir / d).is_dir()}
    for backend in cfg.backends:
        run_id = runs.get(backend, {}).get("run_id")
        if backend not in EXTRAS or not run_id:
            continue
        try:
            if backend == "mlflow":
                finish_mlflow(cfg, run_id, folders, status)
            else:
                finish_wandb(cfg, run_id, cfg.run_name or run_dir.name, state.tags, run_dir, folders, status)
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning("tracker %s: could not log the artifacts of run %s: %s: %s", backend, run_id,
                        type(e).__name__, e)

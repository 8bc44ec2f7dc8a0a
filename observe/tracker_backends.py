"""The MLflow and W&B trackers (`observe.tracking` opens them and fans a run's records out to them).

Both are optional extras, imported only when a run names them. Each sends a run's params, metrics rows
and eval tables once (`_SentOnce`: tracking.json remembers what went out, so a resumed run does not
send its repeated steps again), and `finish_*` hands over the report and the adapter at the end.
A run in an sqlite store keeps its MLflow artifacts in its run directory (`<run>/mlflow/`).
"""

from __future__ import annotations

import json
import os
import re
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from configs.tracking import TrackingConfig
from observe.series import numeric
from observe.tensorboard import eval_scalars, last_message, row_scalars

if TYPE_CHECKING:  # tracking opens these backends; they only use the state it hands them
    from observe.tracking import TrackingState

_MLFLOW_PARAM_LEN = 6000  # MLflow refuses longer param values
MLFLOW_ARTIFACTS = "mlflow"  # in the run directory: the artifacts of a run in an sqlite store


def _eval_step(table: dict[str, Any], step: int | None) -> int:
    return int(step if step is not None else numeric(table.get("policy_version")) or 0)


class _SentOnce(ABC):
    """`metrics` and `eval` of a backend whose run goes on across restarts: what tracking.json says this
    backend was sent is not sent again (a resumed run writes its rows after the checkpoint again).
    Each backend says how it sends (`_send`)."""

    name: str
    state: TrackingState
    own: dict[str, Any]

    @abstractmethod
    def _send(self, values: dict[str, float], step: int) -> None:
        """Log `values` at `step` in the backend's run."""

    def _eval_at(self, step: int) -> int:
        return step

    def metrics(self, row: dict[str, Any]) -> None:
        step = row.get("step")
        if not isinstance(step, int) or self.state.sent(self.name, step):
            return
        self._send(row_scalars(row), step)
        self.own["step"] = step
        self.state.save()

    def eval(self, tag: str, table: dict[str, Any], step: int | None = None) -> None:
        step = _eval_step(table, step)
        if f"{tag}@{step}" in self.own["evals"]:
            return
        self._send(eval_scalars(tag, table), self._eval_at(step))
        self.own["evals"].append(f"{tag}@{step}")
        self.state.save()

    def completions(self, step: int, records: list[dict[str, Any]]) -> None:
        """A sample of a step's completions as a table, once per step (a resumed run's are not again)."""
        if step <= self.own.get("completions_step", -1):
            return
        self._table(step, {"step": [step] * len(records), "group": [str(r.get("group")) for r in records],
                           "reward": [r.get("reward") for r in records],
                           "prompt": [last_message(r.get("prompt")) for r in records],
                           "completion": [str(r.get("completion")) for r in records]})
        self.own["completions_step"] = step
        self.state.save()

    @abstractmethod
    def _table(self, step: int, columns: dict[str, list]) -> None:
        """Log a table (column -> values) of `step` in the backend's run."""


class MlflowTracker(_SentOnce):
    """One MLflow run, through MlflowClient with an explicit run id (no global active run)."""

    name = "mlflow"

    def __init__(self, cfg: TrackingConfig, state: TrackingState, run_name: str, params: dict[str, Any],
                 tags: dict[str, str], run_dir: Path) -> None:
        from mlflow import MlflowClient
        from mlflow.entities import Param, RunTag

        self.client, self.state = MlflowClient(tracking_uri=cfg.mlflow_uri), state
        self.own = state.backend(self.name)
        run_tags = [RunTag(k, str(v)) for k, v in tags.items()]
        if self.own.get("run_id"):  # resumed: the params are there since the run was made
            self.run_id = self.own["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            self.client.log_batch(self.run_id, tags=run_tags)
            return
        self.run_id = self.client.create_run(self._experiment(cfg.project), run_name=run_name).info.run_id
        _artifacts_in_run_dir(self.client, self.run_id, run_dir / MLFLOW_ARTIFACTS)
        items = [Param(_mlflow_key(k), _text(v)[:_MLFLOW_PARAM_LEN]) for k, v in params.items()]
        for i in range(0, len(items), 100):  # MLflow takes at most 100 params a request
            self.client.log_batch(self.run_id, params=items[i:i + 100])
        self.client.log_batch(self.run_id, tags=run_tags)
        self.own["run_id"] = self.run_id  # only now: a reopened run always has its params
        state.save()

    def _experiment(self, name: str) -> str:
        found = self.client.get_experiment_by_name(name)
        if found is not None:
            return found.experiment_id
        try:
            return self.client.create_experiment(name)
        except Exception:  # another run made it in the meantime
            found = self.client.get_experiment_by_name(name)
            if found is None:
                raise
            return found.experiment_id

    def _send(self, values: dict[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        items = [Metric(_mlflow_key(k), v, now, step) for k, v in values.items()]
        for i in range(0, len(items), 1000):  # MLflow takes at most 1000 metrics a request
            self.client.log_batch(self.run_id, metrics=items[i:i + 1000])

    def _table(self, step: int, columns: dict[str, list]) -> None:
        # one JSON table artifact for the run: MLflow appends the rows of each call to it
        self.client.log_table(self.run_id, data=columns, artifact_file="completions.json")

    def close(self) -> None:
        """Nothing to flush; the driver ends the run (`finish_runs`), with the run's outcome."""


class WandbTracker(_SentOnce):
    """One W&B run (online, or offline under WANDB_MODE=offline), resumed by id."""

    name = "wandb"

    def __init__(self, cfg: TrackingConfig, state: TrackingState, run_name: str, params: dict[str, Any],
                 tags: dict[str, str], run_dir: Path) -> None:
        import wandb

        self.state, self.own = state, state.backend(self.name)
        resumed = bool(self.own.get("run_id"))
        self.run = wandb.init(project=cfg.project, name=run_name, id=self.own.get("run_id"), resume="allow",
                              config=None if resumed else params, tags=_wandb_tags(tags),
                              dir=_wandb_dir(run_dir), reinit="create_new")
        self.last = self.own["step"] or 0  # W&B drops a step below the last one the run was given
        self.own["run_id"] = self.run.id
        state.save()

    def _send(self, values: dict[str, float], step: int) -> None:
        self.run.log(values, step=step)
        self.last = max(self.last, step)

    def _table(self, step: int, columns: dict[str, list]) -> None:
        import wandb

        names = list(columns)
        table = wandb.Table(columns=names, data=[list(r) for r in zip(*(columns[c] for c in names))])
        self.run.log({"completions": table}, step=max(step, self.last))
        self.last = max(self.last, step)

    def _eval_at(self, step: int) -> int:
        # A table of a policy version behind the last step (skipped updates) goes at the last step;
        # its eval/<tag>/policy_version says which policy it measured.
        return max(step, self.last)

    def close(self) -> None:
        import wandb

        self.run.finish()
        # finish() can return before W&B's service has written everything (offline: the .wandb file),
        # and the process may end right after; teardown waits for it. No other W&B run lives here.
        wandb.teardown()


def _artifacts_in_run_dir(client: Any, run_id: str, folder: Path) -> None:
    """In an sqlite store, the run's artifacts go to `folder` (in its run directory). MLflow gives each run
    a folder under its experiment's artifact location, and a client that makes an experiment in an sqlite
    store (no server) sets that to ./mlruns of its working directory: the report and the adapter would
    land wherever the run was started from, outside the run. The run's own row says where its artifacts
    are; only it changes (the experiment, which other runs share, keeps its location)."""
    if urlparse(client.tracking_uri).scheme != "sqlite":
        return  # a server's store: its artifact location is the server's choice
    from mlflow.store.tracking.dbmodels.models import SqlRun

    store = client._tracking_client.store  # mlflow is pinned (pyproject.toml); tests read the row back
    with store.ManagedSessionMaker(read_only=False) as session:
        session.query(SqlRun).filter(SqlRun.run_uuid == run_id).update(
            {SqlRun.artifact_uri: str(folder.resolve())})


def finish_mlflow(cfg: TrackingConfig, run_id: str, folders: dict[str, Path], status: int) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=cfg.mlflow_uri)
    for name, path in folders.items():
        client.log_artifacts(run_id, str(path), name)
    client.set_terminated(run_id, "FINISHED" if status == 0 else "KILLED" if status >= 128 else "FAILED")


def finish_wandb(cfg: TrackingConfig, run_id: str, run_name: str, tags: dict[str, str], run_dir: Path,
                  folders: dict[str, Path], status: int) -> None:
    import wandb

    run = wandb.init(project=cfg.project, name=run_name, id=run_id, resume="allow", dir=_wandb_dir(run_dir),
                     tags=_wandb_tags(tags), reinit="create_new")
    safe = re.sub(r"[^\w.-]", "-", run_name)  # what an artifact name may hold
    try:
        for name, path in folders.items():
            artifact = wandb.Artifact(f"{safe}-{name}", type="model" if name == "adapter" else "report")
            artifact.add_dir(str(path))
            run.log_artifact(artifact)
    finally:
        run.finish(exit_code=status)
        wandb.teardown()  # the driver exits next: let W&B's service write and upload everything first


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


def _mlflow_key(key: str) -> str:
    """MLflow allows letters, digits and _ - . / : and space in a key; a category name may hold more."""
    return re.sub(r"[^\w\-./: ]", "_", key)


def _wandb_tags(tags: dict[str, str]) -> list[str]:
    """W&B tags are short labels (64 characters at most); the run name is the run's name already."""
    return [f"{k}:{v}"[:64] for k, v in tags.items() if k != "run_name"]


def _wandb_dir(run_dir: Path) -> str | None:
    """W&B's local files in the run directory, unless WANDB_DIR says where."""
    return None if os.environ.get("WANDB_DIR") else str(run_dir)

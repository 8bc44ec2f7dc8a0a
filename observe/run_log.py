"""The run directory: metrics.jsonl (one row per step), events, eval.json, config snapshot; each row and
eval table also goes to the run's trackers (`observe.tracking`: TensorBoard scalars in tensorboard/ by
default, MLflow, W&B).

Owns file formats only. Rows are flushed as they are written so a crashed run keeps its history; the
trackers' copies are for looking, the JSONL is the record: a tracker that fails is dropped (an event
`tracker_dropped`) and the run goes on.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from observe.files import atomic_write_text
from observe.tensorboard import TensorBoardLog
from observe.tracking import Trackers


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None  # JSON has no NaN; null says "not measured"
    return v


COMPLETIONS = "completions_train.jsonl"  # the training sample of completions, appended every N steps


def _keep_steps(path: Path, last_step: int) -> int:
    """Rewrite the JSONL file at `path` with only its rows of steps <= `last_step`; returns how many."""
    if not path.exists():
        return 0
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int) and row["step"] <= last_step:
            kept.append(line)
    atomic_write_text(path, "".join(x + "\n" for x in kept))
    return len(kept)


class RunLog:
    def __init__(self, run_dir: str | Path, tensorboard: bool = True,
                 trackers: Trackers | None = None) -> None:
        """`trackers`: where rows and eval tables go besides the files (`observe.tracking.open_trackers`);
        None: TensorBoard alone, or nothing with tensorboard=False."""
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self._metrics = open(self.dir / "metrics.jsonl", "a", encoding="utf-8")
        self._events = open(self.dir / "events.jsonl", "a", encoding="utf-8")
        # Each RunLog opens a new TensorBoard event file (the JSONL files are appended to); TensorBoard
        # reads all the files in the folder as one run.
        if trackers is None:
            trackers = Trackers([TensorBoardLog(self.dir / "tensorboard")] if tensorboard else [])
        self.trackers, self.tracker_failures = trackers, 0
        for name, why in trackers.dropped:  # those that failed to open, before there was an events file
            self._dropped(name, why)
        trackers.on_drop = self._dropped

    def _dropped(self, name: str, why: str) -> None:
        self.tracker_failures += 1
        self.event("tracker_dropped", tracker=name, error=why, failures=self.tracker_failures)

    def truncate_metrics(self, last_step: int) -> int:
        """Keep only the rows of steps <= `last_step` (a resumed or rolled-back run writes the later
        ones again, never twice), in metrics.jsonl and completions_train.jsonl; a row cut off by a crash
        goes too. Atomic; returns the metrics rows kept."""
        self._metrics.close()
        kept = _keep_steps(self.dir / "metrics.jsonl", last_step)
        _keep_steps(self.dir / COMPLETIONS, last_step)
        self._metrics = open(self.dir / "metrics.jsonl", "a", encoding="utf-8")
        return kept

    def metrics(self, row: dict[str, Any]) -> None:
        self._metrics.write(json.dumps({k: _clean(v) for k, v in row.items()}, ensure_ascii=False) + "\n")
        self._metrics.flush()
        self.trackers.metrics(row)

    def eval(self, tag: str, table: dict[str, Any], step: int | None = None) -> None:
        """An eval table (e.g. tag "before" / "after") to the trackers as scalars eval/<tag>/…, at `step`
        or the table's policy_version. eval.json stays the caller's, through `write_json`."""
        self.trackers.eval(tag, table, step)

    def completions(self, step: int, records: list[dict[str, Any]]) -> None:
        """A sample of a training step's completions (dicts with prompt, completion, reward, scores):
        one line each in completions_train.jsonl, and a text / table in the trackers."""
        if not records:
            return
        with open(self.dir / COMPLETIONS, "a", encoding="utf-8") as f:
            f.write("".join(json.dumps({"step": step, **r}, ensure_ascii=False, default=str) + "\n"
                            for r in records))
        self.trackers.completions(step, records)

    def event(self, kind: str, **fields: Any) -> None:
        self._events.write(json.dumps({"event": kind, **fields}, ensure_ascii=False) + "\n")
        self._events.flush()

    def write_json(self, name: str, obj: Any) -> Path:
        return self.write_text(name, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")

    def write_text(self, name: str, text: str) -> Path:
        """Replace a file whole (a temporary file renamed over it): a crash leaves the old or the new."""
        path = self.dir / name
        atomic_write_text(path, text)
        return path

    def close(self) -> None:
        self._metrics.close()
        self.trackers.close()  # before the events file: a tracker failing to close is an event too
        self._events.close()

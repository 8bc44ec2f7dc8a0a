"""TensorBoard event files in the run directory: every numeric metric of a row, and eval tables.

Written with tensorboard's own event-file writer (no torch, no TensorFlow). One event per metrics row
carries all of its scalars, so a step costs one queue put; a background thread writes them and flushes
at most every `flush_secs`, and `close` flushes the rest.

    tensorboard --logdir runs/            # every run directory shows up as its own run
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.compat.proto.summary_pb2 import Summary
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from observe.series import numeric


def row_scalars(row: dict[str, Any]) -> dict[str, float]:
    """The scalars of a metrics row: numbers and bools (as 0/1); text, None and "step" are skipped.

    >>> row_scalars({"step": 3, "reward_mean": 0.5, "ngrpo_active": True, "weights_fingerprint": "4acd"})
    {'reward_mean': 0.5, 'ngrpo_active': 1.0}
    """
    return {k: v for k, raw in row.items() if k != "step" and (v := numeric(raw)) is not None}


def eval_scalars(tag: str, table: dict[str, Any]) -> dict[str, float]:
    """An eval table as scalars under eval/<tag>/; per-category accuracies under eval/<tag>/per_category/.

    >>> eval_scalars("after", {"accuracy": 0.5, "per_category": {"combo": 0.25}, "n": 4})
    {'eval/after/accuracy': 0.5, 'eval/after/n': 4.0, 'eval/after/per_category/combo': 0.25}
    """
    out = {f"eval/{tag}/{k}": v for k, raw in table.items() if (v := numeric(raw)) is not None}
    for cat, raw in (table.get("per_category") or {}).items():
        if (v := numeric(raw)) is not None:
            out[f"eval/{tag}/per_category/{cat}"] = v
    return out


def completions_markdown(records: list[dict[str, Any]], width: int = 400) -> str:
    """Completions as a Markdown table: group, reward, the last prompt message and the completion.

    >>> print(completions_markdown([{"group": "a", "reward": 1.0, "prompt": "2+2?", "completion": "4|x"}]))
    | group | reward | prompt | completion |
    |---|---|---|---|
    | a | 1 | 2+2? | 4\\|x |
    """
    def cell(v: Any) -> str:
        text = str(v if v is not None else "")
        return text.replace("\n", " ⏎ ").replace("|", "\\|")[:width]

    lines = ["| group | reward | prompt | completion |", "|---|---|---|---|"]
    for r in records:
        reward = r.get("reward")
        shown = f"{reward:g}" if isinstance(reward, int | float) else ""
        lines.append(f"| {cell(r.get('group'))} | {shown} | {cell(last_message(r.get('prompt')))} | "
                     f"{cell(r.get('completion'))} |")
    return "\n".join(lines)


def last_message(prompt: Any) -> str:
    """A prompt's last message's text (a chat prompt), or the prompt itself."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        return str(prompt[-1].get("content", ""))
    return "" if prompt is None else str(prompt)


class TensorBoardLog:
    """Scalars into `log_dir` (created). Not thread-safe; one per process that writes metrics.

    >>> tb = TensorBoardLog("runs/x/tensorboard")          # doctest: +SKIP
    >>> tb.scalars({"reward_mean": 0.4}, step=1); tb.close()  # doctest: +SKIP
    """

    name = "tensorboard"  # as a tracker (observe.tracking)

    def __init__(self, log_dir: str | Path, flush_secs: float = 5.0) -> None:
        self.dir = Path(log_dir)
        self._writer = EventFileWriter(str(self.dir), flush_secs=flush_secs)

    def scalars(self, values: dict[str, float], step: int) -> None:
        if not values:
            return
        summary = Summary(value=[Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()])
        self._writer.add_event(Event(wall_time=time.time(), step=int(step), summary=summary))

    def metrics(self, row: dict[str, Any]) -> None:
        """One metrics row at its own "step" (rows without one are not a step and are skipped)."""
        if numeric(row.get("step")) is not None:
            self.scalars(row_scalars(row), int(row["step"]))

    def eval(self, tag: str, table: dict[str, Any], step: int | None = None) -> None:
        """An eval table (before / after); at `step`, else at its policy version, so "after" lands on the
        last RL step and "before" on 0."""
        if step is None:
            step = int(numeric(table.get("policy_version")) or 0)
        self.scalars(eval_scalars(tag, table), step)

    def completions(self, step: int, records: list[dict[str, Any]]) -> None:
        """A sample of a step's completions as one text summary `completions` (a Markdown table)."""
        from tensorboard.plugins.text.summary import text_pb

        summary = text_pb("completions", completions_markdown(records))
        self._writer.add_event(Event(wall_time=time.time(), step=int(step), summary=summary))

    def flush(self) -> None:
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()  # flushes; calling it twice is harmless

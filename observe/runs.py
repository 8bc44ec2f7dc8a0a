"""Reading a run directory back: metrics rows, events, eval tables, config, NGRPO switch events.

Owns tolerance, not formats (those belong to `actors.run_log`): every file may be missing, and the last
line of a JSONL file may be cut off by a crash, because reports are most wanted for runs that died.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# Metrics-row keys renamed since older runs were written: old key (or family prefix, before "/") → new.
RENAMED_KEYS = {"tool_accuracy": "accuracy"}


@dataclass
class Run:
    """One run directory, as far as it got."""

    path: Path
    rows: list[dict[str, Any]] = field(default_factory=list)  # metrics.jsonl, one per step
    events: list[dict[str, Any]] = field(default_factory=list)  # events.jsonl
    eval: dict[str, dict[str, Any]] = field(default_factory=dict)  # eval.json: tag -> table
    config: dict[str, Any] = field(default_factory=dict)  # config.json
    switches: list[dict[str, Any]] = field(default_factory=list)  # {step, active, window_value}

    @property
    def name(self) -> str:
        return self.path.name


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; [] when it is missing. Unreadable lines (a crash mid-write) are skipped."""
    if not path.exists():
        return []
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            log.warning("%s:%d is not JSON (cut off by a crash?); skipped", path, i)
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def current_key(key: str) -> str:
    """Today's name of a metrics-row key (`RENAMED_KEYS`, families too).

    >>> current_key("tool_accuracy/combo"), current_key("accuracy"), current_key("reward_mean")
    ('accuracy/combo', 'accuracy', 'reward_mean')
    """
    head, sep, tail = key.partition("/")
    return RENAMED_KEYS[head] + sep + tail if head in RENAMED_KEYS else key


def current_keys(row: dict[str, Any]) -> dict[str, Any]:
    """An older run's metrics row under today's keys, so reports and comparisons read old and new runs
    alike; a row that has both keeps the new key's value.

    >>> current_keys({"step": 1, "tool_accuracy": 0.5, "tool_accuracy/combo": 0.25})
    {'step': 1, 'accuracy': 0.5, 'accuracy/combo': 0.25}
    """
    out: dict[str, Any] = {}
    for key, value in row.items():
        if (new := current_key(key)) != key:
            out.setdefault(new, value)
        else:
            out[key] = value
    return out


def read_json(path: Path, default: Any) -> Any:
    """A JSON file, or `default` when it is missing or unreadable (a run killed while writing it)."""
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        log.warning("%s is not JSON; ignored", path)
        return default


def load_run(path: str | Path) -> Run:
    """Everything a report needs from one run directory. Never raises for missing files."""
    path = Path(path)
    events = read_jsonl(path / "events.jsonl")
    # events.jsonl is written as the run goes, ngrpo_switch_events.json only at the end: prefer the
    # live one so a crashed run still shows its switches.
    switches = [{k: e.get(k) for k in ("step", "active", "window_value")}
                for e in events if e.get("event") == "ngrpo_switch"]
    if not switches:
        saved = read_json(path / "ngrpo_switch_events.json", [])
        switches = [s for s in saved if isinstance(s, dict)] if isinstance(saved, list) else []
    ev = read_json(path / "eval.json", {})
    return Run(
        path=path,
        rows=[current_keys(r) for r in read_jsonl(path / "metrics.jsonl")],
        events=events,
        eval={k: v for k, v in ev.items() if isinstance(v, dict)} if isinstance(ev, dict) else {},
        config=c if isinstance(c := read_json(path / "config.json", {}), dict) else {},
        switches=switches,
    )

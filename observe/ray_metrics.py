"""Training metrics through Ray's metrics API, so they reach Prometheus and the Ray dashboard.

Owns the mapping from a metrics row (the same dict that goes to metrics.jsonl) to Ray gauges, counters
and a histogram; it knows nothing about how the row was computed. Every series is tagged with the run
name and the role that measured it (both from `observe.schema`). Names are Prometheus-safe: a row key
``a/b`` becomes the gauge ``ngrpo_a_by_<tag>`` with the ``b`` part in the tag (``accuracy/combo`` →
``ngrpo_accuracy_by_category{category="combo"}``), so a dashboard panel can show all categories with one
query. Ray's Prometheus export adds its own ``ray_`` prefix: ``ray_ngrpo_frac_reward_zero_std``.

Created inside the Coordinator actor: a metric is exported by the metrics agent of the node whose
process recorded it.

>>> m = RayMetrics("my-run")                     # doctest: +SKIP
>>> m.record({"step": 1, "reward_mean": 0.4, "ngrpo_active": False, "time/learn": 2.1})  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from observe.schema import lookup
from observe.series import numeric

PREFIX = "ngrpo_"
# Eval tables are not step rows: their per-category rates (the task's judge, or an agent episode's
# success) are one family of their own, whatever the task.
EVAL_FAMILY_TAG = {"eval_accuracy": "category"}
# Seconds per phase on CPU (a few) up to large GPU batches (minutes).
PHASE_BOUNDARIES = [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 600]
_UNSAFE = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(key: str) -> str:
    """The Prometheus-safe gauge name of a row key's prefix: ``accuracy/combo`` → ``ngrpo_accuracy``.

    >>> metric_name("accuracy/combo"), metric_name("ngrpo_active"), metric_name("time/learn")
    ('ngrpo_accuracy', 'ngrpo_active', 'ngrpo_time')
    """
    head = key.split("/", 1)[0]
    # ngrpo_active → ngrpo_active, not ngrpo_ngrpo_
    return PREFIX + _UNSAFE.sub("_", head.removeprefix(PREFIX))


def split_key(key: str) -> tuple[str, dict[str, str]]:
    """(gauge name, extra tags) of a row key. A split key gets its own name (``_by_<tag>``): one
    Prometheus name must always carry the same tag set, and ``accuracy`` (overall) exists too.

    >>> split_key("accuracy/combo"), split_key("accuracy")
    (('ngrpo_accuracy_by_category', {'category': 'combo'}), ('ngrpo_accuracy', {}))
    """
    head, _, tail = key.partition("/")
    if not tail:
        return metric_name(key), {}
    tag = EVAL_FAMILY_TAG.get(head) or lookup(key).tag
    return f"{metric_name(head)}_by_{tag}", {tag: tail}


class RayMetrics:
    """One instance per run, in the process that writes the metrics rows."""

    def __init__(self, run: str) -> None:
        from ray.util.metrics import Counter, Histogram

        self.run = run
        self._gauges: dict[str, tuple[Any, tuple[str, ...]]] = {}  # name → (gauge, tag keys)
        self._steps = Counter(PREFIX + "steps", "RL steps completed", tag_keys=("run", "role"))
        self._failures = Counter(
            PREFIX + "reward_failed_completions",
            "Completions scored 0 because a reward function raised or hung",
            tag_keys=("run", "role"),
        )
        self._recoveries = Counter(
            PREFIX + "recoveries", "Dead or hung roles replaced, per role", tag_keys=("run", "role"),
        )
        self._switches = Counter(
            PREFIX + "switch_events", "NGRPO switch events (on and off)", tag_keys=("run", "role", "state")
        )
        self._phase = Histogram(
            PREFIX + "phase_seconds", "Seconds per phase of an RL step", boundaries=PHASE_BOUNDARIES,
            tag_keys=("run", "role", "phase"),
        )

    def _gauge(self, name: str, extra_tags: tuple[str, ...]):
        """The gauge `name`, created on first use; one name always has one tag set."""
        from ray.util.metrics import Gauge

        tag_keys = ("run", "role", *extra_tags)
        if name not in self._gauges:
            desc = f"ngrpo-ray training metric {name[len(PREFIX):]}"
            self._gauges[name] = (Gauge(name, desc, tag_keys=tag_keys), tag_keys)
        gauge, first = self._gauges[name]
        if first != tag_keys:  # Ray would drop the sample quietly: say which key clashed
            raise ValueError(f"metric {name}: tags {tag_keys} differ from its first use {first}")
        return gauge

    def _set(self, key: str, value: float, role: str | None = None, **tags: str) -> None:
        name, extra = split_key(key)
        extra.update(tags)
        base = {"run": self.run, "role": role or lookup(key).role}
        self._gauge(name, tuple(extra)).set(value, tags={**base, **extra})

    def record(self, row: dict[str, Any]) -> None:
        """Export one metrics row: every numeric value as a gauge; phases also in a histogram."""
        for key, raw in row.items():
            v = numeric(raw)
            if v is None:
                continue
            self._set(key, v)
            if key.startswith("time/"):
                self._phase.observe(v, tags={"run": self.run, "role": "coordinator", "phase": key[5:]})
        self._steps.inc(1, tags={"run": self.run, "role": "coordinator"})
        failures = numeric(row.get("reward_failures"))
        if failures:
            self._failures.inc(failures, tags={"run": self.run, "role": "reward"})

    def recovery(self, role: str) -> None:
        """A dead or hung role was replaced (the learner group: rebuilt from a checkpoint)."""
        self._recoveries.inc(1, tags={"run": self.run, "role": role})

    def switch_event(self, active: bool) -> None:
        self._switches.inc(1,
                           tags={"run": self.run, "role": "coordinator", "state": "on" if active else "off"})

    def record_eval(self, stage: str, table: dict[str, Any], keys: Sequence[str]) -> None:
        """The eval table of `stage` (before / after) as ``ngrpo_eval_<key>`` gauges (its scalar `keys`, as
        the task names them), and its per-category rates (the task's judge, or an agent episode's
        success, per category) as ``ngrpo_eval_accuracy_by_category``, whatever the task."""
        for key in keys:
            v = numeric(table.get(key))
            if v is not None:
                self._set(f"eval_{key}", v, role="coordinator", stage=stage)
        for cat, acc in (table.get("per_category") or {}).items():
            v = numeric(acc)
            if v is not None:
                self._set(f"eval_accuracy/{cat}", v, role="coordinator", stage=stage)

"""Eval tables side by side as Markdown: the table printed at the end of a run and kept in eval_table.md.

A table is what `Task.evaluate` returns: scalar rates named by the task's `eval_keys` and `per_category`
rates, all in [0, 1]; they are shown as percentages (a `*_mean` key, a count such as turns per episode,
as a number), a missing value as "—".

>>> print(format_eval_tables({"before": {"tool_accuracy": 0.5, "per_category": {"combo": 0.25}},
...                           "after": {"tool_accuracy": 0.75, "per_category": {"combo": 1.0}}},
...                          ["tool_accuracy"]))
| metric | before | after |
|---|---|---|
| tool accuracy | 50.0% | 75.0% |
| combo | 25.0% | 100.0% |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from observe.series import numeric


def format_eval_tables(tables: dict[str, dict[str, Any]], keys: Sequence[str]) -> str:
    """`keys` rows (underscores shown as spaces), then one row per category; a row that no table
    measured is left out."""
    names = list(tables)
    cats = sorted({c for t in tables.values() for c in (t.get("per_category") or {})})
    rows = [(k.replace("_", " "), lambda t, k=k: t.get(k)) for k in keys]
    rows += [(c, lambda t, c=c: (t.get("per_category") or {}).get(c)) for c in cats]
    out = ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, get in rows:
        cells = [numeric(get(tables[n])) for n in names]
        if all(v is None for v in cells):
            continue
        out.append(f"| {label} | " + " | ".join(_cell(v, label.endswith(" mean")) for v in cells) + " |")
    return "\n".join(out)


def _cell(v: float | None, count: bool) -> str:
    return "—" if v is None else f"{v:.2f}" if count else f"{100 * v:.1f}%"

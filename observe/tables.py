"""Eval tables side by side as Markdown: the table printed at the end of a run and kept in eval_table.md.

A table is what `Task.evaluate` returns: scalar rates named by the task's `eval_keys` and `per_category`
rates, all in [0, 1]; they are shown as percentages (a `*_mean` key, a count such as turns per episode,
or a reward's mean score, `reward/<name>`, as a number), a missing value as "—". The keys are the task's
own (a generic task: `accuracy`, `reward_mean`; the fund assistant: `average_score`, `tool_accuracy`,
`reasoning_score`); where they were not kept (eval.json alone), `eval_scalar_keys` reads them off the
tables.

>>> tables = {"before": {"accuracy": 0.5, "reward_mean": 0.61, "per_category": {"combo": 0.25}, "n": 8},
...           "after": {"accuracy": 0.75, "reward_mean": 0.83, "per_category": {"combo": 1.0}, "n": 8}}
>>> print(format_eval_tables(tables, eval_scalar_keys(tables)))
| metric | before | after |
|---|---|---|
| accuracy | 50.0% | 75.0% |
| reward mean | 0.61 | 0.83 |
| combo | 25.0% | 100.0% |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from observe.series import numeric

# What the coordinator adds to a table, and counts: not the task's rates.
NOT_SCALARS = ("per_category", "n", "policy_version", "seconds", "reward_failures")


def eval_scalar_keys(tables: dict[str, dict[str, Any]]) -> list[str]:
    """The scalar keys of eval tables, for a run whose `eval_keys` were not kept: every numeric key of
    any table but bookkeeping (`NOT_SCALARS`), `accuracy` first when present, then in table order.

    >>> eval_scalar_keys({"after": {"average_score": 0.6, "tool_accuracy": 0.5, "n": 4, "seconds": 3.0}})
    ['average_score', 'tool_accuracy']
    """
    keys = [k for t in tables.values() for k, v in t.items()
            if k not in NOT_SCALARS and not isinstance(v, bool) and numeric(v) is not None]
    keys = list(dict.fromkeys(keys))
    return sorted(keys, key=lambda k: k != "accuracy")  # stable: the rest keep their order


def is_rate(key: str) -> bool:
    """Whether an eval key is a rate in [0, 1] (shown as a percentage), not a mean count or score."""
    return not key.endswith("_mean") and not key.startswith("reward/")


def format_eval_tables(tables: dict[str, dict[str, Any]], keys: Sequence[str]) -> str:
    """`keys` rows (underscores shown as spaces), then one row per category; a row that no table
    measured is left out."""
    names = list(tables)
    cats = sorted({c for t in tables.values() for c in (t.get("per_category") or {})})
    rows = [(k.replace("_", " "), lambda t, k=k: t.get(k), not is_rate(k)) for k in keys]
    rows += [(c, lambda t, c=c: (t.get("per_category") or {}).get(c), False) for c in cats]
    out = ["| metric | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for label, get, count in rows:
        cells = [numeric(get(tables[n])) for n in names]
        if all(v is None for v in cells):
            continue
        out.append(f"| {label} | " + " | ".join(_cell(v, count) for v in cells) + " |")
    return "\n".join(out)


def _cell(v: float | None, count: bool) -> str:
    return "—" if v is None else f"{v:.2f}" if count else f"{100 * v:.1f}%"

"""Human label audit and count tables for the fund-assistant data.

Owns how rows are shown to a person checking labels (request, previous steps, label tool/params) and
the per-category / per-split count table printed by the CLI. Reads rows only; never changes them.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict

from tasks.fund_assistant.data import CATEGORIES, category_counts
from tasks.fund_assistant.generator import PREVIOUS_STEPS


def counts_table(splits: dict[str, list[dict]]) -> str:
    """A fixed-width table: one line per category, one column per split, plus a total column and row."""
    counts = {name: category_counts(rows) for name, rows in splits.items()}
    cats = list(dict.fromkeys(c for cs in counts.values() for c in cs))
    names = list(splits)
    head = f"{'category':<12}" + "".join(f"{n:>8}" for n in names) + f"{'total':>8}"
    lines = [head, "-" * len(head)]
    for c in cats:
        vals = [counts[n].get(c, 0) for n in names]
        lines.append(f"{c:<12}" + "".join(f"{v:>8}" for v in vals) + f"{sum(vals):>8}")
    totals = [len(splits[n]) for n in names]
    lines += ["-" * len(head), f"{'total':<12}" + "".join(f"{v:>8}" for v in totals) + f"{sum(totals):>8}"]
    return "\n".join(lines)


def meta(splits: dict[str, list[dict]], seed: int) -> dict:
    """What meta.json records: the seed, counts per split and category, and scenario counts."""
    return {
        "seed": seed,
        "counts": {name: category_counts(rows) for name, rows in splits.items()},
        "rows": {name: len(rows) for name, rows in splits.items()},
        "scenarios": {name: len({r["scenario_id"] for r in rows}) for name, rows in splits.items()},
        "categories": list(CATEGORIES),
    }


def sample_per_category(rows: list[dict], n: int, seed: int) -> dict[str, list[dict]]:
    """About `n` rows in all, spread evenly over the categories present (at least one each)."""
    by_cat: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_cat[r["category"]].append(r)
    cats = [c for c in CATEGORIES if c in by_cat] + sorted(c for c in by_cat if c not in CATEGORIES)
    if not cats:
        return {}
    rng = random.Random(f"audit/{seed}")
    base, extra = divmod(max(n, len(cats)), len(cats))
    return {c: rng.sample(by_cat[c], min(len(by_cat[c]), base + (i < extra))) for i, c in enumerate(cats)}


def format_row(row: dict) -> str:
    """Request, previous steps, label tool/params and thought, for a person to judge."""
    prev = row["prompt"].split(f"\n\n{PREVIOUS_STEPS}\n", 1)
    sol = json.loads(row["solution"])
    action = sol.get("action", {})
    lines = [
        f"[{row['scenario_id']} step {row['step']}/{row['num_steps']} {row['lang']} {row.get('kind', '')}]",
        f"  request : {row['request']}",
    ]
    if len(prev) == 2:
        lines += [f"  previous: {p}" for p in prev[1].splitlines()]
    lines.append(
        f"  label   : {action.get('tool')} {json.dumps(action.get('params', {}), ensure_ascii=False)}"
    )
    lines.append(f"  thought : {sol.get('thought', '')}")
    lines.append(f"  plan    : {' | '.join(sol.get('plan', []))}")
    if row.get("label_bug"):
        lines.append("  NOTE    : label_bug (the field report's wrong warm-up label)")
    return "\n".join(lines)


def audit_report(rows: list[dict], n: int, seed: int) -> str:
    """The audit printout: a heading per category, then its sampled rows."""
    out = []
    for cat, picked in sample_per_category(rows, n, seed).items():
        out.append(f"=== {cat} ({len(picked)} shown) ===")
        out.extend(format_row(r) for r in picked)
        out.append("")
    return "\n".join(out)

"""The fund-assistant data set: single-step rows, expanded multistep rows, and the train/eval split.

Owns row assembly (prompt layout, solution JSON), sizes, request de-duplication, the split by
scenario_id and `apply_seed_label_bug`. Labels come from single.py and multistep.py; the row schema
from data.py. Same seed -> identical output: every random draw comes from a `random.Random` seeded
with a string derived from the seed (string seeds are hashed stably, unlike `hash()`).

Prompt layout (the `prompt` column, i.e. the user message):
    <request>                                   # step 1 and every single-step row
    <request>\\n\\nPrevious steps:\\nStep 1: <tool> → <observation>\\n...   # multistep step k > 1
"""

from __future__ import annotations

import copy
import json
import random
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from tasks.fund_assistant.data import CATEGORIES
from tasks.fund_assistant.multistep import KIND_WEIGHTS, KINDS, TWO_STEP_KINDS, Scenario
from tasks.fund_assistant.single import BUILDERS, SINGLE_WEIGHTS, Labelled

LANGS: tuple[str, str] = ("zh", "en")
PREVIOUS_STEPS = "Previous steps:"
_T = TypeVar("_T", Labelled, Scenario)


def allocate(total: int, weights: dict[str, float]) -> dict[str, int]:
    """Split `total` in proportion to `weights` (largest remainder; ties by key order)."""
    s = sum(weights.values())
    raw = {k: total * w / s for k, w in weights.items()}
    out = {k: int(v) for k, v in raw.items()}
    for k in sorted(raw, key=lambda k: out[k] - raw[k])[: total - sum(out.values())]:
        out[k] += 1
    return out


def solution_json(label: Labelled) -> str:
    return json.dumps(
        {
            "thought": label.thought,
            "action": {"tool": label.tool, "params": label.params},
            "plan": label.plan,
        },
        ensure_ascii=False,
    )


def step_prompt(request: str, previous: list[tuple[str, str]]) -> str:
    """The user message for a step: the request, then `Step i: <tool> → <observation>` lines."""
    if not previous:
        return request
    lines = [f"Step {i}: {tool} → {obs}" for i, (tool, obs) in enumerate(previous, start=1)]
    return f"{request}\n\n{PREVIOUS_STEPS}\n" + "\n".join(lines)


def _row(label: Labelled, category: str, sid: str, step: int, num_steps: int, lang: str, prompt: str) -> dict:
    return {
        "prompt": prompt,
        "request": label.request,
        "solution": solution_json(label),
        "category": category,
        "scenario_id": sid,
        "step": step,
        "num_steps": num_steps,
        "lang": lang,
        "kind": label.kind,
    }


def unique_request(make: Callable[[], _T], seen: set[str], tries: int = 60) -> _T:
    """Redraw until the request is new, so no request appears twice (and so never in both splits).
    After `tries` draws a repeat is accepted rather than failing on huge sizes."""
    for _ in range(tries):
        item = make()
        key = " ".join(item.request.lower().split())
        if key not in seen:
            break
    seen.add(key)
    return item


def single_rows(seed: int, n: int, seen: set[str]) -> list[dict]:
    """`n` single-step rows over the nine single-step categories, at least 2 each, languages alternating."""
    rng = random.Random(f"fund-assistant/{seed}/single")
    counts = allocate(n - 2 * len(SINGLE_WEIGHTS), SINGLE_WEIGHTS)
    rows = []
    for cat, build in BUILDERS.items():
        for i in range(counts[cat] + 2):
            lang = LANGS[i % 2]
            label = unique_request(partial(build, rng, lang, i), seen)
            rows.append(_row(label, cat, f"{cat}-{i:04d}", 1, 1, lang, label.request))
    return rows


def multistep_rows(seed: int, n: int, seen: set[str]) -> list[dict]:
    """Scenarios of 2-3 steps expanded into exactly `n` rows (the last few scenarios are fixed-length)."""
    rng = random.Random(f"fund-assistant/{seed}/multistep")
    kinds, weights = list(KIND_WEIGHTS), list(KIND_WEIGHTS.values())
    rows: list[dict] = []
    idx = 0
    while len(rows) < n:
        left, lang = n - len(rows), LANGS[idx % 2]
        if left <= 5:  # 2+2, 3, 2+3 or 2: never leave a single row over
            kind = "seq3" if left in (3, 5) else rng.choice(TWO_STEP_KINDS)
        else:
            kind = rng.choices(kinds, weights)[0]
        sc = unique_request(partial(KINDS[kind], rng, lang, None), seen)
        sid = f"multistep-{idx:04d}"
        for k, label in enumerate(sc.steps):
            previous = [(s.tool, o) for s, o in zip(sc.steps[:k], sc.observations[:k], strict=True)]
            rows.append(
                _row(label, "multistep", sid, k + 1, len(sc.steps), lang, step_prompt(sc.request, previous))
            )
        idx += 1
    return rows


def split_by_scenario(rows: list[dict], eval_fraction: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Train/eval split by scenario_id, stratified by category (and by kind inside a category).

    Each category with >= 2 scenarios puts at least one in each split. Scenario order inside each split
    is shuffled; the steps of one scenario stay together and in order."""
    rng = random.Random(f"fund-assistant/{seed}/split")
    by_sid: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_sid[r["scenario_id"]].append(r)
    strata: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for sid, rs in by_sid.items():
        strata[rs[0]["category"]][rs[0].get("kind", "")].append(sid)
    eval_ids: set[str] = set()
    for cat in sorted(strata):
        kinds = strata[cat]
        n = sum(len(v) for v in kinds.values())
        n_eval = min(max(round(eval_fraction * n), 1), n - 1) if n >= 2 else 0
        per_kind = allocate(n_eval, {k: len(v) for k, v in sorted(kinds.items())})
        for kind, sids in sorted(kinds.items()):
            sids = sorted(sids)
            rng.shuffle(sids)
            eval_ids.update(sids[: per_kind[kind]])
    train_ids = [s for s in by_sid if s not in eval_ids]
    eval_list = [s for s in by_sid if s in eval_ids]
    rng.shuffle(train_ids)
    rng.shuffle(eval_list)
    return [r for s in train_ids for r in by_sid[s]], [r for s in eval_list for r in by_sid[s]]


def generate(
    seed: int = 0, n_single: int = 454, n_multistep_samples: int = 823, eval_fraction: float = 0.2
) -> tuple[list[dict], list[dict]]:
    """(train, eval) rows for the fund assistant; see LABELS.md for the label policy.

    >>> train, eval_ = generate(seed=0)
    >>> sorted({r["category"] for r in eval_}) == sorted(CATEGORIES)
    True
    """
    if n_single < 2 * len(SINGLE_WEIGHTS):
        raise ValueError(
            f"n_single must be >= {2 * len(SINGLE_WEIGHTS)} (2 scenarios per single-step category)"
        )
    if n_multistep_samples < 4:
        raise ValueError("n_multistep_samples must be >= 4 (two 2-step scenarios)")
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be in (0, 1), got {eval_fraction}")
    seen: set[str] = set()
    rows = single_rows(seed, n_single, seen) + multistep_rows(seed, n_multistep_samples, seen)
    return split_by_scenario(rows, eval_fraction, seed)


# The field report's wrong label for every combo request (docs/fund_assistant.md#the-labelling-bug).
SEED_BUG_TOOL = "check_balance"


def apply_seed_label_bug(rows: list[dict]) -> list[dict]:
    """Copies of `rows` in which every combo row's action is check_balance({}) and `label_bug` is True:
    the field report's wrong warm-up labels (docs/fund_assistant.md#the-labelling-bug), for reproducing that
    failure. Other rows are
    unchanged copies. Thought and plan keep the label's text (the two requested steps): the error is
    in the decision. `compact.compact_rows(rows, seed_label_bug=True)` is the same for compact labels."""
    out = []
    for r in rows:
        r = copy.deepcopy(r)
        if r.get("category") == "combo":
            sol = json.loads(r["solution"])
            sol["action"] = {"tool": SEED_BUG_TOOL, "params": {}}
            r["solution"] = json.dumps(sol, ensure_ascii=False)
            r["label_bug"] = True
        out.append(r)
    return out


assert set(BUILDERS) | {"multistep"} == set(CATEGORIES)  # every category has a builder

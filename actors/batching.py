"""From scored rollouts to a TrainBatch and its metrics: pure functions, no Ray.

Owns the per-step bookkeeping the coordinator reports: group rewards, zero-std statistics, tool
accuracy, per-category reward, completion lengths, truncation. Advantages come from
`learner.advantages`; this module only arranges the data around them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from statistics import fmean
from typing import Any

import torch

from actors.types import Completion, TrainBatch
from learner.advantages import group_advantages, zero_std_stats
from rewards.parsing import get_tool, parse_react


def label_tool(solution: str) -> str | None:
    return get_tool(parse_react(solution))


def tool_correct(completion_text: str, solution: str) -> bool:
    want = label_tool(solution)
    return want is not None and get_tool(parse_react(completion_text)) == want


def reward_matrix(rewards: list[float], group_size: int) -> torch.Tensor:
    """Flat rewards (G·n,) → (G, n)."""
    return torch.tensor(rewards, dtype=torch.float64).view(-1, group_size)


def build_train_batch(
    prompt_ids: list[list[int]],
    groups: list[list[Completion]],
    advantages: torch.Tensor,
    version: int,
    token_weights: list[list[float]] | None = None,
) -> TrainBatch:
    """Flatten groups (G, n) into sequences; group i's prompt is repeated for each completion."""
    b_prompt, b_comp, b_lp, b_adv = [], [], [], []
    for g, (pids, group) in enumerate(zip(prompt_ids, groups)):
        for j, c in enumerate(group):
            b_prompt.append(pids)
            b_comp.append(c.token_ids)
            b_lp.append(c.logprobs)
            b_adv.append(float(advantages[g, j]))
    return TrainBatch(b_prompt, b_comp, b_lp, b_adv, token_weights, version)


def step_advantages(rewards: torch.Tensor, ngrpo_active: bool, algo) -> torch.Tensor:
    """Advantages for a (G, n) reward matrix under the algorithm config."""
    return group_advantages(
        rewards,
        ngrpo=ngrpo_active,
        max_reward=algo.ngrpo.max_reward,
        num_virtual=algo.ngrpo.num_virtual,
        std=algo.advantage.std,
        eps=algo.advantage.eps,
    )


def rollout_metrics(
    rows: list[dict], groups: list[list[Completion]], rewards: torch.Tensor, version: int, max_reward: float = 1.0
) -> dict[str, float]:
    """Reward, zero-std, tool accuracy (overall and per category), lengths, version lag."""
    m: dict[str, float] = {}
    flat = rewards.flatten()
    m["reward_mean"] = flat.mean().item()
    m["reward_std"] = flat.std(unbiased=False).item()
    m.update(zero_std_stats(rewards, max_reward=max_reward))
    correct, lengths, truncated, lags = [], [], [], []
    by_cat_reward: dict[str, list[float]] = defaultdict(list)
    for g, (row, group) in enumerate(zip(rows, groups)):
        for j, c in enumerate(group):
            ok = float(tool_correct(c.text, row["solution"]))
            correct.append(ok)
            by_cat_reward[row["category"]].append(rewards[g, j].item())
            lengths.append(len(c.token_ids))
            truncated.append(float(c.finish_reason == "length"))
            lags.append(version - c.policy_version)
    m["tool_accuracy"] = fmean(correct) if correct else math.nan
    m["completion_length"] = fmean(lengths) if lengths else 0.0
    m["frac_truncated"] = fmean(truncated) if truncated else 0.0
    m["policy_version_lag_max"] = float(max(lags)) if lags else 0.0
    for cat, vals in sorted(by_cat_reward.items()):
        m[f"reward/{cat}"] = fmean(vals)
    for cat, acc in sorted(tool_accuracy_by(rows, groups, "category").items()):
        m[f"tool_accuracy/{cat}"] = acc
    return m


def tool_accuracy_by(rows: list[dict], groups: list[list[Any]], column: str) -> dict[str, float]:
    """Tool accuracy of this step's completions per value of a row column (`category`, `kind`)."""
    hits: dict[str, list[float]] = defaultdict(list)
    for row, group in zip(rows, groups):
        hits[row[column]] += [float(tool_correct(c.text, row["solution"])) for c in group]
    return {k: fmean(v) for k, v in hits.items()}


def merge_rank_metrics(per_rank: list[dict[str, float]]) -> dict[str, float]:
    """One row from every learner rank's metrics: counts and global-share losses add up, maxima stay
    maxima, the rest (per-token means, the global grad norm) are averaged."""
    out: dict[str, float] = {}
    for key in per_rank[0]:
        vals = [m[key] for m in per_rank if key in m]
        if key in ("loss", "learned_sequences"):
            out[key] = float(sum(vals))
        elif key.endswith("_max"):
            out[key] = float(max(vals))
        else:
            out[key] = float(sum(vals) / len(vals))
    return out


def breakdown_means(breakdowns: list[dict[str, float]]) -> dict[str, float]:
    """Mean of each reward component (e.g. GT's tool / params / reasoning), as `reward_part/<name>`:
    tool choice and reasoning quality are tracked separately (SPEC §4, DART)."""
    sums: dict[str, list[float]] = defaultdict(list)
    for b in breakdowns:
        for k, v in b.items():
            sums[k].append(float(v))
    return {f"reward_part/{k}": fmean(v) for k, v in sorted(sums.items()) if v}


def eval_table(rows: list[dict], texts: list[str], breakdowns: list[dict]) -> dict:
    """The seeds' eval table: average score, tool accuracy, tool accuracy per category (all in [0, 1])."""
    by_cat: dict[str, list[float]] = defaultdict(list)
    scores, correct, reasoning = [], [], []
    for row, text, b in zip(rows, texts, breakdowns):
        ok = float(tool_correct(text, row["solution"]))
        correct.append(ok)
        scores.append(float(b.get("total", 0.0)))
        reasoning.append(float(b.get("reasoning", 0.0)) / 0.3)  # GT's reasoning part, as a fraction of its 0.3
        by_cat[row["category"]].append(ok)
    return {
        "average_score": fmean(scores) if scores else 0.0,
        "tool_accuracy": fmean(correct) if correct else 0.0,
        "reasoning_score": fmean(reasoning) if reasoning else 0.0,
        "per_category": {k: fmean(v) for k, v in sorted(by_cat.items())},
        "n": len(rows),
    }


def format_eval_tables(tables: dict[str, dict]) -> str:
    """Side-by-side Markdown table of eval results (e.g. before / after)."""
    names = list(tables)
    cats = sorted({c for t in tables.values() for c in t.get("per_category", {})})
    head = "| metric | " + " | ".join(names) + " |\n|---|" + "---|" * len(names)
    lines = [head]

    def row(label: str, get) -> None:
        cells = []
        for n in names:
            v = get(tables[n])
            cells.append("—" if v is None else f"{100 * v:.1f}%")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("average score", lambda t: t.get("average_score"))
    row("tool accuracy", lambda t: t.get("tool_accuracy"))
    row("reasoning score", lambda t: t.get("reasoning_score"))
    for c in cats:
        row(f"{c}", lambda t, c=c: t.get("per_category", {}).get(c))
    return "\n".join(lines)

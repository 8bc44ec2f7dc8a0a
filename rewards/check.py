"""Reward functions checked on a task's first rows before anything starts.

Two checks per reward, each a one-line problem naming the reward's config key: the row columns its
signature requires (parameters without a default, besides TRL's call keywords, and those it names in a
`required_columns` attribute, for a reward that reads them from `**kwargs`) are in the rows; and one
call on two rows with placeholder completions of the right shape (a string, or an assistant message for
a conversational prompt) runs and answers with one float or None per completion. A reward that must not
be called before the run (one that calls a paid or rate-limited service) opts out of the call with
`reward.functions[i].preflight: false`, or by carrying the attribute `preflight = False`.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Sequence
from typing import Any

from rewards.contract import RewardContractError, call_reward, needed_columns, reward_kwargs
from rewards.registry import get_reward

PLACEHOLDER = "placeholder"


def reward_problems(functions: Sequence[Any], judge: str | None, rows: list[dict],
                    columns: dict[str, list], where: str, timeout_s: float) -> list[str]:
    """Problems of `functions` (`configs.reward.RewardFn`s) and the judge on `rows` (the first two are
    used) whose reward columns are `columns`; `where` names the rows (a file) in messages."""
    named = [(f"reward.functions[{i}] ({f.name})", f.name, f.preflight) for i, f in enumerate(functions)]
    if judge and judge not in {f.name for f in functions}:
        named.append((f"the task's judge ({judge})", judge, True))
    rows = rows[:2]
    out = []
    for key, name, call in named:
        try:
            fn = get_reward(name)
        except Exception:  # noqa: BLE001 - a name that does not resolve is reported by its own check
            continue
        target = getattr(fn, "breakdown", None) if callable(getattr(fn, "breakdown", None)) else fn
        needed = [*needed_columns(target), *getattr(fn, "required_columns", ())]
        missing = [c for c in dict.fromkeys(needed) if c not in columns]
        if missing:
            have = ", ".join(sorted(columns)) or "none"
            out.append(f"{key}: needs the column{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))}, "
                       f"which {where} row 1 does not have (the columns a reward gets: {have}); add it, or "
                       "map one to it with task.options.columns")
            continue
        if call and getattr(fn, "preflight", True) is not False and rows:
            problem = _dry_call(fn, target, rows, columns, timeout_s)
            if problem:
                out.append(f"{key}: called on {len(rows)} rows with placeholder completions, it {problem}; "
                           f"fix it, or set {key.split(' ')[0]}.preflight=false if it must not be called "
                           "before the run")
    return out


def _dry_call(fn: Any, target: Any, rows: list[dict], columns: dict[str, list],
              timeout_s: float) -> str | None:
    n = len(rows)
    kwargs = reward_kwargs([r["prompt"] for r in rows], [PLACEHOLDER] * n, [[] for _ in range(n)],
                           {k: v[:n] for k, v in columns.items()})
    pool = cf.ThreadPoolExecutor(max_workers=1)  # a thread as the reward actors use: never the main one
    try:
        if target is fn:
            pool.submit(call_reward, fn, kwargs, n).result(timeout=timeout_s)
        else:
            parts = pool.submit(target, **kwargs).result(timeout=timeout_s)
            if len(parts) != n or not all(isinstance(p, dict) and "total" in p for p in parts):
                return f"returned {len(parts)} breakdowns with a 'total' for {n} completions"
    except cf.TimeoutError:
        return f"did not answer within reward.timeout_s={timeout_s:g}s"
    except RewardContractError as e:
        return str(e)
    except Exception as e:  # noqa: BLE001 - user code: its own message is the answer
        return f"raised {type(e).__name__}: {e}"
    finally:
        pool.shutdown(wait=False)
    return None

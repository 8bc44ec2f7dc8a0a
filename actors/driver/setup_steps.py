"""Steps of a run's set-up: the SFT warm-up (a task on the cluster), its examples for agent episodes,
the difficulty filter and the probe every push is checked with. Functions of the config, the task and
the tokenizer; the coordinator (through its workload, `actors.driver.workloads`) calls them."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from cluster.backend import Backend
from cluster.runtime import role_env
from configs.root import Config
from models.warmup_cache import keep, reuse, warmup_key
from tasks.base import Task


def run_warmup(cfg: Config, backend: Backend, examples: list[tuple], groups: list[str] | None, drill: Any,
               dirs: tuple[str, str, str], swaps: list[list[int]] | None = None) -> dict:
    """Fine-tune the base model on the warm-up `examples` (the workload's: prompts and targets, or
    scripted trajectories), where and as the learner will run (its CPUs and threads); `groups` balance
    the batches by row kind when `train.warmup.balanced`; `dirs` = (base model, tokenizer, output);
    `swaps`: the entity groups the warm-up redraws (`train.warmup.swap_entities`). With
    `train.warmup.cache`, a warm-up of the same inputs trained before is reused (`models.warmup_cache`)
    and a new one is kept. Returns the warm-up's stats."""
    from learner.warmup import sft_warmup

    t0 = time.perf_counter()
    w = cfg.train.warmup
    env = {"env_vars": role_env(cfg.cluster.env_vars)}
    threads = cfg.threads("learner", alone=True)
    if threads:
        env["env_vars"]["OMP_NUM_THREADS"] = str(threads)
    settings = dict(steps=w.steps, lr=w.lr, lr_final_ratio=w.lr_final_ratio, batch_size=w.batch_size,
                    seed=cfg.train.seed, groups=groups if w.balanced else None, drill=drill, swaps=swaps)
    key = None
    if w.cache:
        key = warmup_key({**settings, "examples": examples, "threads": threads,
                          "env_vars": dict(cfg.cluster.env_vars)}, dirs[:2])
        if (stats := reuse(key, dirs[2])) is not None:
            return {**stats, "warmup_seconds": time.perf_counter() - t0, "warmup_reused": key,
                    "warmup_trained_seconds": stats["warmup_seconds"]}
    ref = backend.task(sft_warmup, (*dirs[:2], examples, dirs[2]), settings,
                       {"num_cpus": cfg.learner.num_cpus, "runtime_env": env})
    stats = backend.get(ref)
    if key is not None:
        keep(key, dirs[2], stats)
    return stats


def trajectory_examples(cfg: Config, task: Task, tokenizer: Any, rows: list[dict]) -> list[tuple]:
    """(prompt ids, completion ids, loss mask) of each row's scripted trajectory (`Task.episode_script`)."""
    from actors.worker.agent_loop import scripted_samples

    samples = scripted_samples(rows, lambda: task.environment(cfg.env.max_turns), tokenizer,
                               [task.episode_script(r) for r in rows], cfg.env.max_context)
    return [(s.prompt_ids, s.token_ids, s.loss_mask) for s in samples]


def answer_examples(cfg: Config, task: Task, tokenizer: Any, n: int, turns: int = 1,
                    trajectories: Callable[[list[dict]], list[tuple]] | None = None) -> list[tuple]:
    """The answer drill: the scripted trajectories of the task's drill rows (`Task.episode_drill_rows`),
    each with only its last `turns` policy turns as the target (1: the final answer; 2: the last call
    too, the tool's reply between them not learned) and everything before them as the prompt: every one
    a lookup of what the turns before it asked or did, in the context an episode's late turns have.
    `trajectories`: the examples of rows (default: `trajectory_examples`; a harness run's own format)."""
    out = []
    play = trajectories or (lambda rows: trajectory_examples(cfg, task, tokenizer, rows))
    for prompt, ids, mask in play(task.episode_drill_rows(n)):
        start, end = last_turns(mask, turns)
        out.append((prompt + ids[:start], ids[start:end], list(mask[start:end])))
    return out


def last_turns(mask: list, turns: int = 1) -> tuple[int, int]:
    """[start, end) of the last `turns` runs of 1s in `mask` (a trajectory's last assistant turns, with
    what lies between them)."""
    end = max((i + 1 for i, m in enumerate(mask) if m), default=0)
    start = end
    for _ in range(turns):
        while start > 0 and not mask[start - 1]:
            start -= 1
        while start > 0 and mask[start - 1]:
            start -= 1
    return start, end


def drill_examples(task: Task, tokenizer: Any, n: int, filler: str = "", gap_words: int = 0,
                   seed: int = 0) -> list[tuple]:
    """(prompt ids, target ids, mask) of the task's entity drill (`Task.episode_drill`): the prompt
    rendered as an episode's first prompt is, the whole target (ending with end-of-turn) learned. With
    `gap_words`, each request is followed by a random run of up to that many words of `filler` (drawn
    per row from a stream of `seed`), so that the answer starts at varying distances from the request."""
    from actors.worker.agent_loop import first_prompt_ids

    words, rng = filler.split(), random.Random(f"{seed}/drill-gap")
    out = []
    for messages, target in task.episode_drill(n):
        if gap_words and words:
            k = rng.randint(0, min(gap_words, len(words)))
            start = rng.randint(0, len(words) - k)
            asked = f"{messages[-1]['content']} {' '.join(words[start : start + k])}".rstrip()
            messages = [*messages[:-1], {**messages[-1], "content": asked}]
        ids = tokenizer.encode(target, add_special_tokens=False) + [tokenizer.eos_token_id]
        out.append((first_prompt_ids(tokenizer, messages), ids, [1] * len(ids)))
    return out


def difficulty_keep(cfg: Config, rows: list[dict], judged: Callable[[list[dict], int], list[list[float]]]
                    ) -> list[int]:
    """Indices of the training `rows` the difficulty filter keeps: every row sampled with the current
    policy (`judged(rows, n)`: the judge's verdict on each of n samples per row), the easy/medium/hard
    mix kept."""
    from algo.difficulty import difficulty_filter

    d, chunk = cfg.algorithm.difficulty, 64  # chunks: each generation within the call deadline
    rates = []
    for i in range(0, len(rows), chunk):
        rates += [sum(row) / len(row) for row in judged(rows[i : i + chunk], d.num_samples)]
    keep = difficulty_filter(rates, easy_min=d.easy_min, hard_max=d.hard_max, mix=d.mix, seed=cfg.train.seed)
    if not keep:
        raise RuntimeError("difficulty filter kept no prompt: every prompt is all-right or all-wrong "
                           "under the current policy; disable algorithm.difficulty or warm up differently")
    return keep


# The probe's length: every push runs it through the learner and each worker, so its length is paid per
# push (on a 135M model a 600-token prompt made it most of a 2 s push; 32 tokens still cost the learner
# 0.2 s of a 1.7 s push here). Any fixed tokens check the served weights alike: each runs through every layer.
PROBE_TOKENS = 16


def probe_sequence(task: Task, tokenizer: Any, rows: list[dict]) -> tuple[list[int], list[int]]:
    """A fixed prompt's last PROBE_TOKENS tokens and its label (the first of `rows`, at most PROBE_TOKENS
    label tokens): the sequence whose logprobs the learner sends with every push and each worker checks
    after loading it."""
    row = rows[0]
    prompt = tokenizer(task.render_prompt(tokenizer, row), add_special_tokens=False)["input_ids"]
    # Any fixed tokens serve; a label reads like an answer: the row's own, else its warm-up target. A task
    # with neither: the prompt's own tokens.
    label = row.get("solution")
    if not isinstance(label, str) or not label:
        targets = task.warmup_rows_or_none([row])
        label = targets[0]["solution"] if targets else None
    if not isinstance(label, str) or not label:
        return prompt[-2 * PROBE_TOKENS:-PROBE_TOKENS] or prompt, prompt[-PROBE_TOKENS:]
    return prompt[-PROBE_TOKENS:], tokenizer(label, add_special_tokens=False)["input_ids"][:PROBE_TOKENS]

"""Two steps of a run's set-up: the SFT warm-up (a task on the cluster) and the probe every push is
checked with. Functions of the config, the task and the tokenizer; the coordinator calls them."""

from __future__ import annotations

from typing import Any

from cluster.backend import Backend
from cluster.runtime import role_env
from configs.root import Config
from tasks.base import Task


def run_warmup(cfg: Config, task: Task, backend: Backend, tokenizer: Any, rows: list[dict],
               dirs: tuple[str, str, str]) -> dict:
    """Fine-tune the base model on the task's warm-up rows, where and as the learner will run (its CPUs
    and threads); `dirs` = (base model, tokenizer, output). Returns the warm-up's stats."""
    from learner.warmup import sft_warmup

    w, targets = cfg.train.warmup, task.warmup_rows(rows)
    examples = [(task.render_prompt(tokenizer, r), r["solution"]) for r in targets]
    groups = [r[task.group_column] for r in targets] if w.balanced else None
    env = {"env_vars": role_env(cfg.cluster.env_vars)}
    if cfg.learner.num_threads:
        env["env_vars"]["OMP_NUM_THREADS"] = str(cfg.learner.num_threads)
    ref = backend.task(sft_warmup, (*dirs[:2], examples, dirs[2]), dict(
        steps=w.steps, lr=w.lr, batch_size=w.batch_size, seed=cfg.train.seed, groups=groups,
    ), {"num_cpus": cfg.learner.num_cpus, "runtime_env": env})
    return backend.get(ref)


def probe_sequence(task: Task, tokenizer: Any, rows: list[dict]) -> tuple[list[int], list[int]]:
    """A fixed prompt and its label (the first of `rows`, at most 64 label tokens): the sequence whose
    logprobs the learner sends with every push and each worker checks after loading it."""
    row = rows[0]
    prompt = tokenizer(task.render_prompt(tokenizer, row), add_special_tokens=False)["input_ids"]
    return prompt, tokenizer(row["solution"], add_special_tokens=False)["input_ids"][:64]

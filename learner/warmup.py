"""SFT warm-up: a short full fine-tune that teaches a random tiny model the task's output format.

Owns nothing but this one stage; the task chooses the targets (`Task.warmup_rows`) and the caller
renders the prompts, so this module knows no task. The 7B preset skips it. It runs before any LoRA exists, on
the base
weights, and writes a new base model directory that the learner and the rollout workers then start from.
Loss is cross-entropy on the completion tokens only (the prompt is context, not a target).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch

from algo.schedule import lr_factor
from learner.entity_swap import EntitySwap, TokenExample
from learner.micro_batches import pad_rows
from learner.sequences import completion_scores, output_layer, pack

log = logging.getLogger(__name__)


def encode_examples(tokenizer, examples: list[tuple[str, str]] | list[TokenExample]) -> list[TokenExample]:
    """(prompt ids, target ids, mask) per (rendered prompt, target text), the target ending with
    end-of-turn and learned whole; token examples pass through as they are."""
    out = []
    for ex in examples:
        if len(ex) == 3:
            out.append(ex)
            continue
        p = tokenizer(ex[0], add_special_tokens=False)["input_ids"]
        c = tokenizer(ex[1], add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        out.append((p, c, [1] * len(c)))
    return out


def epoch_sampler(n: int, rng: random.Random) -> Iterator[int]:
    """Endless shuffled epochs over range(n)."""
    while True:
        order = list(range(n))
        rng.shuffle(order)
        yield from order


def category_sampler(groups: list[str], rng: random.Random) -> Iterator[int]:
    """Endless draws where each group value (category) is equally likely, then an example of it
    (shuffled epochs within)."""
    by_cat: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_cat.setdefault(g, []).append(i)
    streams = {c: _epochs(idx, rng) for c, idx in sorted(by_cat.items())}
    cats = list(streams)
    while True:
        order = cats[:]
        rng.shuffle(order)
        for c in order:
            yield next(streams[c])


def _epochs(items: list[int], rng: random.Random) -> Iterator[int]:
    while True:
        order = items[:]
        rng.shuffle(order)
        yield from order


@dataclass(frozen=True)
class Drill:
    """The entity drill (`configs.train.DrillConfig`): `steps` steps of `batch_size` of its examples
    first, then `mix` of them added to every warm-up step; its answer rows join both."""

    examples: list[TokenExample]
    steps: int = 0
    batch_size: int = 32
    mix: int = 0
    answers: Sequence[TokenExample] = ()
    """The answer drill: `answers_per_step` of these join every drill and every warm-up step."""
    answers_per_step: int = 0


def sft_warmup(
    base_model_dir: str,
    tokenizer_dir: str,
    examples: list[tuple[str, str]] | list[TokenExample],
    out_dir: str,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    seed: int = 0,
    lr_final_ratio: float = 1.0,
    groups: list[str] | None = None,
    drill: Drill | None = None,
    swaps: list[list[int]] | None = None,
    watch: tuple[int, Callable[[int, torch.nn.Module], None]] | None = None,
) -> dict:
    """Fine-tune all weights for `steps` AdamW steps on (rendered prompt, target) `examples`, or on
    token examples with a loss mask (an agent episode's turns; its observations are not targets); save to
    `out_dir`. With `groups` (one value per example), draws are balanced over the values. With a `drill`,
    its steps come first (same optimizer) and its `mix` joins every warm-up batch; the warm-up's own steps
    decay from `lr` to `lr` x `lr_final_ratio` along a cosine. With `swaps` (groups of interchangeable
    entity token ids, `learner.entity_swap`), every drawn example's entities are redrawn from their
    groups (from a random stream of their own: the draws themselves are the same). With `watch` =
    (every, fn), `fn(step, model)` is called after every `every`-th warm-up step (an observer: it must
    leave the model as it found it; `bench.warmup_curve`). Returns stats."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    redraw = _redraw(swaps, seed)
    train = partial(_steps, model, opt, tok.pad_token_id, redraw)
    stats = {}
    if drill and drill.examples and (drill.steps or drill.mix):
        drawn = epoch_sampler(len(drill.examples), rng)
        answers = []  # a pack of their own: the drill's short rows padded to a trajectory's length cost more
        if drill.answers and drill.answers_per_step:
            answers = [[(drill.answers, epoch_sampler(len(drill.answers), rng), drill.answers_per_step)]]
        extra = [(drill.examples, drawn, drill.mix)]
        losses = train(drill.steps, [[(drill.examples, drawn, drill.batch_size)], *answers], "drill")
        stats = {"drill_steps": drill.steps, "drill_rows": len(drill.examples), **_ends("drill", losses)}
        if answers:
            stats["drill_answer_rows"] = len(drill.answers)
    else:
        extra, answers = [], []
    data = encode_examples(tok, examples)
    draw = category_sampler(groups, rng) if groups is not None else epoch_sampler(len(examples), rng)
    losses = train(steps, [[(data, draw, batch_size), *extra], *answers], "warm-up",
                   lambda i: lr * lr_factor(i, steps, "cosine", 0, lr_final_ratio), watch)
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    return {
        "warmup_steps": steps,
        "warmup_lr_last": opt.param_groups[0]["lr"],
        **_ends("warmup", losses),
        "warmup_seconds": time.perf_counter() - t0,
        "warmup_rows": len(examples),
        **stats,
    }


def _redraw(swaps: list[list[int]] | None, seed: int) -> Callable[[TokenExample], TokenExample]:
    """What each drawn example goes through: its entities swapped (`swaps`), or nothing."""
    if not swaps:
        return lambda ex: ex
    swap, rng = EntitySwap(swaps), random.Random(f"{seed}/entity-swap")
    return lambda ex: swap(ex, rng)


def _ends(name: str, losses: list[float]) -> dict:
    """The first and last loss of a stage (None when it took no step)."""
    return {f"{name}_loss_first": losses[0] if losses else None,
            f"{name}_loss_last": losses[-1] if losses else None}


def _steps(model, opt, pad_id: int, redraw: Callable[[TokenExample], TokenExample], steps: int,
           packs: list[list[tuple[list[TokenExample], Iterator[int], int]]], label: str,
           lr_at: Callable[[int], float] | None = None,
           watch: tuple[int, Callable[[int, torch.nn.Module], None]] | None = None) -> list[float]:
    """`steps` AdamW steps, each on a batch of `count` examples drawn from every (examples, draws, count)
    source, each through `redraw`; the sources of one pack share a forward pass (padded to its longest
    row), each pack its own. Cross-entropy on the examples' masked-in completion tokens, over all of
    them; `lr_at(step)` sets the learning rate of each step (default: the optimizer's, unchanged);
    `watch` = (every, fn): `fn(steps done, model)` after every `every`-th step. Returns the losses."""
    losses = []
    for step in range(steps):
        if lr_at is not None:
            for g in opt.param_groups:
                g["lr"] = lr_at(step)
        batches = [[redraw(data[next(draw)]) for data, draw, count in pack_ for _ in range(count)]
                   for pack_ in packs]
        total, n_tokens = 0.0, 0.0
        for batch in batches:
            packed = pack([b[0] for b in batch], [b[1] for b in batch], pad_id)
            logp, _ = completion_scores(model, packed, output_layer(model))  # (B, T)
            mask = packed.completion_mask * pad_rows([b[2] for b in batch], packed.completion_mask.shape[1])
            total, n_tokens = total + (logp * mask).sum(), n_tokens + mask.sum()
        loss = -total / n_tokens
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0 or step == steps - 1:
            log.info("%s step %d/%d loss %.4f", label, step + 1, steps, loss.item())
        if watch is not None and (step + 1) % watch[0] == 0:
            watch[1](step + 1, model)
    return losses

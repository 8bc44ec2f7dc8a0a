"""SFT warm-up: a short full fine-tune that teaches a random tiny model the task's output format.

Owns nothing but this one stage; the task chooses the targets (`Task.warmup_rows`) and the caller
renders the prompts, so this module knows no task. The 7B preset skips it. It runs before any LoRA exists, on the base
weights, and writes a new base model directory that the learner and the rollout workers then start from.
Loss is cross-entropy on the completion tokens only (the prompt is context, not a target).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from pathlib import Path

import torch

from learner.micro_batches import pad_rows
from learner.sequences import completion_scores, output_layer, pack

log = logging.getLogger(__name__)


TokenExample = tuple[list[int], list[int], list[int]]
"""(prompt ids, completion ids, loss mask): a multi-turn target learned on its mask's 1s only."""


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
    groups: list[str] | None = None,
) -> dict:
    """Fine-tune all weights for `steps` AdamW steps on (rendered prompt, target) `examples`, or on
    token examples with a loss mask (an agent episode's turns; its observations are not targets); save to
    `out_dir`. With `groups` (one value per example), draws are balanced over the values. Returns stats."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.perf_counter()
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    model = AutoModelForCausalLM.from_pretrained(base_model_dir, dtype=torch.float32)
    model.train()
    data = encode_examples(tok, examples)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    draw = category_sampler(groups, rng) if groups is not None else epoch_sampler(len(examples), rng)
    losses = []
    for step in range(steps):
        idx = [next(draw) for _ in range(batch_size)]
        packed = pack([data[i][0] for i in idx], [data[i][1] for i in idx], tok.pad_token_id)
        logp, _ = completion_scores(model, packed, output_layer(model))  # (B, T)
        mask = packed.completion_mask * pad_rows([data[i][2] for i in idx], packed.completion_mask.shape[1])
        loss = -(logp * mask).sum() / mask.sum()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 20 == 0 or step == steps - 1:
            log.info("warm-up step %d/%d loss %.4f", step + 1, steps, loss.item())
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    return {
        "warmup_steps": steps,
        "warmup_loss_first": losses[0] if losses else None,
        "warmup_loss_last": losses[-1] if losses else None,
        "warmup_seconds": time.perf_counter() - t0,
        "warmup_rows": len(examples),
    }

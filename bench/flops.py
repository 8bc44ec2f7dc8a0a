"""The learner's useful work in FLOPs, counted from the model's shapes, and the machine's matmul peak.

A LoRA update on a frozen base does, per token: the forward of every linear layer (2 FLOPs a weight),
the gradient with respect to each layer's input in the backward (as much again; the frozen weights get
no gradient), attention's scores and mixing (forward, and twice that backward), the LM head only on
the completion positions (forward and input gradient), and the small LoRA matrices (forward, input and
weight gradients). Padding, a repeated prompt and gradient checkpointing's second forward are not
useful work: they are left out, so achieved FLOP/s over the peak says how much of the machine went
into the update itself.

A segment is `(start, n)`: `n` tokens at positions `start .. start+n-1` of one sequence, run in one
forward. A whole sequence is `(0, P+C)`; with the prompt shared (`learner.share_prompt`) the prompt is
`(0, P)` once and each completion `(P, C)` on its cache.
"""

from __future__ import annotations

import time

from models.memory import ModelShape


def linear_flops_per_token(shape: ModelShape) -> int:
    """Forward FLOPs of one token through every block's linear layers (LM head not included)."""
    return 2 * shape.layers * sum(i * o for i, o in shape.linear_dims().values())


def lora_flops_per_token(shape: ModelShape, r: int, modules: list[str]) -> int:
    """Forward FLOPs of one token through the LoRA matrices (A: in x r, B: r x out) of `modules`."""
    dims = shape.linear_dims()
    return 2 * shape.layers * sum(r * (dims[m][0] + dims[m][1]) for m in modules if m in dims)


def attention_flops(shape: ModelShape, start: int, n: int) -> int:
    """Forward FLOPs of attention (scores and the weighted sum) for `n` tokens from position `start`:
    the token at position t attends to t+1 positions, 4 FLOPs per query dimension and position."""
    q_dim = shape.heads * shape.head_dim
    attended = n * (start + 1) + n * (n - 1) // 2  # sum of (t + 1) for t in start .. start+n-1
    return 4 * shape.layers * q_dim * attended


def update_flops(shape: ModelShape, segments: list[tuple[int, int]], completion_tokens: int, r: int,
                 modules: list[str]) -> int:
    """Useful FLOPs of one forward+backward over `segments`, `completion_tokens` of them scored by the LM
    head."""
    tokens = sum(n for _, n in segments)
    linear = linear_flops_per_token(shape) * tokens
    attention = sum(attention_flops(shape, s, n) for s, n in segments)
    head = 2 * shape.hidden * shape.vocab * completion_tokens
    lora = lora_flops_per_token(shape, r, modules) * tokens
    return 2 * linear + 3 * attention + 2 * head + 3 * lora


def segments_of(prompts: list[list[int]], completions: list[list[int]],
                shared: bool) -> tuple[list[tuple[int, int]], int, int]:
    """(segments, real tokens, padded tokens) of one micro-batch as the learner runs it: padded to the
    longest sequence, or with one prompt run once and the completions padded to the longest."""
    if shared:
        p = len(prompts[0])
        segs = [(0, p)] + [(p, len(c)) for c in completions if c]
        real = p + sum(len(c) for c in completions)
        padded = p + len(completions) * max(len(c) for c in completions)
        return segs, real, padded
    lens = [len(p) + len(c) for p, c in zip(prompts, completions)]
    return [(0, n) for n in lens], sum(lens), len(lens) * max(lens)


def matmul_flops_per_s(shape: ModelShape, rows: int = 1024, seconds: float = 1.0) -> float:
    """The best fp32 FLOP/s of a plain matmul of the model's linear shapes (`rows` tokens x in @ in x
    out) on this process's threads: the machine's peak on the learner's own sizes."""
    import torch

    best = 0.0
    with torch.no_grad():
        for i, o in set(shape.linear_dims().values()):
            x, w = torch.randn(rows, i), torch.randn(i, o)
            x @ w  # first call allocates
            reps, t = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - t) < seconds / 4 or reps < 3:
                x @ w
                reps += 1
            best = max(best, 2 * rows * i * o * reps / elapsed)
    return best


def batch_work(batch, micro: list[list[int]], shares_prompt, shape: ModelShape, r: int,
               modules: list[str]) -> dict[str, int]:
    """FLOPs, real and padded tokens of one learner step over `micro` (its micro-batches of rows of
    `batch`); `shares_prompt(prompts, completions)` says whether the learner runs a micro-batch's prompt
    once (`Learner.shares_prompt`)."""
    flops = real = padded = 0
    for rows in micro:
        if not rows:
            continue
        prompts = [batch.prompt_ids[i] for i in rows]
        completions = [batch.completion_ids[i] for i in rows]
        segs, r_tok, p_tok = segments_of(prompts, completions, shares_prompt(prompts, completions))
        flops += update_flops(shape, segs, sum(len(c) for c in completions), r, modules)
        real, padded = real + r_tok, padded + p_tok
    return {"flops": flops, "real_tokens": real, "padded_tokens": padded}

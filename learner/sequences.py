"""Padding prompt+completion sequences and reading per-token logprobs of the completion.

Pure tensor helpers shared by the learner and the SFT warm-up. Logprobs are of the raw distribution
(temperature 1): that is what vLLM returns, so the learner/rollout logprob gap is a direct check that
the rollout worker serves the learner's weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Packed:
    input_ids: torch.Tensor  # (B, L) prompt+completion, right-padded
    attention_mask: torch.Tensor  # (B, L)
    completion_mask: torch.Tensor  # (B, T) 1 on real completion tokens
    completion_ids: torch.Tensor  # (B, T) completion tokens, right-padded
    starts: torch.Tensor  # (B,) index in input_ids of each completion's first token


def pack(prompt_ids: list[list[int]], completion_ids: list[list[int]], pad_id: int) -> Packed:
    """Right-pad each prompt+completion into one (B, L) batch and index the completions."""
    b = len(prompt_ids)
    lens = [len(p) + len(c) for p, c in zip(prompt_ids, completion_ids)]
    length = max(lens)
    t_max = max(1, max(len(c) for c in completion_ids))
    ids = torch.full((b, length), pad_id, dtype=torch.long)
    attn = torch.zeros((b, length), dtype=torch.long)
    comp = torch.full((b, t_max), pad_id, dtype=torch.long)
    cmask = torch.zeros((b, t_max), dtype=torch.float32)
    for i, (p, c) in enumerate(zip(prompt_ids, completion_ids)):
        seq = list(p) + list(c)
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attn[i, : len(seq)] = 1
        if c:
            comp[i, : len(c)] = torch.tensor(c, dtype=torch.long)
            cmask[i, : len(c)] = 1.0
    starts = torch.tensor([len(p) for p in prompt_ids], dtype=torch.long)
    return Packed(ids, attn, cmask, comp, starts)


def completion_logits(model: torch.nn.Module, packed: Packed) -> torch.Tensor:
    """Logits that predict each completion token: (B, T, V)."""
    # Only positions from the earliest completion on predict completion tokens: the LM head skips the
    # prompt prefix (bench.learner_forward: 0.91x the forward+backward time on the tiny model).
    first = max(0, int(packed.starts.min()) - 1)
    keep = packed.input_ids.shape[1] - first
    out = model(input_ids=packed.input_ids, attention_mask=packed.attention_mask, use_cache=False,
                logits_to_keep=keep)
    logits = out.logits  # (B, keep, V); position first+j predicts token first+j+1
    t = packed.completion_ids.shape[1]
    # Completion token k of row i sits at starts[i]+k, predicted by position starts[i]+k-1.
    pos = packed.starts[:, None] - 1 - first + torch.arange(t)[None, :]  # (B, T)
    pos = pos.clamp(max=logits.shape[1] - 1)
    return torch.gather(logits, 1, pos[:, :, None].expand(-1, -1, logits.shape[-1]))


# The LM head's fp32 logits of one chunk of completion positions are at most this many bytes: a whole
# micro-batch's (32 completions x 640 tokens x a 49,152-token vocabulary: 4 GB, and several copies through
# log_softmax and backward) is what ran a real model out of memory. A vocabulary of 2k (the tiny model)
# fits tens of thousands of positions in one chunk, so its numbers are those of the unchunked path.
LOGITS_CHUNK_BYTES = 256 * 2**20


def completion_scores(model: torch.nn.Module, packed: Packed, lm_head: torch.nn.Module,
                      with_entropy: bool = False,
                      chunk_bytes: int = LOGITS_CHUNK_BYTES) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(logprobs, entropy) of each completion token: (B, T) each, zero on padding.

    The LM head runs on the completion positions only (gathered from the last hidden states, padding
    left out), and one log_softmax serves both the token logprobs and the entropy. Same numbers as
    `token_logprobs(completion_logits(...))` (tests/learner/test_sequences.py), at 0.75x its
    forward+backward time on the tiny model (bench.learner_forward). `model` is called as a whole (a
    DeepSpeed engine keeps its hooks); `lm_head` is the model's output layer. The entropy carries no
    gradient (it is a metric).

    Positions go through the head in chunks of at most `chunk_bytes` of fp32 logits; with more than one
    chunk each is recomputed in the backward pass (activation checkpointing) instead of being kept, so a
    micro-batch's logits never exist all at once.
    """
    out = model(input_ids=packed.input_ids, attention_mask=packed.attention_mask, use_cache=False,
                logits_to_keep=1, output_hidden_states=True)
    hidden = out.hidden_states[-1]  # (B, L, H), after the final norm
    rows, cols = packed.completion_mask.bool().nonzero(as_tuple=True)  # (N,) real completion tokens
    # Completion token k of row i sits at starts[i]+k, predicted by position starts[i]+k-1.
    picked = hidden[rows, packed.starts[rows] - 1 + cols]  # (N, H)
    return _scores_at(picked, packed.completion_ids[rows, cols], (rows, cols), packed.completion_mask.shape,
                      lm_head, with_entropy, chunk_bytes)


def shared_prompt_scores(model: torch.nn.Module, prompt_ids: list[int], completion_ids: list[list[int]],
                         lm_head: torch.nn.Module, with_entropy: bool = False,
                         chunk_bytes: int = LOGITS_CHUNK_BYTES) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`completion_scores` of completions that all follow one prompt, running that prompt once.

    The prompt goes through the model alone; its key/value cache is repeated for each completion and
    the completions run on top of it. Gradient flows through the cache into the prompt's pass, so the
    numbers and the gradient are those of running each prompt+completion whole (up to float rounding,
    tests/learner/test_shared_prompt.py), at prompt + n x completion tokens instead of n x both: a
    group of 8 behind a 600-token prompt is about 5x less work. Needs one completion token at least.
    """
    n = len(completion_ids)
    first = model(input_ids=torch.tensor([prompt_ids], dtype=torch.long), use_cache=True, logits_to_keep=1,
                  output_hidden_states=True)
    cache = first.past_key_values
    cache.batch_repeat_interleave(n)
    comp = pack([[] for _ in completion_ids], completion_ids, pad_id=0)  # padding is masked out
    p, t = len(prompt_ids), comp.input_ids.shape[1]
    attn = torch.cat([torch.ones((n, p), dtype=torch.long), comp.attention_mask], dim=1)
    positions = (p + torch.arange(t))[None].expand(n, -1)
    out = model(input_ids=comp.input_ids, attention_mask=attn, position_ids=positions, past_key_values=cache,
                use_cache=True, logits_to_keep=1, output_hidden_states=True)
    # Completion token 0 is predicted by the prompt's last position, token k by completion position k-1.
    last = first.hidden_states[-1][:, -1:].expand(n, 1, -1)  # (n, 1, H)
    predictors = torch.cat([last, out.hidden_states[-1][:, : t - 1]], dim=1)  # (n, t, H)
    width = comp.completion_mask.shape[1]
    rows, cols = comp.completion_mask.bool().nonzero(as_tuple=True)
    return _scores_at(predictors[rows, cols], comp.completion_ids[rows, cols], (rows, cols), (n, width),
                      lm_head, with_entropy, chunk_bytes)


def _scores_at(picked: torch.Tensor, targets: torch.Tensor, where: tuple[torch.Tensor, torch.Tensor],
               shape, lm_head: torch.nn.Module, with_entropy: bool,
               chunk_bytes: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(logprobs, entropy) laid out as `shape` (B, T), zero off `where`, of the hidden states `picked`
    (N, H) that predict `targets` (N,), through the LM head in chunks of at most `chunk_bytes`."""
    # Under ZeRO-3 a rank holds only a partition: the weight's own shape is (0,), its full one `ds_shape`.
    vocab = getattr(lm_head.weight, "ds_shape", lm_head.weight.shape)[0]
    step = max(1, chunk_bytes // (4 * vocab))
    if picked.shape[0] <= step:
        tok_lp, tok_ent = _head_scores(picked, lm_head, targets, with_entropy)
    else:
        from torch.utils.checkpoint import checkpoint

        parts = [checkpoint(_head_scores, picked[i: i + step], lm_head, targets[i: i + step], with_entropy,
                            use_reentrant=False) for i in range(0, picked.shape[0], step)]
        tok_lp = torch.cat([p[0] for p in parts])
        tok_ent = torch.cat([p[1] for p in parts]) if with_entropy else None
    lp = torch.zeros(shape, dtype=tok_lp.dtype, device=tok_lp.device)
    lp = lp.index_put(where, tok_lp)
    ent = None
    if with_entropy:
        ent = torch.zeros_like(lp).detach().index_put(where, tok_ent)
    return lp, ent


def _head_scores(picked: torch.Tensor, lm_head: torch.nn.Module, targets: torch.Tensor,
                 with_entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(logprob of each target, entropy or None) of the positions `picked` (N, H): (N,) each."""
    logp = torch.log_softmax(lm_head(picked).float(), dim=-1)  # (N, V)
    tok = logp.gather(-1, targets[:, None]).squeeze(-1)
    ent = None
    if with_entropy:
        with torch.no_grad():
            ent = -(logp.exp() * logp).sum(-1)
    return tok, ent


def output_layer(model: torch.nn.Module) -> torch.nn.Module:
    """The LM head of a causal LM, also inside a PEFT wrapper or a DeepSpeed engine."""
    inner = getattr(model, "module", model)  # a DeepSpeed engine
    inner = inner.get_base_model() if hasattr(inner, "get_base_model") else inner  # PEFT
    return inner.get_output_embeddings()


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log p(token) under softmax(logits): (B, T, V), (B, T) → (B, T), in float32."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return torch.gather(logp, -1, tokens[:, :, None]).squeeze(-1)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Per-token entropy of softmax(logits): (B, T, V) → (B, T)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)

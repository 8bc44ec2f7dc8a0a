"""How one learner rank splits a training batch into micro-batches, and the small helpers of the update.

Pure (tensors and lists; no DeepSpeed): every rank computes the same global plan from the whole batch
without talking, which keeps the ranks' collectives in step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from contracts.types import TrainBatch


def plan_micro_batches(batch: TrainBatch, micro_batch_size: int, world_size: int, rank: int,
                       skip_zero_advantage: bool = True, max_tokens: int | None = None) -> list[list[int]]:
    """Rank `rank`'s micro-batches (row indices), padded with empty ones to the busiest rank's count.

    Rows that carry gradient are sorted by length (less padding), dealt round-robin, and chunked: at most
    `micro_batch_size` rows, and with `max_tokens` at most that many padded tokens (rows x the longest
    row's prompt+completion) a micro-batch, which is what its activations' memory grows with; a row longer
    than `max_tokens` goes alone. Under ZeRO-2/3 each forward/backward is a collective, so every rank must
    run the same number. With `skip_zero_advantage` (no KL term) a zero advantage gives zero gradient: the
    sequence is not run (it still counts in the token-mean normaliser).

    >>> b = TrainBatch([[1]] * 4, [[2], [2, 2], [2], [2]], [[0.0]] * 4, [1.0, 0.0, -1.0, 0.5])
    >>> plan_micro_batches(b, 2, 2, 0), plan_micro_batches(b, 2, 2, 1)
    ([[0, 3]], [[2]])
    >>> plan_micro_batches(b, 8, 1, 0, max_tokens=4)
    [[0, 2], [3]]
    """
    rows = list(range(len(batch.completion_ids)))
    if skip_zero_advantage:
        rows = [i for i in rows if batch.advantages[i] != 0.0]

    def length(i: int) -> int:
        return len(batch.prompt_ids[i]) + len(batch.completion_ids[i])

    rows.sort(key=lambda i: (length(i), i))
    shards = [rows[r::world_size] for r in range(world_size)]
    plans = [_chunks(shard, micro_batch_size, max_tokens, length) for shard in shards]
    count = max(1, max(len(p) for p in plans))
    mine = plans[rank]
    return mine + [[] for _ in range(count - len(mine))]


def plan_shared_micro_batches(batch: TrainBatch, micro_batch_size: int, world_size: int, rank: int,
                              skip_zero_advantage: bool = True,
                              max_tokens: int | None = None) -> list[list[int]]:
    """`plan_micro_batches` for a learner that runs each prompt once (`learner.share_prompt`): every
    micro-batch holds completions of one prompt, and its tokens are that prompt's plus each completion's
    (padded to the longest), which is what it then costs.

    >>> b = TrainBatch([[1], [1], [5, 5], [5, 5]], [[2], [2, 2], [3], [3]], [[0.0]] * 4,
    ...                [1.0, 1.0, -1.0, 0.5])
    >>> plan_shared_micro_batches(b, 8, 1, 0), plan_shared_micro_batches(b, 8, 1, 0, max_tokens=4)
    ([[0, 1], [2, 3]], [[0], [1], [2, 3]])
    >>> plan_shared_micro_batches(b, 8, 2, 0), plan_shared_micro_batches(b, 8, 2, 1)
    ([[0, 1]], [[2, 3]])
    """
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in range(len(batch.completion_ids)):
        if not skip_zero_advantage or batch.advantages[i] != 0.0:
            groups.setdefault(tuple(batch.prompt_ids[i]), []).append(i)
    def completion(i: int) -> int:
        return len(batch.completion_ids[i])

    chunks: list[list[int]] = []
    for prompt, rows in groups.items():
        rows.sort(key=lambda i: (completion(i), i))
        # The prompt is paid once a micro-batch: what is left of the budget is for the completions.
        budget = None if max_tokens is None else max_tokens - len(prompt)
        chunks += _chunks(rows, micro_batch_size, budget, completion)
    mine = chunks[rank::world_size]
    count = max(1, -(-len(chunks) // world_size))
    return mine + [[] for _ in range(count - len(mine))]


def _chunks(rows: list[int], size: int, max_tokens: int | None, length) -> list[list[int]]:
    """`rows` (sorted by length) cut into runs of at most `size` rows and `max_tokens` padded tokens."""
    if max_tokens is None:
        return [rows[i: i + size] for i in range(0, len(rows), size)]
    out: list[list[int]] = []
    for i in rows:
        # Sorted ascending, so the row being added is the longest of its micro-batch.
        if out and len(out[-1]) < size and (len(out[-1]) + 1) * length(i) <= max_tokens:
            out[-1].append(i)
        else:
            out.append([i])
    return out


# Per-micro-batch metrics averaged over the step (kl_ref only with a KL term, the importance-weight
# ones only with a tis_cap).
SUMMED = ("clip_frac_low", "clip_frac_high", "approx_kl", "ratio_mean", "entropy", "kl_ref", "is_ratio_mean",
          "tis_clip_frac")


@dataclass(frozen=True)
class Norm:
    """What a micro-batch's loss is normalised against: the whole batch's sequences and tokens."""

    sequences: int
    tokens: int
    max_tokens: int  # Dr.GRPO's constant


def logprob_gaps(lp: torch.Tensor, batch: TrainBatch, rows: list[int]) -> list[torch.Tensor]:
    """|learner − vLLM| logprob per sampled completion token of each row of `lp` (row j is batch row
    rows[j]), for the rows the current policy sampled (lag 0: the same weights on both sides).
    Observation tokens, which vLLM did not sample, are left out."""
    out = []
    for j, i in enumerate(rows):
        if batch.lags and batch.lags[i] != 0:
            continue
        t = len(batch.completion_ids[i])
        v = torch.tensor(batch.rollout_logprobs[i][:t], dtype=torch.float32)
        gap = (lp[j, :t].detach().float() - v).abs()
        if batch.loss_mask is not None:
            gap = gap[torch.tensor(batch.loss_mask[i][:t], dtype=torch.bool)]
        out.append(gap)
    return out


def loss_mask(batch: TrainBatch, rows: list[int], completion_mask: torch.Tensor) -> torch.Tensor:
    """(b, T) 1 on the tokens the loss counts: real completion tokens the policy sampled itself."""
    if batch.loss_mask is None:
        return completion_mask
    return completion_mask * pad_rows([batch.loss_mask[i] for i in rows], completion_mask.shape[1]).to(
        completion_mask.dtype)


def counted_tokens(batch: TrainBatch) -> int:
    """Tokens the loss counts over the whole batch (the token-mean normaliser)."""
    if batch.loss_mask is None:
        return sum(len(c) for c in batch.completion_ids)
    return int(sum(sum(m[: len(c)]) for m, c in zip(batch.loss_mask, batch.completion_ids)))


def pad_rows(rows: list[list[float]], width: int) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=torch.float32)
    for i, r in enumerate(rows):
        r = r[:width]
        out[i, : len(r)] = torch.tensor(r, dtype=torch.float32)
    return out

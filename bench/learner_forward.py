"""Forward+backward time of the learner's completion logits: LM head over every position vs only
from the earliest completion on (what `learner.sequences.completion_logits` does), in the same run.

    python -m bench.learner_forward [--batch 64] [--prompt 100] [--completion 32] [--repeats 5]

Builds the tiny model, a random batch whose prompts vary in length by ±20 tokens, and prints the
median time of each variant, their ratio (trimmed / full) and the largest logit difference (must be
~0: both compute the same logits). Ratios, not absolute times, are the result: these machines are
shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=100)
    ap.add_argument("--completion", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM

    from bench.common import load_setup
    from learner.sequences import completion_logits, pack

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(load_setup().paths.model_dir))
    vocab = model.config.vocab_size
    lengths = (args.prompt + torch.randint(-20, 21, (args.batch,))).clamp(min=1).tolist()
    prompts = [torch.randint(3, vocab, (n,)).tolist() for n in lengths]
    completions = [torch.randint(3, vocab, (args.completion,)).tolist() for _ in range(args.batch)]
    packed = pack(prompts, completions, pad_id=0)

    def full(m, p):  # the LM head on every position, then the same gather
        logits = m(input_ids=p.input_ids, attention_mask=p.attention_mask, use_cache=False).logits
        pos = (p.starts[:, None] - 1
               + torch.arange(p.completion_ids.shape[1])[None, :]).clamp(max=logits.shape[1] - 1)
        return torch.gather(logits, 1, pos[:, :, None].expand(-1, -1, logits.shape[-1]))

    def timed(fn) -> float:
        t = time.perf_counter()
        out = fn(model, packed)
        out.float().logsumexp(-1).mean().backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - t

    with torch.no_grad():
        diff = (full(model, packed) - completion_logits(model, packed)).abs().max().item()
    times = {"full": [], "trimmed": []}
    for _ in range(args.repeats):  # interleaved, so drifts in machine load hit both alike
        times["full"].append(timed(full))
        times["trimmed"].append(timed(completion_logits))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"batch {args.batch} x (prompt ~{args.prompt} + completion {args.completion}) tokens, "
          f"{args.repeats} repeats, median forward+backward:")
    print(f"  full LM head     {med['full'] * 1000:8.1f} ms")
    print(f"  trimmed LM head  {med['trimmed'] * 1000:8.1f} ms")
    print(f"  ratio trimmed / full: {med['trimmed'] / med['full']:.2f}   max |logit diff|: {diff:.2e}")


if __name__ == "__main__":
    main()

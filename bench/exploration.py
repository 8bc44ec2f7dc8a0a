"""How often a model samples a right answer, per kind of row: can RL find what it must reinforce?

    python -m bench.exploration MODEL_DIR [--category combo] [--by kind] [--rows 120] [--n 16]

RL can only repair what the policy samples: a kind of request whose right answer never appears in a
group gets no gradient towards it. Run this on a warm-up model (`<run>/warmup_model`) to see, for the
training rows of one category (by default the fund assistant's combo requests, split by their first
operation), the share of samples the task's judge calls right, the share it could not parse, and how
many groups of `n` hold at least one right answer. In-process vLLM, a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import collections


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir")
    p.add_argument("--config", default="tiny-cpu", help="preset whose task, data and tokenizer to use")
    p.add_argument("--category", default="combo", help="rows of this category (the task's group column)")
    p.add_argument("--by", default="kind", help="row column to split the rows by")
    p.add_argument("--rows", type=int, default=120, help="rows of the training data to sample")
    p.add_argument("--n", type=int, default=16, help="samples per row")
    p.add_argument("--temperature", type=float, default=1.0)
    args = p.parse_args(argv)

    from bench.common import load_setup
    from rewards.registry import get_reward

    s = load_setup(args.config)
    from vllm import LLM, SamplingParams

    task, ro = s.task, s.cfg.rollout
    rows = [r for r in task.rows()[0] if r.get(task.group_column) == args.category][: args.rows]
    if not rows:
        print(f"no training rows with {task.group_column} = {args.category!r}")
        return 2
    llm = LLM(model=args.model_dir, tokenizer=str(s.paths.tokenizer_dir), dtype="float32", enforce_eager=True,
              kv_cache_memory_bytes=ro.kv_cache_memory_bytes, max_model_len=ro.max_model_len,
              seed=s.cfg.train.seed)
    prompts = [task.render_prompt(s.tokenizer, r) for r in rows]
    outs = llm.generate(prompts,
                        SamplingParams(n=args.n, temperature=args.temperature, max_tokens=ro.max_tokens),
                        use_tqdm=False)
    judge = get_reward(task.judge)
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for row, out in zip(rows, outs):
        texts = [c.text for c in out.outputs]
        flat = [row] * len(texts)
        parts = judge.breakdown([r["prompt"] for r in flat], texts, **task.columns(flat))
        right = [b.get(task.correct_key, 0.0) == 1.0 for b in parts]
        c = counts[str(row.get(args.by))]
        c["right"] += sum(right)
        c["unparsed"] += sum(b.get("parsed", 1.0) == 0.0 for b in parts)
        c["samples"] += len(texts)
        c["groups_with_right"] += any(right)
        c["groups"] += 1
    print(f"{len(rows)} {args.category} rows x {args.n} samples at T {args.temperature}, by {args.by}:")
    print(f"| {args.by} | right | unparsed | groups with a right one |\n|---|---|---|---|")
    for kind, c in sorted(counts.items()):
        print(f"| {kind} | {c['right'] / c['samples']:.1%} | {c['unparsed'] / c['samples']:.1%} | "
              f"{c['groups_with_right']}/{c['groups']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

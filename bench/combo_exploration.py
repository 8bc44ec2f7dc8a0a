"""How often a model samples the right tool on combo requests, by the combo's first operation.

    python -m bench.combo_exploration MODEL_DIR [--rows 120] [--n 16] [--temperature 1.0]

RL can only repair what the policy samples: a combo type whose right tool never appears in a group
gets no gradient towards it. Run this on a warm-up model (`<run>/warmup_model`) to see, for the
training data of the tiny-cpu preset, the share of samples that are right / check_balance (the
seed's wrong label) / another tool / not valid JSON, for each first operation, and how many groups
of `n` contain at least one right answer. In-process vLLM, a minute on 2 cores.
"""

from __future__ import annotations

import argparse
import collections


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir")
    p.add_argument("--config", default="tiny-cpu", help="preset whose data and tokenizer to use")
    p.add_argument("--rows", type=int, default=120, help="combo rows of the training data to sample")
    p.add_argument("--n", type=int, default=16, help="samples per row")
    p.add_argument("--temperature", type=float, default=1.0)
    args = p.parse_args(argv)

    from cluster.runtime import apply_role_env

    apply_role_env()  # offline, in-process vLLM engine
    from vllm import LLM, SamplingParams

    from actors.batching import label_tool
    from configs.loader import load_config
    from models.tiny import resolve_model
    from rewards.parsing import get_tool, parse_react
    from tasks.fund_assistant import generate
    from tasks.fund_assistant.generator import SEED_BUG_TOOL
    from tasks.fund_assistant.prompting import render_prompt

    cfg = load_config(args.config)
    d = cfg.data
    train, _ = generate(seed=d.seed, n_single=d.n_single, n_multistep_samples=d.n_multistep_samples,
                        eval_fraction=d.eval_fraction)
    combos = [r for r in train if r["category"] == "combo"][: args.rows]
    tok_dir = str(resolve_model(cfg.model.name, cfg.model.tokenizer, cfg.model.tiny, d.seed).tokenizer_dir)
    llm = LLM(model=args.model_dir, tokenizer=tok_dir, dtype="float32", enforce_eager=True,
              kv_cache_memory_bytes=cfg.rollout.kv_cache_memory_bytes, max_model_len=cfg.rollout.max_model_len,
              seed=cfg.train.seed)
    prompts = [render_prompt(llm.get_tokenizer(), r["prompt"], d.system_prompt) for r in combos]
    outs = llm.generate(prompts, SamplingParams(n=args.n, temperature=args.temperature,
                                                max_tokens=cfg.rollout.max_tokens), use_tqdm=False)
    kinds = ("right", SEED_BUG_TOOL, "other tool", "invalid")
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    groups: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])  # [with a right one, all]
    for row, out in zip(combos, outs):
        want = label_tool(row["solution"])
        right = 0
        for c in out.outputs:
            tool = get_tool(parse_react(c.text))
            kind = "right" if tool == want else "invalid" if tool is None else SEED_BUG_TOOL if tool == SEED_BUG_TOOL else "other tool"
            counts[want][kind] += 1
            right += kind == "right"
        groups[want][0] += right > 0
        groups[want][1] += 1
    print(f"{len(combos)} combo rows x {args.n} samples at T {args.temperature}, by first operation:")
    print("| first operation | " + " | ".join(kinds) + " | groups with a right one |")
    print("|---" * (len(kinds) + 2) + "|")
    for want in sorted(counts):
        tot = sum(counts[want].values())
        cells = " | ".join(f"{counts[want][k] / tot:.1%}" for k in kinds)
        print(f"| {want} | {cells} | {groups[want][0]}/{groups[want][1]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

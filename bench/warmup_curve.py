"""How a warm-up learns, step by step: where does it stop, and would another draw stop elsewhere?

    python -m bench.warmup_curve [--config tiny-cpu-reasoning] [--set KEY=VALUE ...] [--steps N]
                                 [--every 50] [--probe 120]

RL moves what the warm-up has begun to learn: a right answer the policy samples but does not yet give
greedily. This trains a preset's warm-up (its settings, rows, seed, drill; nothing is kept) and every
`every` steps prints the share of rows whose target the model would write greedily (teacher-forced:
every target token the model's top choice), on `probe` training rows kept out of the warm-up's batches
and on the held-out rows, overall and per group (the task's group column). With the probe rows left out
the warm-up draws other batches than a run's: its path is another draw of the same recipe, which is
the point (how far the place where a warm-up stops depends on the draw). Minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from typing import Any


def greedy_right(model, examples: list[tuple[list[int], list[int], list[int]]]) -> list[bool]:
    """Per (prompt ids, target ids, mask) example: is every masked-in target token the model's top
    choice after the tokens before it (what greedy decoding would write)? Leaves the model's mode as
    it found it."""
    import torch

    was_training = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for prompt, target, mask in examples:
            logits = model(torch.tensor([prompt + target])).logits[0, len(prompt) - 1:-1]
            top = logits.argmax(-1).tolist()
            out.append(all(t == c for t, c, m in zip(top, target, mask) if m))
    model.train(was_training)
    return out


def shares(right: list[bool], groups: list[str]) -> tuple[float, dict[str, float]]:
    """The share right overall and per group value."""
    by: dict[str, list[bool]] = {}
    for ok, g in zip(right, groups):
        by.setdefault(g, []).append(ok)
    return sum(right) / max(len(right), 1), {g: sum(v) / len(v) for g, v in sorted(by.items())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="tiny-cpu-reasoning", help="preset whose warm-up, rows, seed to use")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="config override, as train.py takes it (e.g. task.seed=1)")
    p.add_argument("--steps", type=int, default=None, help="warm-up steps (default: the preset's)")
    p.add_argument("--every", type=int, default=50, help="steps between two measurements")
    p.add_argument("--probe", type=int, default=120, help="training rows kept out of the warm-up, measured")
    args = p.parse_args(argv)

    from bench.common import load_setup
    from learner.warmup import encode_examples, sft_warmup

    s = load_setup(args.config, args.sets)
    w, column, work = s.cfg.train.warmup, s.task.group_column, s.work
    train_rows, held_rows = work.rows()
    if args.probe >= len(train_rows):
        sys.exit(f"--probe {args.probe}: the preset has only {len(train_rows)} training rows")
    kept_out = set(random.Random(f"{s.cfg.train.seed}/probe").sample(range(len(train_rows)), args.probe))

    def examples(rows: list[dict]) -> tuple[list[tuple], list[str], Any]:
        targets, ex, drill = work.warmup_examples(s.tokenizer, rows)
        return encode_examples(s.tokenizer, ex), [r[column] for r in targets], drill

    learn, learn_groups, drill = examples([r for i, r in enumerate(train_rows) if i not in kept_out])
    probe, probe_groups, _ = examples([r for i, r in enumerate(train_rows) if i in kept_out])
    held, held_groups, _ = examples(held_rows)
    names = sorted(set(held_groups))
    print(f"{args.config} ({' '.join(args.sets) or 'as written'}): warm-up of {len(learn)} rows, "
          f"lr {w.lr}, batch {w.batch_size}; greedy right on {len(probe)} probe, {len(held)} held-out rows")
    print("| step | probe | held out | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))

    def measure(step: int, model) -> None:
        probe_all, _ = shares(greedy_right(model, probe), probe_groups)
        held_all, per = shares(greedy_right(model, held), held_groups)
        print(f"| {step} | {probe_all:.1%} | {held_all:.1%} | "
              + " | ".join(f"{per.get(n, 0.0):.0%}" for n in names) + " |", flush=True)

    with tempfile.TemporaryDirectory() as out:
        sft_warmup(str(s.paths.model_dir), str(s.paths.tokenizer_dir), learn, out,
                   steps=args.steps if args.steps is not None else w.steps, lr=w.lr, batch_size=w.batch_size,
                   seed=s.cfg.train.seed, lr_final_ratio=w.lr_final_ratio,
                   groups=learn_groups if w.balanced else None, drill=drill,
                   swaps=work.entity_swaps(s.tokenizer), watch=(args.every, measure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Generation speed of the two serving modes, measured in the same run: LoRA adapter vs merged weights.

    python -m bench.serve_modes [--prompts 16] [--n 8] [--max-tokens 64] [--repeats 3]

Starts one in-process RolloutWorker per mode on the tiny model, pushes the same random LoRA to both,
and prints the median generate time of each and their ratio (adapter / merged). Ratios, not absolute
times, are the result: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def measure(mode: str, paths, prompts: list[str], n: int, max_tokens: int, repeats: int) -> float:
    from actors.worker.rollout_worker import RolloutWorker
    from bench.work import random_lora
    from configs.model import LoraConfig
    from configs.rollout import RolloutConfig

    cfg = RolloutConfig(n=n, max_tokens=max_tokens, max_model_len=512, serve_mode=mode, temperature=1.0)
    worker = RolloutWorker(str(paths.model_dir), str(paths.tokenizer_dir), cfg, LoraConfig(), seed=0)
    worker.load_adapter(random_lora(str(paths.model_dir)))
    worker.generate(prompts[:2], n=2)  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        worker.generate(prompts)
        times.append(time.perf_counter() - t)
    del worker
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prompts", type=int, default=16)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", choices=["merged", "adapter"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.only is None:
        # One engine per process: vLLM's in-process engine initialises torch.distributed globally.
        common = ["--prompts", str(args.prompts), "--n", str(args.n), "--max-tokens", str(args.max_tokens),
                  "--repeats", str(args.repeats)]
        secs = {}
        for mode in ("merged", "adapter"):
            out = subprocess.run([sys.executable, "-m", "bench.serve_modes", *common, "--only", mode],
                                 capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr[-4000:], file=sys.stderr)
                return out.returncode
            secs[mode] = float(next(x for x in out.stdout.splitlines()
                                    if x.startswith("SECONDS ")).split()[1])
        print(f"{args.prompts} prompts x {args.n} completions x <= {args.max_tokens} tokens, "
              f"median of {args.repeats}")
        print(f"merged  {secs['merged']:.3f} s\nadapter {secs['adapter']:.3f} s\n"
              f"ratio adapter/merged {secs['adapter'] / secs['merged']:.2f}x")
        return 0

    from bench.common import load_setup

    s = load_setup()
    rows = s.task.rows()[1][: args.prompts]
    prompts = [s.task.render_prompt(s.tokenizer, r) for r in rows]
    print(f"SECONDS {measure(args.only, s.paths, prompts, args.n, args.max_tokens, args.repeats)}",
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

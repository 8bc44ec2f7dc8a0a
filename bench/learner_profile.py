"""Where the real-model learner's step goes: one step of bench.real's `learner-ds` side under
torch.profiler, its operators' own CPU time grouped into matmuls and the rest, and the matmuls' FLOP/s
(counted by the profiler from their shapes) against the plain matmul peak measured right after.

    python -m bench.learner_profile [--share-prompt] [--top 12]

The learner FLOP/s row of bench.real is (useful FLOPs / step seconds) / peak; this splits it into what
the matmuls themselves reach and the share of the step spent outside them (elementwise passes, norms,
softmax, copies, the optimizer, DeepSpeed's bookkeeping). Needs `make real-model`.
"""

from __future__ import annotations

import argparse
import os
from collections import defaultdict

MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
           "aten::_scaled_dot_product_flash_attention_for_cpu",
           "aten::_scaled_dot_product_flash_attention_for_cpu_backward")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--share-prompt", action="store_true", help="the share_prompt learner")
    p.add_argument("--top", type=int, default=12, help="operators listed by their own time")
    args = p.parse_args(argv)
    os.environ["NGRPO_BENCH_WORK"] = "real"  # before bench.work is imported
    from torch.profiler import ProfilerActivity, profile

    from bench.flops import matmul_flops_per_s
    from bench.side import LearnerSide

    side = LearnerSide(plain=False, share_prompt=args.share_prompt)
    side.run()  # warm-up: allocations, DeepSpeed's first step
    with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
        unit = side.run()
    peak = matmul_flops_per_s(side.shape)
    own: dict[str, float] = defaultdict(float)
    flops: dict[str, float] = defaultdict(float)
    for e in prof.key_averages():
        own[e.key] += e.self_cpu_time_total / 1e6
        flops[e.key] += e.flops or 0
    total = sum(own.values())
    mm_s = sum(v for k, v in own.items() if k in MATMULS)
    mm_flops = sum(flops[k] for k in MATMULS)
    useful = unit["flops"] / unit["seconds"]
    print(f"step {unit['seconds']:.1f} s (profiled; operators' own time {total:.1f} s), useful "
          f"{useful:.3g} FLOP/s = {useful / peak:.1%} of the peak {peak:.3g}")
    print(f"matmuls: {mm_s:.1f} s ({mm_s / total:.0%} of the operators' time), {mm_flops:.3g} FLOPs at "
          f"{mm_flops / max(mm_s, 1e-9):.3g} FLOP/s = {mm_flops / max(mm_s, 1e-9) / peak:.0%} of the peak")
    print(f"{'operator':<56} {'own s':>8} {'share':>6} {'GFLOP/s':>8}")
    for k, v in sorted(own.items(), key=lambda kv: -kv[1])[: args.top]:
        rate = f"{flops[k] / v / 1e9:.0f}" if flops[k] and v else ""
        print(f"{k[:56]:<56} {v:8.2f} {v / total:6.1%} {rate:>8}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

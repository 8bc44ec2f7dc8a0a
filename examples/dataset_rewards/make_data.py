"""Writes this example's data: sums of two digits in TRL's conversational prompt-completion format.

    python examples/dataset_rewards/make_data.py      # (re)writes train.jsonl beside this file

Each row: `prompt` (one user message), `answer` (the sum, read by the reward), `completion` (a
worked answer in `<think>` tags: the warm-up's target) and `size` (the group the metrics split by).
"""

from __future__ import annotations

import json
import random
from pathlib import Path


def rows(seed: int = 0) -> list[dict]:
    out = []
    for a in range(10):
        for b in range(10):
            s = a + b
            out.append({"prompt": [{"role": "user", "content": f"{a}+{b}="}], "answer": str(s),
                        "completion": [{"role": "assistant", "content": f"<think>{a} plus {b}</think>{s}"}],
                        "size": "carry" if s >= 10 else "no_carry"})
    random.Random(seed).shuffle(out)
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("train.jsonl")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    print(f"wrote {path}")

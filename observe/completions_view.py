"""What the model said, for the report: a few held-out answers before and after training side by side
(completions_<tag>.jsonl of the first and the last eval), each with the judge's verdict.

    >>> before = [{"row": 0, "prompt": [{"role": "user", "content": "2+2?"}], "completion": "four",
    ...            "verdict": 0.0}]
    >>> after = [{"row": 0, "completion": "<answer>4</answer>", "verdict": 1.0}]
    >>> print("\\n".join(side_by_side("before", before, "after", after, k=1)))
    - **2+2?**
      - before (0): four
      - after (1): <answer>4</answer>
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from observe.runs import read_jsonl
from observe.tensorboard import last_message


def _one_line(text: Any, width: int = 240) -> str:
    s = " ⏎ ".join(str(text or "").splitlines()).strip()
    return s if len(s) <= width else s[: width - 1] + "…"


def side_by_side(first: str, a: list[dict], last: str, b: list[dict], k: int = 3) -> list[str]:
    """Markdown lines: the first `k` held-out rows, each with its answer at `first` and at `last`."""
    later = {r.get("row"): r for r in b}
    lines = []
    for rec in a[:k]:
        lines.append(f"- **{_one_line(last_message(rec.get('prompt')), 160)}**")
        for tag, r in ((first, rec), (last, later.get(rec.get("row")))):
            if r is not None:
                verdict = r.get("verdict")
                shown = f" ({verdict:g})" if isinstance(verdict, int | float) else ""
                lines.append(f"  - {tag}{shown}: {_one_line(r.get('completion'))}")
    return lines


def completions_section(run_dir: Path, tags: list[str], k: int = 3) -> list[str]:
    """The report's lines: the first and the last eval's answers to the same rows, or why there are none."""
    have = [t for t in tags if (run_dir / f"completions_{t}.jsonl").exists()]
    if not have:
        return ["No eval completions were written (completions_<tag>.jsonl)."]
    first, last = have[0], have[-1]
    a = read_jsonl(run_dir / f"completions_{first}.jsonl")
    b = read_jsonl(run_dir / f"completions_{last}.jsonl")
    head = (f"The first {min(k, len(a))} held-out rows (the judge's verdict in brackets); every answer is in "
            "completions_<tag>.jsonl.")
    return [head, "", *side_by_side(first, a, last, b if last != first else [], k)]

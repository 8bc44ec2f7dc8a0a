"""The README quotes measurements only from the files the commands write, and stays a readable reference.

Its generated blocks (docs/readme_numbers.py) must be what their files make: the demo's table from
docs/demo_result.json (`python docs/readme_numbers.py record RUN` after `make run`), the bench table from
bench/results/real.md (`make bench`). Outside them it quotes no percentage, ratio, duration or size.
"""

from __future__ import annotations

import copy
import json
import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
made = runpy.run_path(str(ROOT / "docs" / "readme_numbers.py"))


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_every_block_is_what_its_file_makes():
    stale = made["stale"](_readme(), made["blocks"]())
    assert not stale, f"README.md's {stale} blocks are stale: run python docs/readme_numbers.py"


def test_no_measurement_outside_a_block():
    stray = made["stray_numbers"](_readme())
    assert not stray, ("README.md quotes measurements that no command's file backs (put them in docs/, or in "
                       "a generated block):\n" + "\n".join(stray))


def test_a_changed_result_file_makes_the_block_stale(tmp_path):
    demo = json.loads((ROOT / "docs" / "demo_result.json").read_text(encoding="utf-8"))
    changed = copy.deepcopy(demo)
    changed["after"]["per_category"]["combo"] = 0.5
    (tmp_path / "demo.json").write_text(json.dumps(changed))
    blocks = made["blocks"](demo=tmp_path / "demo.json")
    assert made["stale"](_readme(), blocks) == ["demo result"]
    assert "**50.0%**" in made["rewrite"](_readme(), blocks)


def test_record_takes_a_runs_eval_and_config(tmp_path):
    run = tmp_path / "runs" / "demo"
    run.mkdir(parents=True)
    cats = {"combo": 0.02, "settlement": 1.0, "withdraw": 0.5}
    after = {"combo": 0.9, "settlement": 0.9, "withdraw": 0.75}
    table = {"average_score": 0.7, "tool_accuracy": 0.8, "reasoning_score": 0.1, "n": 100, "seconds": 3.0}
    (run / "eval.json").write_text(json.dumps({
        "before": {**table, "per_category": cats, "policy_version": 0},
        "after": {**table, "tool_accuracy": 0.95, "per_category": after, "policy_version": 12}}))
    train = {"seed": 3, "warmup": {"enabled": True, "steps": 7}}
    (run / "config.json").write_text(json.dumps({"task": {"name": "fund_assistant"}, "train": train}))
    out = tmp_path / "demo_result.json"
    result = made["record"](run, out)
    assert json.loads(out.read_text()) == result
    text = made["demo_block"](result)
    assert "seed 3" in text and "after the 7-step warm-up" in text and "after 12 RL steps" in text
    assert "| tool accuracy | 80.0% | 95.0% |" in text and "| **combo** | **2.0%** | **90.0%** |" in text
    assert "held-out (100 rows)" in text
    assert "The largest fall of one category: withdraw, 50.0% → 75.0%" not in text  # a rise is no fall
    assert "settlement, 100.0% → 90.0%" in text


def test_links_to_the_readme_resolve():
    """`#anchor` links in the README, and `README.md#anchor` links from docs/, name one of its headings."""
    heads = re.findall(r"^#+\s+(.+?)\s*$", _readme(), flags=re.M)
    anchors = {re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", h.lower())) for h in heads}
    links = [("README.md", a) for a in re.findall(r"\]\(#([\w-]+)\)", _readme())]
    for doc in (ROOT / "docs").glob("*.md"):
        links += [(doc.name, a) for a in re.findall(r"README\.md#([\w-]+)", doc.read_text(encoding="utf-8"))]
    missing = [f"{src} -> README.md#{a}" for src, a in links if a not in anchors]
    assert not missing, f"links to README headings that do not exist: {missing}"


def test_prose_lines_stay_short():
    """Tables and the generated metric list aside, no README line runs past 110 characters."""
    outside = made["BLOCK"].sub("", _readme())
    long = [line for line in outside.splitlines() if len(line) > 110 and not line.startswith("|")]
    assert not long, "README.md lines over 110 characters:\n" + "\n".join(long)

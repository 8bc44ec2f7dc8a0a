"""The README's measured numbers, each block made from the file a command wrote.

    python docs/readme_numbers.py                 # rewrite README.md's generated blocks from their files
    python docs/readme_numbers.py --check         # exit 1 naming each stale block and each stray number
    python docs/readme_numbers.py record RUN      # RUN's held-out eval -> docs/demo_result.json, then rewrite

Blocks (between `<!-- NAME: ... -->` and `<!-- end of NAME -->` in README.md):
- `demo result`: `docs/demo_result.json`, which `record` writes from a `make run` run folder (its
  `eval.json` and `config.json`);
- `bench table`: `bench/results/real.md` and `real.json`, the real model's rows, which `make bench`
  writes (bench.real), else `real-quick.*` (`make bench BENCH=quick`); the tiny model's rows
  (`latest.md`) stay in bench/results.

Outside the blocks (the metric list of `python -m observe.schema --by-role` aside) the README quotes no
measurement: a percentage, a ratio such as 1.3x, a duration or a size there is a stray number.
tests/test_readme_numbers.py runs these checks.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DEMO = ROOT / "docs" / "demo_result.json"
BENCH = ROOT / "bench" / "results"
BLOCK = re.compile(r"^<!-- (?P<name>[\w ]+?)(?::[^\n]*)? -->\n(?P<body>.*?)^<!-- end of (?P=name) -->$",
                   flags=re.M | re.S)
# What reads as a measurement: 12.5%, 1.3x or 1.3×, 40 s, 7 min, 2.9 GB.
MEASURED = re.compile(r"\d\s?%|\d(?:\.\d+)?\s?×|\b\d+(?:\.\d+)?x\b"
                      r"|\b\d+(?:\.\d+)?\s?(?:ms|s|min|minutes|seconds|hours?)\b"
                      r"|\b\d+(?:\.\d+)?\s?(?:[KMGT]i?B)\b")
WIDTH = 110


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def demo_block(result: dict) -> str:
    """The default demo's held-out table: before and after RL, the numbers the demo is about."""
    b, a = result["before"], result["after"]
    combo = (_pct(b["per_category"]["combo"]), _pct(a["per_category"]["combo"]))
    lines = [f"`make run`, seed {result['seed']}, on {result['machine']}:", "",
             f"| held-out ({b['n']} rows), greedy | after the {result['warmup_steps']}-step warm-up "
             f"| after {result['rl_steps']} RL steps |", "|---|---|---|",
             "| average score (ground-truth reward) | "
             f"{_pct(b['average_score'])} | {_pct(a['average_score'])} |",
             f"| tool accuracy | {_pct(b['tool_accuracy'])} | {_pct(a['tool_accuracy'])} |",
             f"| **combo** | **{combo[0]}** | **{combo[1]}** |",
             ""]
    falls = {c: b["per_category"][c] - a["per_category"][c] for c in b["per_category"]}
    worst = max(falls, key=lambda c: (falls[c], c))
    if falls[worst] > 0:
        lines.append(f"The largest fall of one category: {worst}, {_pct(b['per_category'][worst])} → "
                     f"{_pct(a['per_category'][worst])}.")
    else:
        lines.append("No category fell.")
    return "\n".join(lines) + "\n"


def bench_block(table_md: str, table_json: dict, name: str = "real.md") -> str:
    """A bench table as its markdown file has it (`name` in bench/results), under the run's date and
    machine."""
    table = table_md.strip().split("\n\n")[1]
    assert table.startswith("| measure |"), f"bench/results/{name}: no measure table after its first line"
    meta = table_json["meta"]
    assert meta["date"] in table_md, f"bench/results/{name} and its .json are of different runs"
    command = "make bench BENCH=quick" if meta.get("quick") else "make bench"
    rounds = f"{meta['rounds']} round" + ("s" if meta["rounds"] != 1 else "")
    head = (f"`{command}` of {meta['date']} on {meta['machine']}, {rounds} (the work: "
            f"`bench/results/{name}`):")
    return "\n".join(textwrap.wrap(head, WIDTH)) + "\n\n" + table + "\n"


def blocks(demo: Path = DEMO, bench: Path = BENCH) -> dict[str, str]:
    # the whole table (make bench) where there is one, else the short spell's (make bench BENCH=quick)
    stem = "real" if (bench / "real.md").exists() else "real-quick"
    return {"demo result": demo_block(json.loads(demo.read_text(encoding="utf-8"))),
            "bench table": bench_block((bench / f"{stem}.md").read_text(encoding="utf-8"),
                                       json.loads((bench / f"{stem}.json").read_text(encoding="utf-8")),
                                       f"{stem}.md")}


def rewrite(text: str, made: dict[str, str]) -> str:
    def one(m: re.Match) -> str:
        name = m.group("name")
        if name not in made:
            return m.group(0)
        first = m.group(0).split("\n", 1)[0]
        return f"{first}\n{made[name]}<!-- end of {name} -->"

    return BLOCK.sub(one, text)


def stale(text: str, made: dict[str, str]) -> list[str]:
    """The blocks whose text is not what their files make, or that README.md lacks."""
    found = {m.group("name"): m.group("body") for m in BLOCK.finditer(text)}
    return [name for name, body in made.items() if found.get(name) != body]


def stray_numbers(text: str) -> list[str]:
    """Lines outside every generated block that quote a measurement."""
    outside = BLOCK.sub("", text)
    return [line for line in outside.splitlines() if MEASURED.search(line)]


def record(run: Path, out: Path = DEMO) -> dict:
    """A `make run` run folder's held-out eval, before and after RL, as docs/demo_result.json."""
    config = json.loads((run / "config.json").read_text(encoding="utf-8"))
    tables = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    if config["task"]["name"] != "fund_assistant" or "before" not in tables or "after" not in tables:
        raise SystemExit(f"{run}: not a fund-assistant run with an eval before and after RL")
    keep = ("n", "average_score", "tool_accuracy", "per_category")
    warmup = config["train"]["warmup"]
    result = {"recorded_from": f"the run folder {run.name}",
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "seed": config["train"]["seed"],
              "warmup_steps": warmup["steps"] if warmup["enabled"] else 0,
              "rl_steps": tables["after"]["policy_version"],
              **{stage: {k: tables[stage][k] for k in keep} for stage in ("before", "after")}}
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="change nothing; exit 1 when README.md is stale")
    sub = p.add_subparsers(dest="command")
    r = sub.add_parser("record", help="write docs/demo_result.json from a make run run folder")
    r.add_argument("run", type=Path)
    args = p.parse_args(argv)
    if args.command == "record":
        record(args.run)
    text = README.read_text(encoding="utf-8")
    made = blocks()
    if args.check:
        bad = [f"README.md: block '{n}' is not what its file makes" for n in stale(text, made)]
        bad += [f"README.md: a measurement outside a generated block: {line}" for line in stray_numbers(text)]
        print("\n".join(bad) or "README.md: every block is its file's")
        return 1 if bad else 0
    README.write_text(rewrite(text, made), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

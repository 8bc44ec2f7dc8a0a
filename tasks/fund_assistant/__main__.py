"""Command line for the fund-assistant data.

    python -m tasks.fund_assistant generate --out DIR [--seed S]
    python -m tasks.fund_assistant audit --n 50 [--seed S] [--data DIR]

Owns argument parsing and file layout (DIR/train.jsonl, DIR/eval.jsonl, DIR/meta.json). Errors are
reported as one line on stderr with a non-zero exit status, never as a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tasks.fund_assistant.audit import audit_report, counts_table, meta
from tasks.fund_assistant.data import DataError, load_jsonl, save_jsonl
from tasks.fund_assistant.generator import generate


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tasks.fund_assistant", description="Fund-assistant data tools."
    )
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write DIR/train.jsonl, DIR/eval.jsonl and DIR/meta.json")
    g.add_argument("--out", required=True, type=Path, help="output folder (created if missing)")
    g.add_argument("--seed", type=int, default=0, help="generation seed (default 0)")
    g.add_argument("--n-single", type=_positive, default=454, help="single-step rows (default 454)")
    g.add_argument("--n-multistep", type=_positive, default=823, help="expanded multistep rows (default 823)")
    g.add_argument(
        "--eval-fraction", type=_fraction, default=0.2, help="share of scenarios held out (default 0.2)"
    )
    a = sub.add_parser("audit", help="print a random sample per category for a person to check the labels")
    a.add_argument(
        "--n", type=_positive, default=50, help="rows to show in all, spread over categories (default 50)"
    )
    a.add_argument(
        "--seed", type=int, default=0, help="generation seed when --data is not given, and sampling seed"
    )
    a.add_argument("--data", type=Path, help="a folder written by `generate` (default: generate in memory)")
    a.add_argument("--split", choices=("train", "eval", "all"), default="all", help="which split to sample")
    return p


def _generate(args: argparse.Namespace) -> None:
    train, eval_ = generate(args.seed, args.n_single, args.n_multistep, args.eval_fraction)
    out: Path = args.out
    save_jsonl(train, out / "train.jsonl")
    save_jsonl(eval_, out / "eval.jsonl")
    splits = {"train": train, "eval": eval_}
    (out / "meta.json").write_text(
        json.dumps(meta(splits, args.seed), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    print(counts_table(splits))
    print(f"wrote {out / 'train.jsonl'}, {out / 'eval.jsonl'}, {out / 'meta.json'}")


def _audit(args: argparse.Namespace) -> None:
    if args.data is not None:
        splits = {name: load_jsonl(args.data / f"{name}.jsonl") for name in ("train", "eval")}
    else:
        train, eval_ = generate(args.seed)
        splits = {"train": train, "eval": eval_}
    rows = splits[args.split] if args.split != "all" else splits["train"] + splits["eval"]
    print(audit_report(rows, args.n, args.seed))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # bad arguments: usage + message, exit status 2
    try:
        {"generate": _generate, "audit": _audit}[args.command](args)
    except (DataError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

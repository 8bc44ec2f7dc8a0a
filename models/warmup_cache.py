"""A warm-up trained once is reused by every later run of the same inputs.

The SFT warm-up is deterministic on one machine: the same base model, tokenizer, examples, settings,
seed, thread count and code give the same weights, byte for byte. Training it again is time spent for
nothing (the agent preset's takes 13-19 minutes of a 21-30 minute run on 2 cores), and comparing
pipelines or RL settings from one warm-up is exactly what a user sweeps. So the finished warm-up model is
kept under the cache root (`models.tiny.cache_root()`, `warmups/<key>/`), keyed by a hash of everything
it depends on; a run whose key is there copies that model into its own run directory. Copies, not hard
links: a later warm-up written into the same run directory would otherwise rewrite the cached file.

The key covers: the base model's and the tokenizer's files (their bytes), the examples, the drill and its
answer rows, the entity swaps, every setting passed to `learner.warmup.sft_warmup`, the thread count,
the source of the packages it runs (`learner`, `algo`), the torch and transformers versions and this
machine's CPU model. Results differ across CPU models, so an entry made on one is never used on another.
"""

from __future__ import annotations

import hashlib
import json
import logging
import platform
import shutil
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from models.tiny import cache_root, publish

log = logging.getLogger(__name__)

CACHE_VERSION = 1
_CODE_PACKAGES = ("learner", "algo")  # what the warm-up runs: its loop, sequences, swaps, schedule


def warmup_key(inputs: dict[str, Any], model_dirs: tuple[str, str]) -> str:
    """A hash of the warm-up's `inputs` (its examples and settings, JSON-able or dataclasses of such),
    the files of `model_dirs` (base model, tokenizer) and what runs it (code, library versions, CPU)."""
    import torch
    import transformers

    h = hashlib.sha256()
    runs_on = {"v": CACHE_VERSION, "torch": torch.__version__, "transformers": transformers.__version__,
               "cpu": _cpu_model(), "machine": platform.machine()}
    h.update(json.dumps(runs_on, sort_keys=True).encode())
    h.update(json.dumps(inputs, sort_keys=True, default=_plain).encode())
    for d in model_dirs:
        _hash_tree(h, Path(d))
    root = Path(__file__).resolve().parent.parent
    for pkg in _CODE_PACKAGES:
        _hash_tree(h, root / pkg, "*.py")
    return h.hexdigest()[:20]


def reuse(key: str, out_dir: str) -> dict | None:
    """Put the cached warm-up `key` at `out_dir` and return its stats, or None when there is none (an
    entry without its completion mark, left by a run that died while storing it, counts as none)."""
    entry = cache_root() / "warmups" / key
    if not (entry / "DONE").exists():
        return None
    stats = json.loads((entry / "stats.json").read_text())
    shutil.copytree(entry / "model", out_dir, dirs_exist_ok=True)
    log.info("warm-up %s reused from %s", key, entry)
    return stats


def keep(key: str, out_dir: str, stats: dict) -> None:
    """Store the warm-up model at `out_dir` with its `stats` as entry `key` (`models.tiny.publish`: never
    half an entry that looks whole). A failure to store (a full disk) is logged; the run goes on."""
    entry = cache_root() / "warmups" / key
    if (entry / "DONE").exists():
        return

    def fill(tmp: Path) -> None:
        shutil.copytree(out_dir, tmp / "model")
        (tmp / "stats.json").write_text(json.dumps(stats, sort_keys=True))

    try:
        publish(entry, fill)
    except OSError as e:
        log.warning("warm-up %s not cached: %s", key, e)


def _hash_tree(h: Any, root: Path, pattern: str = "*") -> None:
    for path in sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"a warm-up input of type {type(value).__name__} cannot be part of the cache key")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()

"""The fund-assistant task: six tools, a simulated account, a labelled data generator and its audit.

Public entry points:
    generate(seed, n_single, n_multistep_samples, eval_fraction) -> (train, eval)
    apply_seed_label_bug(rows)            # the field report's wrong combo labels, for ablations
    load_jsonl(path) / save_jsonl(rows, path), DataError, CATEGORIES
Label policy: LABELS.md beside this file.
"""

from tasks.fund_assistant.data import CATEGORIES, DataError, category_counts, load_jsonl, save_jsonl
from tasks.fund_assistant.generator import apply_seed_label_bug, generate

__all__ = [
    "CATEGORIES",
    "DataError",
    "apply_seed_label_bug",
    "category_counts",
    "generate",
    "load_jsonl",
    "save_jsonl",
]

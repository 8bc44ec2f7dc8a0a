"""A tokenizer from a folder, without importing the rest of transformers when it is not needed.

`AutoTokenizer` imports transformers' model registry (and torch with it): about 8 s of CPU on these
machines, paid by the driver's pre-start check and by the coordinator before any role can start, which
only tokenize. A folder that holds a plain `tokenizers` tokenizer (`tokenizer.json`, its config naming
the `TokenizersBackend` class, and no `config.json` that could make AutoTokenizer pick a model's own
class: docs/platform.md#tokenizer-trap) is loaded with that class directly, about 1.3 s; that is the
class AutoTokenizer returns for it. Anything else goes through AutoTokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PLAIN = "TokenizersBackend"  # transformers 5's class for a tokenizer.json with no Python-side rules


def load_tokenizer(folder: str | Path) -> Any:
    """The tokenizer saved in `folder` (a local folder or a hub id, offline)."""
    if plain_class(folder) == PLAIN:
        from transformers.tokenization_utils_tokenizers import TokenizersBackend

        return TokenizersBackend.from_pretrained(str(folder))
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(folder))


def plain_class(folder: str | Path) -> str | None:
    """The class named by the folder's tokenizer config when the folder is a bare tokenizer (a
    tokenizer.json and no model config.json), else None."""
    path = Path(folder)
    config = path / "tokenizer_config.json"
    if not (path / "tokenizer.json").is_file() or not config.is_file() or (path / "config.json").exists():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("tokenizer_class")
    except (OSError, ValueError):
        return None

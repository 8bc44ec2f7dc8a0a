"""load_tokenizer: the tiny tokenizer without transformers' model registry, identical to AutoTokenizer's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from models.tokenizers import PLAIN, load_tokenizer, plain_class


def test_the_tiny_tokenizer_loads_as_autotokenizer_would(tiny_paths, fund_task):
    from transformers import AutoTokenizer

    folder = tiny_paths.tokenizer_dir
    fast, auto = load_tokenizer(folder), AutoTokenizer.from_pretrained(folder)
    assert type(fast) is type(auto) and type(fast).__name__ == PLAIN
    rows = fund_task.rows()[0][:20]
    for row in rows:  # the prompts the coordinator renders, token for token
        text = fund_task.render_prompt(fast, row)
        assert text == fund_task.render_prompt(auto, row)
        assert _ids(fast, text) == _ids(auto, text)
    same = lambda tok: (tok.eos_token_id, tok.pad_token_id, len(tok))  # noqa: E731
    assert same(fast) == same(auto)


def _ids(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def test_it_does_not_import_the_model_registry(tiny_paths):
    code = ("import sys; from models.tokenizers import load_tokenizer; "
            f"load_tokenizer({str(tiny_paths.tokenizer_dir)!r}); "
            "print('torch' in sys.modules, 'transformers.models.auto.modeling_auto' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_folder_with_a_model_config_goes_through_autotokenizer(tiny_paths, tmp_path):
    """With a config.json beside it AutoTokenizer may pick the model's own class (the tokenizer trap):
    that choice is AutoTokenizer's to make, not a shortcut's."""
    folder = tmp_path / "tok"
    shutil.copytree(tiny_paths.tokenizer_dir, folder)
    assert plain_class(folder) == PLAIN
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    assert plain_class(folder) is None
    assert plain_class(tmp_path / "nowhere") is None

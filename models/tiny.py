"""A deterministic, offline tiny Qwen2 and a byte-level BPE tokenizer trained on the task's own text.

Owns: building, caching and locating the tiny model. Knows nothing about training or about any task:
the caller passes the task's text (`Task.corpus`) and the strings that must be single tokens
(`Task.vocabulary`). The tokenizer lives in its own folder with no config.json: with transformers 5 a
folder whose config.json says `model_type: qwen2` silently yields Qwen2Tokenizer (different digit
splitting; docs/platform.md#tokenizer-trap). Callers pass `tokenizer=<dir>` to vLLM and AutoTokenizer.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from configs.model import TinyModelConfig
from models.resolve import ModelPaths

log = logging.getLogger(__name__)

BUILDER_VERSION = 3
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def cache_root() -> Path:
    """Absolute, persistent cache (a Ray job's working dir is fresh each time)."""
    return Path(os.environ.get("NGRPO_CACHE", Path.home() / ".cache" / "ngrpo-ray")).resolve()


def _build_key(cfg: TinyModelConfig, corpus: list[str], vocabulary: list[str]) -> str:
    """Changes whenever the shape, the builder or the task's text changes (the tokenizer depends on it)."""
    h = hashlib.sha256(json.dumps({"v": BUILDER_VERSION, "cfg": cfg.model_dump(), "vocab": vocabulary},
                                  sort_keys=True).encode())
    for text in corpus:
        h.update(text.encode())
    return h.hexdigest()[:12]


def train_tokenizer(texts: Iterable[str], vocab_size: int, out_dir: Path,
                    vocabulary: Iterable[str] = ()) -> None:
    """Byte-level BPE over `texts`, plus each string of `vocabulary` as one added token, saved as a fast
    tokenizer with a chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer=trainer)
    tok.add_tokens([AddedToken(word, single_word=False, normalized=False) for word in vocabulary])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(out_dir)


def build_model(cfg: TinyModelConfig, tokenizer_dir: Path, out_dir: Path) -> None:
    """Random-weight Qwen2 with tied embeddings, saved in safetensors with an explicit lm_head."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    conf = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        torch_dtype="float32",
    )
    torch.manual_seed(cfg.seed)
    model = Qwen2ForCausalLM(conf)
    model.save_pretrained(out_dir)


def ensure_tiny_model(
    cfg: TinyModelConfig, corpus: list[str], vocabulary: list[str] | None = None
) -> ModelPaths:
    """Build the tiny model for a task's text on first use (about a second); afterwards return the
    cached paths (the cache key covers the shape, the corpus and the vocabulary).

    >>> paths = ensure_tiny_model(TinyModelConfig(), ["user\\nhello", "assistant\\n{}"] * 50)
    >>> (paths.model_dir / "config.json").exists(), (paths.tokenizer_dir / "config.json").exists()
    (True, False)
    """
    vocabulary = list(vocabulary or [])
    root = cache_root() / f"tiny-{_build_key(cfg, corpus, vocabulary)}"
    paths = ModelPaths(root / "model", root / "tokenizer")
    if (root / "DONE").exists():
        return paths

    def fill(tmp: Path) -> None:
        train_tokenizer(corpus, cfg.vocab_size, tmp / "tokenizer", vocabulary)
        build_model(cfg, tmp / "tokenizer", tmp / "model")

    publish(root, fill)  # concurrent builders (several actors) never see half a model
    log.info("built tiny model at %s", root)
    return paths


def publish(dest: Path, fill: Callable[[Path], None]) -> None:
    """Make a cache entry: `fill` a temp dir beside `dest`, mark it DONE, rename it to `dest`. Readers
    trust only entries with the mark, so a concurrent builder or a crash never leaves half an entry that
    looks whole; an unmarked one at `dest` is replaced. When another builder won the race, theirs (the
    same content) stays."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f"{dest.name}-build-", dir=dest.parent))
    try:
        fill(tmp)
        (tmp / "DONE").write_text("ok\n")
        if dest.exists() and not (dest / "DONE").exists():
            shutil.rmtree(dest, ignore_errors=True)
        try:
            os.rename(tmp, dest)
        except OSError:  # another builder won the race
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

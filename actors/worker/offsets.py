"""Where each sampled token lies in the decoded completion text, in one pass over the tokens.

DART token weights need, per completion token, its character span in the text (to tell thought tokens
from action tokens). Decoding every prefix of a completion costs T decodes of growing length
(quadratic); a byte-level BPE tokenizer (GPT-2, Qwen, Llama 3, the tiny model's) makes one pass
enough: each token is a fixed byte string, and an incremental UTF-8 decoder says how many characters
each token completes. A character split over two tokens belongs to the token that completes it.

>>> from transformers import AutoTokenizer  # doctest: +SKIP
>>> token_char_offsets(tok, ids)            # doctest: +SKIP
[(0, 1), (1, 9), (9, 10), ...]
"""

from __future__ import annotations

import codecs
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=1)
def _unicode_to_byte() -> dict[str, int]:
    """The byte-level BPE alphabet: printable bytes stand for themselves, the other 68 byte values are
    shifted to code points from 256 up, in byte order (the GPT-2 convention every byte-level BPE uses)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shifted = {}, 0
    for b in range(256):
        if b in keep:
            table[chr(b)] = b
        else:
            table[chr(256 + shifted)] = b
            shifted += 1
    return table


def is_byte_level(tokenizer: Any) -> bool:
    """Whether `tokenizer` is a fast tokenizer whose decoder is byte-level BPE."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    return backend is not None and type(backend.decoder).__name__ == "ByteLevel"


def _token_bytes(tokenizer: Any, ids: list[int]) -> list[bytes]:
    """Each token's bytes in the text `decode(ids, skip_special_tokens=True)` gives."""
    special = set(tokenizer.all_special_ids)
    added = tokenizer.added_tokens_decoder  # id → AddedToken: stored as written, not byte-mapped
    table = _unicode_to_byte()
    out = []
    for tid, piece in zip(ids, tokenizer.convert_ids_to_tokens(ids)):
        if tid in special or (tid in added and added[tid].special):  # (a chat template's <|im_start|>)
            out.append(b"")
        elif tid in added:
            out.append(added[tid].content.encode("utf-8"))
        else:
            out.append(bytes(table[ch] for ch in piece))
    return out


def token_char_offsets(tokenizer: Any, ids: list[int]) -> list[tuple[int, int]]:
    """`(start, end)` character span of each token of `ids` in `decode(ids, skip_special_tokens=True)`.

    One pass for byte-level tokenizers; others fall back to decoding each prefix (quadratic)."""
    if not is_byte_level(tokenizer):
        return _prefix_offsets(tokenizer, ids)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    spans, pos = [], 0
    for piece in _token_bytes(tokenizer, ids):
        end = pos + len(decoder.decode(piece))
        spans.append((pos, end))
        pos = end
    tail = len(decoder.decode(b"", final=True))  # bytes of an unfinished character at the very end
    if spans and tail:
        spans[-1] = (spans[-1][0], pos + tail)
    return spans


def _prefix_offsets(tokenizer: Any, ids: list[int]) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for k in range(len(ids)):
        end = max(pos, len(tokenizer.decode(ids[: k + 1], skip_special_tokens=True)))
        spans.append((pos, end))
        pos = end
    return spans

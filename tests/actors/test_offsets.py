"""Token character offsets in one pass agree with decoding every prefix (the slow way they replace)."""

from __future__ import annotations

import random

from actors.worker.offsets import _prefix_offsets, is_byte_level, token_char_offsets


def test_one_pass_offsets_match_prefix_decoding(tiny_tokenizer, fund_task):
    tok = tiny_tokenizer
    assert is_byte_level(tok)
    rows = fund_task.rows()[0]
    rng = random.Random(0)
    texts = [r["solution"] for r in rng.sample(rows, 60)] + [r["prompt"] for r in rng.sample(rows, 20)]
    for text in texts:  # Chinese and English, tool names (added tokens), an end-of-turn token
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        fast, slow = token_char_offsets(tok, ids), _prefix_offsets(tok, ids)
        decoded = tok.decode(ids, skip_special_tokens=True)
        assert fast[-1][1] == len(decoded) and fast[-1][0] == fast[-1][1]  # <|im_end|> has no text
        assert "".join(decoded[a:b] for a, b in fast) == decoded
        # Where a token ends on a whole character both ways agree; a character split over two tokens
        # belongs to the token that completes it (prefix decoding shows a replacement char instead).
        ends_fast = {b for _, b in fast}
        assert {b for _, b in slow
                if "\ufffd" not in tok.decode(ids[: 1 + [e for _, e in slow].index(b)])} <= ends_fast


def test_random_token_sequences_cover_the_text(tiny_tokenizer):
    rng = random.Random(1)
    for _ in range(50):
        ids = [rng.randrange(len(tiny_tokenizer)) for _ in range(rng.randrange(1, 40))]
        spans = token_char_offsets(tiny_tokenizer, ids)
        assert len(spans) == len(ids)
        assert all(a <= b for a, b in spans) and all(s[1] == t[0] for s, t in zip(spans, spans[1:]))
        assert spans[-1][1] == len(tiny_tokenizer.decode(ids, skip_special_tokens=True))


def test_a_chat_template_s_turn_markers_have_no_text(tiny_tokenizer):
    """An agent episode's ids hold the template's turn markers (<|im_start|> is an added special token,
    not always among `all_special_ids`): they take no character, as decoding drops them."""
    tok = tiny_tokenizer
    said = [{"role": "user", "content": "查余额"}, {"role": "assistant", "content": '{"thought": "t"}'},
            {"role": "tool", "content": "余额 100 元"}]
    ids = tok(tok.apply_chat_template(said, tokenize=False), add_special_tokens=False)["input_ids"]
    decoded = tok.decode(ids, skip_special_tokens=True)
    spans = token_char_offsets(tok, ids)
    assert spans[-1][1] == len(decoded) and "".join(decoded[a:b] for a, b in spans) == decoded
    marker = tok.convert_tokens_to_ids("<|im_start|>")
    assert all(a == b for t, (a, b) in zip(ids, spans) if t == marker)

"""DART token weights: the tolerant field scanner and the offset mapping."""

from algo.token_weights import dart_token_weights, field_spans, turn_token_weights


def value(text, field):
    a, b = field_spans(text)[field]
    return text[a:b]


def char_tokens(text):
    return [(i, i + 1) for i in range(len(text))]


def test_well_formed():
    text = (
        '{"thought": "need balance first", "action": {"tool": "check_balance", "params": {}}, "plan": ["a"]}'
    )
    assert value(text, "thought") == "need balance first"
    assert value(text, "action") == '{"tool": "check_balance", "params": {}}'


def test_weights_per_character_token():
    text = '{"thought": "ab", "action": {"t": 1}, "plan": []}'
    w = dart_token_weights(text, char_tokens(text))
    t0 = text.index('"ab"') + 1
    assert w[t0 : t0 + 2] == [0.3, 0.3]
    assert w[t0 - 1] == 1.0 and w[t0 + 2] == 1.0  # the quotes are not part of the thought
    a0 = text.index('{"t"')
    assert w[a0 : a0 + len('{"t": 1}')] == [0.7] * len('{"t": 1}')
    assert w[text.index("plan")] == 1.0
    assert w[0] == 1.0 and w[-1] == 1.0
    assert sum(x == 0.3 for x in w) == 2


def test_escaped_quotes_and_decoy_keys_inside_thought():
    text = '{"thought": "say \\"action\\": {\\"tool\\"} \\\\", "action": {"tool": "x", "note": "}"}}'
    assert value(text, "thought") == 'say \\"action\\": {\\"tool\\"} \\\\'
    assert value(text, "action") == '{"tool": "x", "note": "}"}'


def test_nested_keys_are_not_top_level():
    text = '{"action": {"tool": "x", "params": {"thought": "nested"}}, "thought": "real"}'
    assert value(text, "thought") == "real"


def test_truncated_thought_runs_to_end():
    text = '{"thought": "I should first check the bal'
    assert value(text, "thought") == "I should first check the bal"
    assert "action" not in field_spans(text)
    w = dart_token_weights(text, [(0, 12), (12, 30), (30, len(text))])
    assert w == [1.0, 0.3, 0.3]


def test_truncated_action_runs_to_end():
    text = '{"thought": "t", "action": {"tool": "transfer_fu'
    assert value(text, "action") == '{"tool": "transfer_fu'


def test_malformed_text_never_raises():
    malformed = [
        "", "not json", '{"thought"', '{"thought":', '"thought": "x"', "{{{", '}}}"',
        '{"action": "check_balance"}', '```json\n{"thought": "x", "action": {"tool": "y"}}\n```',
        '{"thought": 12, "action": null}',
    ]
    for text in malformed:
        w = dart_token_weights(text, char_tokens(text))
        assert len(w) == len(text)
    assert value('"thought": "x"', "thought") == "x"  # no outer braces
    assert value('{"action": "check_balance"}', "action") == "check_balance"
    assert value('{"thought": 12, "action": null}', "thought") == "12"


def test_merged_tokens_and_special_tokens():
    text = '{"thought": "hi", "action": {"tool": "x"}}'
    start = text.index('hi"')
    # One token covers 'i", "action": {' : straddles both spans -> action weight.
    straddle = (start + 1, text.index("{", 2) + 1)
    offsets = [(0, 0), (0, start), straddle, (len(text) - 1, len(text))]
    w = dart_token_weights(text, offsets, thought_weight=0.1, action_weight=0.9)
    assert w == [1.0, 1.0, 0.9, 1.0]


def test_custom_weights_and_empty_thought():
    text = '{"thought": "", "action": {}}'
    w = dart_token_weights(text, char_tokens(text), thought_weight=0.0, action_weight=2.0, other_weight=0.5)
    assert 0.0 not in w  # an empty thought has no tokens
    assert w.count(2.0) == 2  # the braces of {}


def episode():
    """Two assistant turns around a tool observation (which has a ``thought`` key of its own), per
    character tokens, with a zero-width special token closing each turn: (text, offsets, mask, turns)."""
    turns = ['{"thought": "ab", "action": {"tool": "x"}}', '{"thought": "cde", "action": {"tool": "yz"}}']
    obs = '\n{"thought": "obs", "balance": 3}\n'
    text, offsets, mask = "", [], []
    for k, piece in enumerate([turns[0], obs, turns[1]]):
        sampled = int(k != 1)
        offsets += [(len(text) + i, len(text) + i + 1) for i in range(len(piece))]
        mask += [sampled] * len(piece)
        text += piece
        if sampled:  # <|im_end|>: no text
            offsets.append((len(text), len(text)))
            mask.append(1)
    return text, offsets, mask, turns


def test_each_turn_gets_its_own_thought_and_action():
    text, offsets, mask, turns = episode()
    w = turn_token_weights(text, offsets, mask)
    assert len(w) == len(offsets)
    second = len(text) - len(turns[1])
    for turn, at in ((turns[0], 0), (turns[1], second)):
        first = next(k for k, (a, _) in enumerate(offsets) if a == at)
        got = w[first : first + len(turn)]
        assert got == dart_token_weights(turn, char_tokens(turn))
        t0 = turn.index('"thought": "') + len('"thought": "')
        assert got[t0 : turn.index('", "action"')] == [0.3] * (turn.index('", "action"') - t0)
        a0 = turn.index('{"tool"')
        assert got[a0 : len(turn) - 1] == [0.7] * (len(turn) - 1 - a0)
        assert w[first + len(turn)] == 1.0  # the special token closing the turn
    # Over the whole episode the scanner finds the first turn's fields only: the second turn's are lost.
    whole = dart_token_weights(text, offsets)
    assert 0.3 not in whole[next(k for k, (a, _) in enumerate(offsets) if a == second) :]


def test_observation_tokens_weigh_zero():
    text, offsets, mask, _ = episode()
    w = turn_token_weights(text, offsets, mask, other_weight=2.0)
    assert [x for x, m in zip(w, mask) if not m] == [0.0] * mask.count(0)
    assert 0.0 not in [x for x, m in zip(w, mask) if m]


def test_a_single_turn_is_dart_token_weights():
    text, offsets, _, _ = episode()
    ones = [1] * len(offsets)
    assert turn_token_weights(text, offsets, ones) == dart_token_weights(text, offsets)
    merged = '{"thought": "hi", "action": {"tool": "x"}}'
    spans = [(0, 0), (0, 12), (12, 20), (20, 30), (30, 42), (42, 42)]
    assert (turn_token_weights(merged, spans, [1] * 6, thought_weight=0.1, action_weight=0.9)
            == dart_token_weights(merged, spans, thought_weight=0.1, action_weight=0.9))


def test_an_empty_sample_has_no_weights():
    assert turn_token_weights("", [], []) == []

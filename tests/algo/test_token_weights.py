"""DART token weights: the tolerant field scanner and the offset mapping."""

from algo.token_weights import dart_token_weights, field_spans


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

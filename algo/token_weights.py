"""DART-style token weights (docs/algorithm.md#dart-token-weights): reasoning tokens and tool-call tokens
weigh differently.

Owns: finding where the ``thought`` string and the ``action`` value lie in a completion's text, and
mapping those character spans onto tokens via their character offsets; an agent episode, several
assistant turns between tool observations, is weighted turn by turn. Does not know about tokenizers
(the caller passes offsets, e.g. a fast tokenizer's ``offset_mapping``) nor about the loss.

The scanner is tolerant: it never raises on malformed or truncated JSON. A ``thought`` string cut off by
the length limit runs to the end of the text; an ``action`` object missing its closing brace likewise.

Example:
    >>> text = '{"thought": "hi", "action": {"tool": "x"}}'
    >>> field_spans(text)
    {'thought': (13, 15), 'action': (28, 41)}
    >>> dart_token_weights(text, [(0, 12), (12, 16), (16, 28), (28, 41), (41, 42)])
    [1.0, 0.3, 1.0, 0.7, 1.0]
"""

from __future__ import annotations

from collections.abc import Sequence

_WS = " \t\r\n"


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in _WS:
        i += 1
    return i


def _string_end(text: str, i: int) -> int:
    """Index of the closing quote of the string whose opening quote is at ``i - 1``, or len(text)."""
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2  # an escape: the next character cannot close the string
            continue
        if c == '"':
            return i
        i += 1
    return len(text)


def _value_span(text: str, i: int) -> tuple[int, int, int]:
    """``(start, end, resume)``: the span of the JSON value starting at (or after whitespace from) ``i``,
    and the index just past the value where scanning resumes.

    Strings span their content (quotes excluded); objects and arrays span brackets included, matched by
    depth while skipping strings; scalars run to the next ``,``, ``}``, ``]`` or newline. A value that is
    never closed runs to the end of the text.
    """
    i = _skip_ws(text, i)
    if i >= len(text):
        return (len(text), len(text), len(text))
    c = text[i]
    if c == '"':
        end = _string_end(text, i + 1)
        return (i + 1, end, end + 1)  # resume past the closing quote
    if c in "{[":
        depth, j = 0, i
        while j < len(text):
            ch = text[j]
            if ch == '"':
                j = _string_end(text, j + 1) + 1
                continue
            if ch in "{[":
                depth += 1
            elif ch in "}]":
                depth -= 1
                if depth == 0:
                    return (i, j + 1, j + 1)
            j += 1
        return (i, len(text), len(text))
    j = i
    while j < len(text) and text[j] not in ",}]\n":
        j += 1
    return (i, j, j)


def field_spans(text: str, fields: Sequence[str] = ("thought", "action")) -> dict[str, tuple[int, int]]:
    """Character spans ``[start, end)`` of the values of top-level ``fields`` in a JSON-ish completion.

    Scans strings and braces once, so a ``"action"`` inside the thought text (escaped or not) or nested in
    ``params`` is not mistaken for a key. Keys are accepted at depth 0 or 1 (a bare ``"thought": ...``
    fragment without the outer braces still works); the first occurrence wins. Missing fields are absent
    from the result.
    """
    wanted = set(fields)
    found: dict[str, tuple[int, int]] = {}
    depth, i = 0, 0
    while i < len(text) and len(found) < len(wanted):
        c = text[i]
        if c == '"':
            end = _string_end(text, i + 1)
            key = text[i + 1 : end]
            after = _skip_ws(text, end + 1)
            if after < len(text) and text[after] == ":" and depth <= 1:
                if key in wanted and key not in found:
                    start, stop, resume = _value_span(text, after + 1)
                    found[key] = (start, stop)
                    # Jump over the value: its insides are not top-level keys.
                    i = max(resume, after + 1)
                    continue
            i = end + 1
            continue
        if c in "{[":
            depth += 1
        elif c in "}]":
            depth = max(depth - 1, 0)
        i += 1
    return found


def dart_token_weights(
    text: str,
    offsets: Sequence[tuple[int, int]],
    thought_weight: float = 0.3,
    action_weight: float = 0.7,
    other_weight: float = 1.0,
) -> list[float]:
    """One weight per completion token: ``thought_weight`` inside the thought string, ``action_weight``
    inside the action value, ``other_weight`` elsewhere (keys, punctuation, ``plan``, special tokens).

    A token overlaps a span ``[a, b)`` when ``start < b and end > a``; a token overlapping both spans (a
    merged token straddling the boundary) gets the action weight, the tool call being the main task.
    Zero-width offsets such as ``(0, 0)`` for special tokens overlap nothing.

    Args:
        text: the decoded completion.
        offsets: ``(T,)`` ``(start, end)`` character spans per token into ``text``.

    Returns:
        ``T`` floats, to be stacked into the ``(B, T)`` ``token_weights`` of `policy_loss`.
    """
    spans = field_spans(text)

    def overlaps(tok: tuple[int, int], span: tuple[int, int] | None) -> bool:
        return span is not None and span[1] > span[0] and tok[0] < span[1] and tok[1] > span[0]

    thought, action = spans.get("thought"), spans.get("action")
    weights: list[float] = []
    for start, end in offsets:
        tok = (int(start), int(end))
        if overlaps(tok, action):
            weights.append(float(action_weight))
        elif overlaps(tok, thought):
            weights.append(float(thought_weight))
        else:
            weights.append(float(other_weight))
    return weights


def turn_token_weights(
    text: str,
    offsets: Sequence[tuple[int, int]],
    mask: Sequence[int],
    thought_weight: float = 0.3,
    action_weight: float = 0.7,
    other_weight: float = 1.0,
) -> list[float]:
    """DART weights for a multi-turn agent episode: each assistant turn weighted as a completion of its
    own, observation tokens 0.

    Every turn of an episode has its own ``thought`` and ``action``, but `field_spans` keeps the first
    occurrence of a key, so scanning the whole episode would weight only the first turn's; an observation
    (a tool's JSON answer) could also hold keys of its own. So each maximal run of 1s in ``mask`` (one
    turn) is scanned alone. A turn's text runs from the end of the last token with text before it to the
    start of the first one after it, so zero-width tokens (special tokens, dropped from ``text``) do not
    move its bounds, and text no token covers goes with the turn next to it: with a mask of all 1s the
    one turn is the whole text and the weights are exactly `dart_token_weights`'. Observation tokens
    (mask 0) were not sampled by the policy and are not trained on: their weight is 0.

    Args:
        text: the decoded episode completion (turns and observations, special tokens skipped).
        offsets: ``(T,)`` ``(start, end)`` character spans per token into ``text``.
        mask: ``(T,)`` loss mask: 1 on tokens the policy sampled, 0 on observation tokens.

    Returns:
        ``T`` floats, one row of the ``(B, T)`` ``token_weights`` of `policy_loss`.
    """
    spans = [(int(a), int(b)) for a, b in offsets]
    sampled = [bool(m) for m in mask]
    if len(sampled) != len(spans):
        raise ValueError(f"mask has {len(sampled)} entries for {len(spans)} tokens")
    weights = [0.0] * len(spans)
    i = 0
    while i < len(spans):
        if not sampled[i]:
            i += 1
            continue
        j = i
        while j < len(spans) and sampled[j]:
            j += 1
        # Tokens i..j-1 are one turn; its text lies between the nearest tokens with text around it.
        start = next((b for a, b in reversed(spans[:i]) if b > a), 0)
        end = next((a for a, b in spans[j:] if b > a), len(text))
        weights[i:j] = dart_token_weights(text[start:end], [(a - start, b - start) for a, b in spans[i:j]],
                                          thought_weight, action_weight, other_weight)
        i = j
    return weights

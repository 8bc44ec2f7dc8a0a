"""Entity swapping for the warm-up: each time a trajectory is drawn, its entities (a ticker, an account
id: single tokens of the task's interchangeable groups) are replaced consistently by others of their group.

Why: a warm-up of a few hundred rows drawn a few times each lets a random tiny model predict a row's
ticker from the rest of the row (memorised) instead of looking it up in the request; after the warm-up
it then writes one ticker for every request. With the entities redrawn on every draw the only way to
predict them is to copy them from where the request (or a tool's result) names them. Knows nothing of
any task: the groups are token ids.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

TokenExample = tuple[list[int], list[int], list[int]]
"""(prompt ids, completion ids, loss mask): a multi-turn target learned on its mask's 1s only."""


class EntitySwap:
    """Swaps within `groups` (lists of token ids; a token belongs to at most one group)."""

    def __init__(self, groups: Sequence[Sequence[int]]):
        self.groups = [list(g) for g in groups if len(g) > 1]
        self.group_of = {t: i for i, g in enumerate(self.groups) for t in g}
        if len(self.group_of) != sum(len(g) for g in self.groups):
            raise ValueError("entity swap: a token is in more than one group (or twice in one)")

    def __call__(self, example: TokenExample, rng: random.Random) -> TokenExample:
        """`example` with each distinct entity token mapped to a random member of its group, one to one
        (two different entities never become the same), the same everywhere in prompt and completion;
        the loss mask is unchanged."""
        prompt, completion, mask = example
        mapping: dict[int, int] = {}
        used: set[int] = set()
        for t in (*prompt, *completion):
            g = self.group_of.get(t)
            if g is None or t in mapping:
                continue
            members = self.groups[g]
            pick = members[rng.randrange(len(members))]
            while pick in used:  # ends: an example holds at most len(members) of them; a redraw is rare
                pick = members[rng.randrange(len(members))]
            mapping[t] = pick
            used.add(pick)
        if not mapping:
            return example
        return [mapping.get(t, t) for t in prompt], [mapping.get(t, t) for t in completion], mask

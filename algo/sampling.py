"""Which category (or kind: `train.adaptive_by`) the next RL prompt comes from, when
`train.sampling` is `adaptive`.

Values the policy still gets wrong get more prompts: each one's weight is ``floor + (1 - accuracy)``,
where accuracy is a moving average of its tool accuracy in recent steps (unmeasured values start at
0.5). Every value keeps at least ``floor`` so that a solved one is still rehearsed and a regression
shows up. A pure helper; the coordinator owns the random generator.

>>> t = CategoryAccuracy(["a", "b"], ema=0.5, floor=0.1)
>>> t.update({"a": 1.0, "b": 0.0})
>>> {c: round(w, 3) for c, w in t.weights().items()}
{'a': 0.35, 'b': 0.85}
"""

from __future__ import annotations

import math
from typing import Any


class CategoryAccuracy:
    def __init__(self, categories: list[str], ema: float, floor: float, start: float = 0.5) -> None:
        if not categories:
            raise ValueError("adaptive sampling needs at least one category")
        self.ema, self.floor = ema, floor
        self.acc = dict.fromkeys(sorted(categories), start)

    def update(self, accuracy: dict[str, Any]) -> None:
        """Fold one step's tool accuracy per value in (values not drawn this step keep theirs)."""
        for c in self.acc:
            v = accuracy.get(c)
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                self.acc[c] = (1 - self.ema) * self.acc[c] + self.ema * v

    def weights(self) -> dict[str, float]:
        return {c: self.floor + (1.0 - a) for c, a in self.acc.items()}

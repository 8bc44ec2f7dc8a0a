"""Which training rows the next RL step samples: shuffled epochs, category-balanced, or adaptive.

Owns the prompt order and its random generator. `shuffle` walks the rows in shuffled epochs;
`balanced` draws each prompt's category uniformly, then a row of it; `adaptive` draws the value of a
row column (`train.adaptive_by`: category, or the fund assistant's kind) with weight
`floor + (1 - recent accuracy)` (`algo.sampling.CategoryAccuracy`), then a row of it. Each queue is an
endless sequence of shuffled epochs. Deterministic for a seed.

>>> from configs.train import TrainConfig
>>> rows = [{"category": c} for c in "aab"]
>>> stream = PromptOrder(rows, TrainConfig(prompts_per_step=4, sampling="balanced"), seed=0)
>>> sorted(r["category"] for r in stream.next_rows())
['a', 'a', 'b', 'b']
"""

from __future__ import annotations

import random

from algo.sampling import CategoryAccuracy
from configs.train import TrainConfig

# Each value of `train.adaptive_by` becomes a metric, a TensorBoard tag and a Prometheus label: a
# free-text column (a prompt, an id) would make thousands of each.
MAX_ADAPTIVE_VALUES = 64


def adaptive_values(rows: list[dict], column: str) -> list[str]:
    """The sorted values of `column` that adaptive sampling weighs; ValueError when a row lacks it or
    when there are more than MAX_ADAPTIVE_VALUES of them (not a kind of row, a free-text column)."""
    missing = sum(1 for r in rows if not r.get(column))
    if missing:
        raise ValueError(f"train.adaptive_by={column!r}: {missing} of {len(rows)} training rows have no "
                         f"{column!r}; name a column every row has, or set train.sampling=shuffle")
    values = sorted({r[column] for r in rows})
    if len(values) > MAX_ADAPTIVE_VALUES:
        raise ValueError(f"train.adaptive_by={column!r}: the column has {len(values)} distinct values, "
                         f"at most {MAX_ADAPTIVE_VALUES} are allowed (each one is a metric); "
                         "name a column of row kinds")
    return values


class PromptOrder:
    def __init__(self, rows: list[dict], cfg: TrainConfig, seed: int, group_column: str = "category") -> None:
        if not rows:
            raise ValueError("no training rows to sample prompts from")
        self.rows, self.cfg, self.group_column = rows, cfg, group_column
        self.rng = random.Random(seed)
        self._queues: dict[tuple[str, str] | None, list[int]] = {}
        self._cat_order: list[str] = []
        self.accuracy: CategoryAccuracy | None = None  # adaptive sampling's moving accuracy per value
        if cfg.sampling == "adaptive":
            values = adaptive_values(rows, cfg.adaptive_by)
            self.accuracy = CategoryAccuracy(values, cfg.adaptive_ema, cfg.adaptive_floor)

    def next_rows(self) -> list[dict]:
        """The rows of the next step (`train.prompts_per_step` of them)."""
        n, column = self.cfg.prompts_per_step, self.group_column
        if self.cfg.sampling == "balanced":
            return [self._draw(column, self._next_value()) for _ in range(n)]
        if self.accuracy is not None:
            w = self.accuracy.weights()
            chosen = self.rng.choices(list(w), weights=list(w.values()), k=n)
            return [self._draw(self.cfg.adaptive_by, v) for v in chosen]
        return [self._draw(column, None) for _ in range(n)]

    def observe(self, accuracy_by_value: dict[str, float]) -> dict[str, float]:
        """Fold a step's accuracy per `adaptive_by` value in; returns the new sampling weights ({} when
        sampling is not adaptive)."""
        if self.accuracy is None:
            return {}
        self.accuracy.update(accuracy_by_value)
        return self.accuracy.weights()

    def state_dict(self) -> dict:
        """Everything that decides the next draws (JSON-safe): the generator, the queues, the balanced
        round, the adaptive accuracies. A copy: later draws do not change it (a run stopped inside a step
        checkpoints the state it had before that step's draw)."""
        version, internal, gauss = self.rng.getstate()
        return {
            "rng": [version, list(internal), gauss],
            "queues": [[*(k or (None, None)), list(q)] for k, q in self._queues.items()],
            "cat_order": list(self._cat_order),
            "accuracy": dict(self.accuracy.acc) if self.accuracy is not None else None,
        }

    def load_state_dict(self, state: dict) -> None:
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self._queues = {((c, v) if c is not None else None): list(q) for c, v, q in state["queues"]}
        self._cat_order = list(state["cat_order"])
        if self.accuracy is not None and state["accuracy"] is not None:
            self.accuracy.acc = dict(state["accuracy"])

    def _next_value(self) -> str:
        """Balanced: the group values in shuffled rounds."""
        if not self._cat_order:
            self._cat_order = sorted({r[self.group_column] for r in self.rows})
            self.rng.shuffle(self._cat_order)
        return self._cat_order.pop()

    def _draw(self, column: str, value: str | None) -> dict:
        """The next row whose `column` is `value` (None: any row)."""
        queue = self._queues.setdefault((column, value) if value is not None else None, [])
        if not queue:
            queue += [i for i, r in enumerate(self.rows) if value is None or r.get(column) == value]
            self.rng.shuffle(queue)
        return self.rows[queue.pop()]

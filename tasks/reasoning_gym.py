"""reasoning-gym's procedural datasets as a task, by name: a weighted mix, each with its own config,
scored by each dataset's own `score_answer`.

    task:
      name: reasoning_gym
      options:
        datasets:
          chain_sum: {weight: 2, config: {min_terms: 2, max_terms: 2, max_digits: 1}}
          letter_counting: {config: {min_words: 3, max_words: 5}}
        size: 2000            # training rows
        eval_size: 200        # held-out rows, reported per dataset
    reward:
      functions: [{name: reasoning_gym}]

The answer format: the model ends its answer with `<answer>...</answer>`; the scorer reads the text of
the last such tag (`reasoning_gym.utils.extract_answer`) and a completion without one scores 0. The
system prompt says so, and the warm-up teaches it (its targets are `<answer>{gold}</answer>`).

Reproducible and disjoint: a dataset's entry i of seed s is drawn from `Random(s + i)`, so entry i of
seed s is entry i + 1 of seed s - 1. Training rows of dataset d use seeds from `base(d)`, held-out rows
from `base(d) + size + HELD_OUT_GAP`: the two ranges of per-entry seeds never meet. Easy configs repeat
questions, so a held-out row whose question is also a training question is dropped (and one more is
drawn in its place).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from configs.base import Section
from configs.loader import ConfigError
from tasks.base import Task

HELD_OUT_GAP = 1_000_003
SYSTEM = "Answer the question. End with the final answer inside <answer></answer>, e.g. <answer>42</answer>."


class DatasetSpec(Section):
    """One reasoning-gym dataset of the mix."""

    weight: float = Field(1.0, gt=0, le=1e6)
    """Its share of the rows (weights are normalised over the mix)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The dataset's own config (`reasoning_gym.create_dataset(name, **config)`)."""


class ReasoningGymOptions(Section):
    """`task.options` of reasoning-gym."""

    datasets: dict[str, DatasetSpec]
    """Dataset name -> its weight and config."""
    size: int = Field(1000, ge=2, le=1_000_000)
    """Training rows in all (split over the mix by weight)."""
    eval_size: int = Field(100, ge=1, le=100_000)
    """Held-out rows in all (split over the mix by weight; none of their questions is a training one)."""
    system_prompt: str | None = SYSTEM
    """The system message (None: the question alone, as a user message)."""

    @field_validator("datasets")
    @classmethod
    def _known(cls, datasets: dict[str, DatasetSpec]) -> dict[str, DatasetSpec]:
        if not datasets:
            raise ValueError("name at least one reasoning-gym dataset")
        known = _names()
        unknown = sorted(set(datasets) - set(known))
        if unknown:
            raise ValueError(f"unknown reasoning-gym datasets {unknown} (known: {', '.join(known)})")
        return datasets


@functools.cache
def _names() -> list[str]:
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


def _base_seed(seed: int, name: str) -> int:
    """A dataset's first training seed: apart for every dataset of a mix, stable across runs."""
    return (seed * 7_919 + int(hashlib.sha256(name.encode()).hexdigest()[:6], 16)) % 2**30


def _counts(total: int, weights: dict[str, float]) -> dict[str, int]:
    """`total` rows split by weight (largest remainders), each dataset at least one."""
    s = sum(weights.values())
    exact = {k: total * w / s for k, w in weights.items()}
    counts = {k: max(1, int(v)) for k, v in exact.items()}
    for k in sorted(exact, key=lambda k: exact[k] - int(exact[k]), reverse=True):
        if sum(counts.values()) >= total:
            break
        counts[k] += 1
    return counts


class ReasoningGymTask(Task):
    """A weighted mix of reasoning-gym datasets; `accuracy` is the mean `score_answer`, per dataset."""

    name = "reasoning_gym"
    options_model = ReasoningGymOptions
    options: ReasoningGymOptions
    judge = "reasoning_gym"
    group_column = "dataset"
    label_columns = ("answer", "dataset", "entry")

    def rows(self) -> tuple[list[dict], list[dict]]:
        cache = self.__dict__.setdefault("_rows", {})
        if "rows" not in cache:
            cache["rows"] = self._draw()
        train, held = cache["rows"]
        return [dict(r) for r in train], [dict(r) for r in held]

    def _draw(self) -> tuple[list[dict], list[dict]]:
        import reasoning_gym

        o, train, held = self.options, [], []
        weights = {k: v.weight for k, v in o.datasets.items()}
        n_train, n_held = _counts(o.size, weights), _counts(o.eval_size, weights)
        for name, spec in o.datasets.items():
            base = _base_seed(self.cfg.seed, name)
            try:
                ds = reasoning_gym.create_dataset(name, size=n_train[name], seed=base, **spec.config)
                rows = [self._row(name, e) for e in ds]
                seen = {r["entry"]["question"] for r in rows}
                extra = reasoning_gym.create_dataset(name, size=4 * n_held[name] + 8,
                                                     seed=base + o.size + HELD_OUT_GAP, **spec.config)
            except (TypeError, ValueError, AssertionError) as e:
                raise ConfigError(f"task.options.datasets.{name}: {type(e).__name__}: {e}") from None
            fresh = [self._row(name, e) for e in extra if e["question"] not in seen]
            if len(fresh) < n_held[name]:
                raise ConfigError(f"task.options.datasets.{name}: only {len(fresh)} held-out questions are "
                                  f"not training questions (of {n_held[name]} wanted): the config repeats "
                                  "its questions; widen it, or lower task.options.size / eval_size")
            train += rows
            held += fresh[: n_held[name]]
        return train, held

    def _row(self, name: str, entry: dict) -> dict:
        # JSON-safe (a checkpoint keeps rows as JSON): tuples become lists, odd objects their text
        entry = json.loads(json.dumps(entry, default=str))
        user = {"role": "user", "content": entry["question"]}
        system = self.options.system_prompt
        prompt = [{"role": "system", "content": system}, user] if system else [user]
        return {"prompt": prompt, "answer": str(entry["answer"]), "dataset": name, "entry": entry}

    def vocabulary(self) -> list[str]:
        """The answer tags are single tokens of a tiny model's tokenizer (one decision each, not three)."""
        return ["<answer>", "</answer>"]

    def warmup_rows(self, rows: Sequence[dict]) -> list[dict]:
        """The gold answer in the answer format. A space opens it (the scorer strips the tag's text): a
        word then starts with the same token as where the question has it, mid-sentence."""
        return [{**r, "solution": f"<answer> {r['answer']}</answer>"} for r in rows]


@functools.cache
def _scorer(name: str):
    import reasoning_gym

    return reasoning_gym.get_score_answer_fn(name)


def score(completions: list, entry: list[dict], dataset: list[str], **kwargs: Any) -> list[float]:
    """Each dataset's own `score_answer` on the text of the completion's last `<answer>` tag (0.0
    without one)."""
    from reasoning_gym.utils import extract_answer

    from rewards.text import completion_text

    out = []
    for completion, e, name in zip(completions, entry, dataset, strict=True):
        answer = extract_answer(completion_text(completion) or "")
        out.append(0.0 if answer is None else float(_scorer(name)(answer, e)))
    return out

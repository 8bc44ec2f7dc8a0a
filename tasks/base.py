"""What the runtime needs from a task, and how a config names one.

A `Task` owns everything task-specific: its rows and their split, how a row becomes the policy's prompt,
which row columns its reward functions read, which reward says whether a sample is right (the
"judge") and under which breakdown key, the held-out eval table, the warm-up targets, and the text a
tokenizer for a tiny offline model is trained on. The runtime (coordinator, learner, rollout workers,
`evaluate.py`, `bench/`) talks to a task only through this class and `load_task`; no module outside
`tasks/` imports a task package (tests/test_import_graph.py enforces it).

A task is named in the config (`task.name`) and found here by import path, so this module imports no
task either. Its own options (`task.options`) are validated by the task's pydantic model before anything
starts.

>>> task = load_task(TaskConfig(name="fund_assistant", options={"n_single": 40, "n_multistep_samples": 40}))
>>> train, held_out = task.rows()
>>> sorted(task.label_columns)[:3], task.judge, task.correct_key
(['category', 'lang', 'num_steps'], 'gt', 'tool_correct')
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from configs.loader import ConfigError, explain
from configs.task import TaskConfig
from tasks.env import Environment

# name → "package.module:Class". Add a task of your own here (or give `task.name` as an import path).
TASKS: dict[str, str] = {"fund_assistant": "tasks.fund_assistant.task:FundAssistantTask"}


class Task(ABC):
    """One task: rows, prompts, rewards' label columns, the correct signal, eval and warm-up rows."""

    name: ClassVar[str]
    options_model: ClassVar[type[BaseModel]]
    """The pydantic model of `task.options` (extra keys forbidden)."""
    label_columns: ClassVar[tuple[str, ...]]
    """Row columns passed to reward functions as keyword lists (the label is `solution`)."""
    judge: ClassVar[str]
    """Reward name whose `breakdown` says whether a sample is right; it is always scored, for metrics."""
    correct_key: ClassVar[str]
    """Key of the judge's breakdown: 1.0 when the sample is right, else 0.0."""
    group_column: ClassVar[str] = "category"
    """Row column that metrics and the eval table are split by."""
    eval_keys: ClassVar[tuple[str, ...]] = ()
    """Scalar keys of the eval table, in the order the printed table shows them."""

    def __init__(self, cfg: TaskConfig, options: BaseModel) -> None:
        self.cfg, self.options = cfg, options

    @abstractmethod
    def rows(self) -> tuple[list[dict], list[dict]]:
        """(training rows, held-out rows): from `task.train_file` / `eval_file`, or generated."""

    @abstractmethod
    def load_rows(self, path: str) -> list[dict]:
        """Rows of a data file, validated (an error names the file and line of a bad row)."""

    @abstractmethod
    def render_prompt(self, tokenizer: Any, row: dict) -> str:
        """The prompt string the policy continues (chat template applied, assistant turn opened)."""

    @abstractmethod
    def evaluate(self, rows: Sequence[dict], texts: Sequence[str]) -> dict:
        """The eval table of greedy answers `texts` to `rows`: `eval_keys` scalars, `per_category`
        (accuracy per `group_column` value) and `n`, all rates in [0, 1]."""

    @abstractmethod
    def warmup_rows(self, rows: Sequence[dict]) -> list[dict]:
        """Rows whose `solution` is the SFT warm-up target for `prompt`."""

    @abstractmethod
    def corpus(self) -> list[str]:
        """Every kind of text the model sees in this task (a tiny model's tokenizer is trained on it)."""

    def vocabulary(self) -> list[str]:
        """Strings that must be single tokens in a tokenizer trained on `corpus` (e.g. tool names)."""
        return []

    # ---- agent episodes (`env.enabled`): tasks that have an environment override these ---------------
    def environment(self, max_turns: int) -> Environment:
        """A fresh environment for one multi-turn agent episode (`tasks.env`). Asking a task without
        one is a configuration error."""
        raise ConfigError(f"task {self.name!r} has no agent environment (see tasks.env)")

    def episode_rows(self) -> tuple[list[dict], list[dict]]:
        """(training, held-out) rows of episodes, each what `environment().reset` starts from and
        carrying `group_column`."""
        raise ConfigError(f"task {self.name!r} has no agent episodes (see tasks.env)")

    def episode_script(self, row: dict) -> list[str]:
        """The assistant turns of the warm-up's trajectory for `row` (the environment answers them)."""
        raise ConfigError(f"task {self.name!r} has no warm-up trajectories for agent episodes")

    def episode_drill(self, n: int) -> list[tuple[list[dict], str]]:
        """Up to `n` (messages, target) pairs for the warm-up's entity drill (`train.warmup.drill`): a
        request under an instruction of the drill's own, and as the target only what the calls must copy
        from it. None of them may be a held-out request."""
        raise ConfigError(f"task {self.name!r} has no entity drill for agent episodes")

    def episode_drill_rows(self, n: int) -> list[dict]:
        """Up to `n` episode rows of the drill's own random stream (none of them a held-out request):
        what the answer drill (`train.warmup.drill.answers`) plays the scripts of."""
        raise ConfigError(f"task {self.name!r} has no entity drill for agent episodes")

    def entity_groups(self) -> list[list[str]]:
        """Groups of interchangeable entities, each a single token of `episode_vocabulary` (a ticker for
        another of its market, an account id for another): what `train.warmup.swap_entities` redraws."""
        return []

    def episode_vocabulary(self) -> list[str]:
        """Strings that must be single tokens when the run trains on episodes (added to `vocabulary`)."""
        return []

    def episode_corpus(self) -> list[str]:
        """The episodes' text (system prompt, turns, observations), added to `corpus` for a tiny model's
        tokenizer when the run trains on episodes."""
        return []

    def tokenizer_text(self, episodes: bool = False) -> tuple[Callable[[], list[str]], list[str]]:
        """What a tiny model's tokenizer is built from (`models.tiny.resolve_model`): the text, called only
        when it is built, and the strings that must be single tokens; a run on episodes adds theirs."""
        if episodes:
            return ((lambda: self.corpus() + self.episode_corpus()),
                    self.vocabulary() + self.episode_vocabulary())
        return self.corpus, self.vocabulary()

    def columns(self, rows: Sequence[dict]) -> dict[str, list[Any]]:
        """The reward functions' keyword columns for `rows` (one list per label column present)."""
        return {k: [r.get(k) for r in rows] for k in self.label_columns if rows and k in rows[0]}


def task_class(name: str) -> type[Task]:
    """The Task class of a registered name or a 'package.module:Class' path."""
    path = TASKS.get(name, name)
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise ConfigError(f"task.name: unknown task {name!r} (known: {', '.join(sorted(TASKS))}, "
                          "or an import path 'package.module:Class')")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"task.name: cannot load {path!r} ({e})") from None
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ConfigError(f"task.name: {path!r} is not a tasks.base.Task subclass")
    return cls


def load_task(cfg: TaskConfig) -> Task:
    """The configured task with its options validated (a ConfigError names the bad option)."""
    cls = task_class(cfg.name)
    try:
        options = cls.options_model.model_validate(cfg.options)
    except ValidationError as e:
        raise ConfigError(explain(e, f"options of task {cfg.name!r}", "task.options",
                                  cls.options_model)) from None
    return cls(cfg, options)

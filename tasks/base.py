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

Only `rows` must be written: a task without an eval of its own is judged by its reward functions
(`tasks.judging`: the judge is the task's `judge`, else the first of `reward.functions`), a standard
prompt (a string) is given to the model as it is and a conversational one (a list of messages) through
the model's chat template, and rows are read from JSONL, JSON, Parquet, CSV or `save_to_disk` folders.

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

from configs.base import Section
from configs.loader import ConfigError, explain
from configs.task import TaskConfig
from tasks.env import Environment

# name → "package.module:Class". Add a task of your own here (or give `task.name` as an import path).
TASKS: dict[str, str] = {"fund_assistant": "tasks.fund_assistant.task:FundAssistantTask",
                         "dataset": "tasks.dataset:DatasetTask",
                         "reasoning_gym": "tasks.reasoning_gym:ReasoningGymTask"}


class NoOptions(Section):
    """A task without options (`task.options` must then be empty)."""


class Task(ABC):
    """One task: rows, prompts, rewards' label columns, the correct signal, eval and warm-up rows."""

    name: ClassVar[str]
    options_model: ClassVar[type[BaseModel]] = NoOptions
    """The pydantic model of `task.options` (extra keys forbidden)."""
    label_columns: ClassVar[tuple[str, ...] | None] = None
    """Row columns passed to reward functions as keyword lists; None: every column but the prompt."""
    judge: str | None = None
    """Reward name whose score says whether a sample is right (None: the first of `reward.functions`);
    it is always scored, for metrics."""
    correct_key: str | None = None
    """Key of the judge's breakdown that is 1.0 when the sample is right (None: the judge's own score)."""
    group_column: str = "category"
    """Row column that metrics and the eval table are split by."""
    eval_keys: tuple[str, ...] = ("accuracy", "reward_mean")
    """Scalar keys of the eval table, in the order the printed table shows them."""

    def __init__(self, cfg: TaskConfig, options: BaseModel) -> None:
        self.cfg, self.options = cfg, options
        self.rewards: list[tuple[str, float]] = []  # (name, weight) of reward.functions (set by load_task)

    @abstractmethod
    def rows(self) -> tuple[list[dict], list[dict]]:
        """(training rows, held-out rows): from `task.train_file` / `eval_file`, or generated."""

    def load_rows(self, path: str) -> list[dict]:
        """Rows of a data file (an error names the file and line of a bad row)."""
        from tasks.files import read_rows

        return read_rows(path)

    def render_prompt(self, tokenizer: Any, row: dict) -> str:
        """The prompt string the policy continues: a standard prompt as it is, a conversational one
        through the tokenizer's chat template with the assistant turn opened."""
        prompt = row["prompt"]
        if isinstance(prompt, str):
            return prompt
        return tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)

    def judge_name(self) -> str | None:
        """The reward that judges samples: the task's `judge`, else the first configured reward."""
        return self.judge or (self.rewards[0][0] if self.rewards else None)

    def judge_key(self) -> str | None:
        """Where the judge's verdict is in a sample's breakdown (the reward pool files each reward's
        score under its name)."""
        return self.correct_key or self.judge_name()

    def group_of(self, row: dict) -> str:
        """A row's group (metrics and the eval table per group); `all` for a row without one."""
        return str(row.get(self.group_column, "all"))

    def evaluate(self, rows: Sequence[dict], texts: Sequence[str],
                 completion_ids: Sequence[list[int]] | None = None,
                 answers: list[dict] | None = None) -> dict:
        """The eval table of greedy answers `texts` to `rows`: `eval_keys` scalars, `per_category`
        (accuracy per `group_column` value) and `n`, all rates in [0, 1]. By default the configured
        rewards judge them (`tasks.judging`). With `answers`, one dict per answer is appended to it
        (its scores and the judge's `verdict`): what completions_<tag>.jsonl shows beside the text."""
        from tasks.judging import judged_table

        judge = self.judge_name()
        if judge is None:
            raise ConfigError(f"task {self.name!r}: no reward function to judge the eval by")
        return judged_table(rows, texts, completion_ids, self.rewards or [(judge, 1.0)], judge,
                            self.group_of, self.columns(rows), answers)

    def warmup_rows(self, rows: Sequence[dict]) -> list[dict]:
        """Rows whose `solution` is the SFT warm-up target for `prompt`."""
        raise ConfigError(f"task {self.name!r} has no warm-up targets: set train.warmup.enabled=false")

    def corpus(self) -> list[str]:
        """Every kind of text the model sees in this task (a tiny model's tokenizer is trained on it):
        by default every prompt (a message as `role\ncontent`) and every string column of the rows."""
        texts: list[str] = []
        train, held = self.rows()
        for row in train + held:
            prompt = row.get("prompt")
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            texts += [f"{m.get('role')}\n{m.get('content')}" for m in messages if isinstance(m, dict)]
            texts += [v for k, v in row.items() if k != "prompt" and isinstance(v, str)]
        for row in self.warmup_rows_or_none(train):
            texts.append(f"assistant\n{row['solution']}")
        return texts

    def warmup_rows_or_none(self, rows: Sequence[dict]) -> list[dict]:
        """`warmup_rows`, or none for a task without warm-up targets."""
        try:
            return self.warmup_rows(rows)
        except ConfigError:
            return []

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

    def harness_script(self, row: dict) -> list[dict]:
        """The assistant messages (OpenAI's form: `content`, `tool_calls`) a scripted agent answers the run's
        harness with for `row`, in order: the warm-up of a harness run (`actors.driver.harness_warmup`)."""
        raise ConfigError(f"task {self.name!r} has no scripted replies for a harness's warm-up")

    def harness_environment(self, max_turns: int) -> Environment:
        """The harness's episodes as an in-worker environment speaking the harness's format (what the
        gateway's benchmark plays in the worker to compare)."""
        raise ConfigError(f"task {self.name!r} has no in-worker form of its harness's episodes")

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
        """What a tiny model's tokenizer is built from (`models.resolve.resolve_model`): the text, called only
        when it is built, and the strings that must be single tokens; a run on episodes adds theirs."""
        if episodes:
            return ((lambda: self.corpus() + self.episode_corpus()),
                    self.vocabulary() + self.episode_vocabulary())
        return self.corpus, self.vocabulary()

    def columns(self, rows: Sequence[dict]) -> dict[str, list[Any]]:
        """The reward functions' keyword columns for `rows` (one list per label column present; every
        column but the prompt when the task names none), as TRL passes them."""
        if not rows:
            return {}
        names = self.label_columns
        if names is None:
            names = [k for k in rows[0] if k != "prompt"]
        return {k: [r.get(k) for r in rows] for k in names if k in rows[0]}


def overrides(task: Task, method: str) -> bool:
    """Whether the task overrides `Task.method` (has episodes, scripted replies, ...)."""
    return getattr(type(task), method) is not getattr(Task, method)


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


def load_task(cfg: TaskConfig, rewards: Sequence[Any] = ()) -> Task:
    """The configured task with its options validated (a ConfigError names the bad option); `rewards`:
    the run's `reward.functions` (what judges a task that has no judge of its own)."""
    cls = task_class(cfg.name)
    try:
        options = cls.options_model.model_validate(cfg.options)
    except ValidationError as e:
        raise ConfigError(explain(e, f"options of task {cfg.name!r}", "task.options",
                                  cls.options_model)) from None
    task = cls(cfg, options)
    task.rewards = [(f.name, f.weight) if hasattr(f, "name") else tuple(f) for f in rewards]
    return task

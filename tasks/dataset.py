"""A plain dataset as a task, no subclass: TRL's standard or conversational rows, or verl's Parquet rows.

    task:
      name: dataset
      train_file: data/train.jsonl        # .jsonl .json .parquet .csv, or a save_to_disk folder
      eval_file: data/test.jsonl          # or none: `eval_fraction` of the rows are held out
      options:
        columns: {solution: answer}       # a reward's keyword <- the dataset's column (dotted: nested)
        group_column: level               # metrics and the eval table per value of this column
    reward:
      functions: [{name: my_rewards:exact_match}, {name: trl.rewards:think_format_reward, weight: 0.2}]

A row's `prompt` (or `options.prompt_column`) is a string (TRL's standard format: given to the model
as it is) or a list of chat messages (conversational: rendered by the model's chat template). Every other
column reaches the reward functions as a keyword list, as TRL passes them. `format: verl` reads verl's
rows: `prompt` (messages), `data_source` (the group), `reward_model.ground_truth` (as `ground_truth` and
`solution`), `extra_info` (as it is). The judge (what `accuracy` means) is `options.judge`, else the
first reward function. A warm-up needs targets: `options.warmup_column` names the column whose text
the model is taught to answer with (TRL's prompt-completion `completion`, say).
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import Field

from configs.base import Section
from configs.loader import ConfigError
from tasks.base import Task
from tasks.examples import Example, example_turns, refuse_example_rows
from tasks.files import DataFileError, column, read_rows

GROUP = "group"  # the group column a dataset without one gets (not passed to rewards)
VERL_COLUMNS = {"ground_truth": "reward_model.ground_truth", "solution": "reward_model.ground_truth"}


class DatasetOptions(Section):
    """`task.options` of a plain dataset."""

    format: Literal["trl", "verl"] = "trl"
    """`trl`: TRL's standard or conversational rows; `verl`: verl's Parquet rows (see the module)."""
    prompt_column: str = Field("prompt", min_length=1)
    """The column holding the prompt (a string, or a list of chat messages)."""
    columns: dict[str, str] = Field(default_factory=dict)
    """Columns to add under another name: {keyword a reward reads: the dataset's column}; a dotted
    source reaches into nested values (`reward_model.ground_truth`)."""
    group_column: str | None = None
    """The column metrics and the eval table are split by (None: one group, `all`)."""
    eval_fraction: float = Field(0.1, gt=0.0, lt=0.9)
    """Without `task.eval_file`: the share of rows held out (drawn with `task.seed`)."""
    warmup_column: str | None = None
    """The column whose text is the warm-up's target for the prompt (needed by `train.warmup`)."""
    judge: str | None = None
    """The reward (as named in `reward.functions`) whose score is `accuracy`; None: the first."""
    limit: int | None = Field(None, ge=1)
    """Read at most this many training rows (the first ones)."""
    system_prompt: str | None = None
    """A system message put before each conversational prompt that has none (a row with its own and
    this set is refused: which one was meant?)."""
    examples: list[Example] = []
    """Worked exchanges put before each conversational prompt as earlier chat turns (few-shot, no
    training; `tasks/examples.py`). The reward functions still see the row's own prompt. An example
    whose request is one of the rows' is refused."""


class DatasetTask(Task):
    """Rows from local files, judged by the configured reward functions."""

    name = "dataset"
    options_model = DatasetOptions
    options: DatasetOptions

    def __init__(self, cfg, options: DatasetOptions) -> None:
        super().__init__(cfg, options)
        o = options
        self.mapping = {**(VERL_COLUMNS if o.format == "verl" else {}), **o.columns}
        self.group_column = o.group_column or ("data_source" if o.format == "verl" else GROUP)
        self.judge = o.judge

    # ---- rows -------------------------------------------------------------------------------------
    def rows(self) -> tuple[list[dict], list[dict]]:
        if not self.cfg.train_file:
            raise ConfigError("task dataset: set task.train_file (a .jsonl, .json, .parquet or .csv file, "
                              "or a folder written by datasets' save_to_disk)")
        train, held = self._split(self.load_rows(self.cfg.train_file, self.options.limit))
        refuse_example_rows(self.options.examples, (_request(r["prompt"]) for r in train + held))
        return train, held

    def _split(self, rows: list[dict]) -> tuple[list[dict], list[dict]]:
        """(training, held-out): the eval file's rows, else `eval_fraction` of these drawn with the seed."""
        if self.cfg.eval_file:
            return rows, self.load_rows(self.cfg.eval_file)
        order = list(range(len(rows)))
        random.Random(self.cfg.seed).shuffle(order)
        cut = max(1, round(self.options.eval_fraction * len(rows))) if len(rows) > 1 else 0
        held = set(order[:cut])
        return ([r for i, r in enumerate(rows) if i not in held],
                [r for i, r in enumerate(rows) if i in held])

    def load_rows(self, path: str, limit: int | None = None) -> list[dict]:
        return [self.row(r, path, i) for i, r in enumerate(read_rows(path, limit))]

    def preview(self, path: str, n: int = 2) -> list[dict]:
        """The first `n` rows of a data file, mapped (what the pre-start check reads)."""
        return self.load_rows(path, n)

    def row(self, raw: dict, path: str, i: int) -> dict:
        """A file's row as the runtime and the rewards see it: `prompt` and the mapped columns set, the
        group column filled; a missing column names the file and the row."""
        out = dict(raw)
        try:
            out["prompt"] = column(raw, self.options.prompt_column)
            for name, source in self.mapping.items():
                out[name] = column(raw, source)
            if self.options.warmup_column:
                column(raw, self.options.warmup_column)  # every row needs its target
        except KeyError as e:
            raise DataFileError(f"{path}: row {i + 1} has no column {e.args[0]!r} "
                                f"(its columns: {', '.join(sorted(raw))})") from None
        if self.options.prompt_column != "prompt":
            out.pop(self.options.prompt_column, None)
        prompt = out["prompt"]
        if not (isinstance(prompt, str) or _messages(prompt)):
            raise DataFileError(f"{path}: row {i + 1}: the prompt must be a string or a list of "
                                f"{{role, content}} messages, got {type(prompt).__name__}")
        self._check_framing(prompt, path, i)
        if self.group_column == GROUP:
            out.setdefault(GROUP, "all")
        elif self.group_column not in out:
            raise DataFileError(f"{path}: row {i + 1} has no group column {self.group_column!r} "
                                f"(task.options.group_column; its columns: {', '.join(sorted(raw))})")
        else:
            out[self.group_column] = str(out[self.group_column])
        return out

    def _check_framing(self, prompt: Any, path: str, i: int) -> None:
        o = self.options
        if not (o.system_prompt or o.examples):
            return
        if isinstance(prompt, str):
            raise DataFileError(f"{path}: row {i + 1}: task.options.system_prompt and examples apply to "
                                "conversational prompts (lists of messages); this one is a string")
        if o.system_prompt and prompt[0]["role"] == "system":
            raise DataFileError(f"{path}: row {i + 1} has its own system message and "
                                "task.options.system_prompt is set: drop one of them")

    def render_prompt(self, tokenizer: Any, row: dict) -> str:
        """A conversational prompt framed by the configured system message and examples: the system
        message first (the row's own or the option's), then the examples, then the row's turns."""
        prompt = row["prompt"]
        o = self.options
        if isinstance(prompt, str) or not (o.system_prompt or o.examples):
            return super().render_prompt(tokenizer, row)
        head = [{"role": "system", "content": o.system_prompt}] if o.system_prompt else []
        if prompt[0]["role"] == "system":
            head, prompt = [prompt[0]], prompt[1:]
        messages = head + example_turns([(e.user, e.assistant) for e in o.examples]) + list(prompt)
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def columns(self, rows) -> dict[str, list[Any]]:
        """Every column of the rows but the prompt and TRL's `completion` (as TRL passes them), and not
        the group column this task added."""
        cols = super().columns(rows)
        cols.pop("completion", None)
        if self.group_column == GROUP and self.options.group_column is None:
            cols.pop(GROUP, None)
        return cols

    def warmup_rows(self, rows) -> list[dict]:
        if not self.options.warmup_column:
            raise ConfigError("task dataset: train.warmup needs targets: set task.options.warmup_column "
                              "(the column whose text the model is taught to answer with), "
                              "or train.warmup.enabled=false")
        col = self.options.warmup_column
        return [{**r, "solution": _text(column(r, col))} for r in rows]


def _messages(prompt: Any) -> bool:
    return (isinstance(prompt, list) and bool(prompt)
            and all(isinstance(m, dict) and "role" in m and "content" in m for m in prompt))


def _request(prompt: Any) -> str:
    """The text of a prompt's last user turn (a standard prompt: itself)."""
    if isinstance(prompt, str):
        return prompt
    users = [m["content"] for m in prompt if m["role"] == "user"]
    return str(users[-1]) if users else ""


def _text(target: Any) -> str:
    """A warm-up target's text: a string, or the content of TRL's conversational completion."""
    if isinstance(target, list) and target and isinstance(target[-1], dict):
        return str(target[-1].get("content", ""))
    return str(target)

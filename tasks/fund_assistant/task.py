"""The fund assistant as a `tasks.base.Task`: its options, rows, prompts, eval table and warm-up rows.

Everything the runtime needs from this package goes through `FundAssistantTask`; the package's other
modules (generator, tools, account, rewards) are its implementation. docs/fund_assistant.md describes
the task; LABELS.md beside this file the label policy.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from pydantic import Field, field_validator

from configs.base import Section
from tasks.base import Task
from tasks.env import Environment, run_episode
from tasks.examples import Example, refuse_example_rows
from tasks.fund_assistant.compact import compact_rows
from tasks.fund_assistant.data import load_jsonl
from tasks.fund_assistant.env import FundAccountEnv
from tasks.fund_assistant.episodes import DRILL_SYSTEM, EPISODE_KINDS, drill_target, episode_rows
from tasks.fund_assistant.generator import apply_seed_label_bug, generate
from tasks.fund_assistant.prompting import SYSTEM_PROMPTS, render_prompt
from tasks.fund_assistant.rewards import MultistepGTReward
from tasks.fund_assistant.slots import ACCOUNT_IDS, ALL_TICKERS, TICKERS
from tasks.fund_assistant.tools import TOOL_NAMES
from tasks.fund_assistant.trajectories import Flaw, trajectory

GT_REASONING_MAX = 0.3  # the ground-truth reward's reasoning part is worth at most 0.3


def _draw(row: dict, flaw: str) -> float:
    """A row's fixed draw for a flaw (the first flaw's key kept its old name, so its rows stay the same)."""
    return random.Random(f"{row['id']}/flaw" if flaw == "no_balance_check"
                         else f"{row['id']}/flaw/{flaw}").random()


class FundAssistantOptions(Section):
    """`task.options` of the fund assistant."""

    n_single: int = Field(454, ge=20, le=1_000_000)
    """Single-step rows to generate (the field report's data set: 454)."""
    n_multistep_samples: int = Field(823, ge=4, le=1_000_000)
    """Expanded multistep rows to generate (the field report's data set: 823)."""
    eval_fraction: float = Field(0.2, gt=0.0, lt=0.9)
    """Share of scenarios held out for evaluation (rows are split by scenario, never within one)."""
    system_prompt: str = Field("short", min_length=1)
    """`short` (one line, for the tiny model), `full` (with the tool catalogue) or literal text."""
    examples: list[Example] = []
    """Worked exchanges put before each request as earlier chat turns (few-shot prompting, no training):
    a small instruct model copies the JSON shape from a turn it has seen far more readily than from a
    description in the system message. Applies to single-turn rows, not to agent episodes; an example
    whose request is one of the task's rows is refused (it would show that row's answer)."""
    seed_label_bug: bool = False
    """Warm-up targets carry the field report's labelling error (every combo request labelled
    check_balance), so that RL has a realistic flaw to repair. RL rewards always use the true labels."""
    compact_labels: bool = False
    """Warm-up targets with a terse thought and a plan of tool names (the same actions): what a
    ~1 M-parameter model can learn in a two-minute warm-up."""
    n_episodes: int = Field(1000, ge=10, le=1_000_000)
    """Agent episodes to generate (`env.enabled`), split by `eval_fraction`."""
    episode_kinds: list[str] | None = None
    """Only these kinds of episodes (`tasks/fund_assistant/episodes.py`); None: every kind."""
    episode_flaw: Flaw | list[Flaw] = "none"
    """The warm-up trajectories' flaw, or flaws, for RL to repair: `no_balance_check` skips the balance
    check of balance-conditional requests, `no_market_check` the market check before an order,
    `unsettled_withdraw` withdraws a sale's proceeds whether or not they settled
    (`tasks/fund_assistant/trajectories.py`)."""
    episode_flaw_rate: float = Field(1.0, ge=0.0, le=1.0)
    """Share of the rows a flaw could touch whose trajectory carries it (chosen by row id and flaw, so
    the same rows every run): 1.0, every one; below it, a log in which the fault was frequent."""

    @field_validator("episode_kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str] | None) -> list[str] | None:
        unknown = sorted(set(kinds or ()) - set(EPISODE_KINDS))
        if unknown or kinds == []:
            raise ValueError(f"unknown or no episode kinds {unknown} (known: {', '.join(EPISODE_KINDS)})")
        return kinds


class FundAssistantTask(Task):
    """Six tools, ReAct JSON answers, single-step and multistep scenarios, rule and ground-truth rewards."""

    name = "fund_assistant"
    options_model = FundAssistantOptions
    label_columns = ("request", "solution", "category", "scenario_id", "step", "num_steps", "lang")
    judge = "gt"
    correct_key = "tool_correct"
    group_column = "category"
    eval_keys = ("average_score", "tool_accuracy", "reasoning_score")
    options: FundAssistantOptions

    def rows(self) -> tuple[list[dict], list[dict]]:
        o = self.options
        if self.cfg.train_file:
            held = self.load_rows(self.cfg.eval_file) if self.cfg.eval_file else []
            train = self.load_rows(self.cfg.train_file)
        else:
            train, held = generate(seed=self.cfg.seed, n_single=o.n_single,
                                   n_multistep_samples=o.n_multistep_samples, eval_fraction=o.eval_fraction)
        refuse_example_rows(self.options.examples, (r["prompt"] for r in train + held))
        return train, held

    def load_rows(self, path: str) -> list[dict]:
        return load_jsonl(path)

    def render_prompt(self, tokenizer: Any, row: dict) -> str:
        examples = [(e.user, e.assistant) for e in self.options.examples]
        return render_prompt(tokenizer, row["prompt"], self.options.system_prompt, examples)

    def evaluate(self, rows: Sequence[dict], texts: Sequence[str],
                 completion_ids: Sequence[list[int]] | None = None,
                 answers: list[dict] | None = None) -> dict:
        """Average ground-truth score, tool accuracy, reasoning score (GT's reasoning part as a fraction
        of its maximum) and tool accuracy per category; with `answers`, each answer's GT breakdown."""
        columns = {k: [r.get(k) for r in rows] for k in ("solution", "category", "request")}
        parts = MultistepGTReward().breakdown([r["prompt"] for r in rows], list(texts), **columns)
        if answers is not None:
            answers += [{"scores": dict(b), "verdict": b[self.correct_key]} for b in parts]
        by_cat: dict[str, list[float]] = defaultdict(list)
        for row, b in zip(rows, parts):
            by_cat[row["category"]].append(b[self.correct_key])
        return {
            "average_score": fmean(b["total"] for b in parts) if parts else 0.0,
            "tool_accuracy": fmean(b[self.correct_key] for b in parts) if parts else 0.0,
            "reasoning_score": fmean(b["reasoning"] / GT_REASONING_MAX for b in parts) if parts else 0.0,
            "per_category": {k: fmean(v) for k, v in sorted(by_cat.items())},
            "n": len(rows),
        }

    def warmup_rows(self, rows: Sequence[dict]) -> list[dict]:
        o = self.options
        if o.compact_labels:
            return compact_rows(list(rows), seed_label_bug=o.seed_label_bug)
        return apply_seed_label_bug(list(rows)) if o.seed_label_bug else [dict(r) for r in rows]

    def corpus(self) -> list[str]:
        """Prompts and labels of the default data set (true and bugged labels), each under every system
        prompt's chat roles, so BPE merges them into a few tokens instead of spelling them out."""
        train, held_out = generate(seed=self.cfg.seed)
        texts = []
        for r in train + held_out + apply_seed_label_bug(train):
            for system in SYSTEM_PROMPTS.values():
                texts.append(f"system\n{system}")
            texts.append(f"user\n{r['prompt']}")
            texts.append(f"assistant\n{r['solution']}")
        return texts

    def environment(self, max_turns: int) -> FundAccountEnv:
        """An episode against the simulated account (rows: `tasks.fund_assistant.episodes.episode_rows`)."""
        return FundAccountEnv(max_turns)

    def episode_rows(self) -> tuple[list[dict], list[dict]]:
        rows = episode_rows(self.cfg.seed, self.options.n_episodes, self.options.episode_kinds)
        cut = len(rows) - max(1, round(self.options.eval_fraction * len(rows)))
        return rows[:cut], rows[cut:]

    def episode_script(self, row: dict) -> list[str]:
        o = self.options
        flaws = [o.episode_flaw] if isinstance(o.episode_flaw, str) else o.episode_flaw
        return trajectory(row,
                          [f for f in flaws if o.episode_flaw_rate >= 1.0
                           or _draw(row, f) < o.episode_flaw_rate])

    def harness_script(self, row: dict) -> list[dict]:
        """The warm-up trajectory's turns as the assistant messages the fund harness gets back
        (`tasks.fund_assistant.harness`): tool calls, then the answer."""
        from tasks.fund_assistant.harness import scripted_reply

        return [scripted_reply(turn, i) for i, turn in enumerate(self.episode_script(row))]

    def harness_environment(self, max_turns: int) -> Environment:
        from tasks.fund_assistant.harness import ToolCallEnv

        return ToolCallEnv(max_turns)

    def episode_drill(self, n: int) -> list[tuple[list[dict], str]]:
        """Requests of `n` episodes from their own random stream (a held-out request is left out, and so
        is one whose calls take no parameters) under `DRILL_SYSTEM`, each with `drill_target`."""
        return [([{"role": "system", "content": DRILL_SYSTEM}, {"role": "user", "content": r["request"]}],
                 drill_target(r))
                for r in self._drill_stream(n) if drill_target(r)]

    def episode_drill_rows(self, n: int) -> list[dict]:
        """The episodes of that stream whose final answer names an outcome (an amount or a ticker)."""
        return [r for r in self._drill_stream(n) if r["outcome"]]

    def _drill_stream(self, n: int) -> list[dict]:
        """The drill's stream, made once per `n`: both drills read it, and 5,000 rows take ~15 s."""
        cache = self.__dict__.setdefault("_drill_cache", {})
        if n not in cache:
            held = {r["request"] for r in self.episode_rows()[1]}
            cache[n] = [r for r in episode_rows(self.cfg.seed, n, self.options.episode_kinds, stream="drill")
                        if r["request"] not in held]
        return cache[n]

    def episode_corpus(self) -> list[str]:
        """Every message of the default episodes' correct trajectories and of the balance-skipping ones,
        played against the account (`role\ncontent`, as in `corpus`). The other flaws' turns are made
        of the same pieces (a call the correct trajectory of another request makes), so they are left
        out and leave the tokenizer as it was."""
        texts = []
        for row in episode_rows(self.cfg.seed, FundAssistantOptions().n_episodes):
            for flaw in ("none", "no_balance_check"):
                turns = iter(trajectory(row, flaw))
                episode = run_episode(FundAccountEnv(max_turns=8), row, lambda _: next(turns))  # noqa: B023
                texts += [f"{m['role']}\n{m['content']}" for m in episode.messages]
        return texts

    def episode_vocabulary(self) -> list[str]:
        """Every ticker and account id is one token in an episode: an agent copies them from the
        request and from tool results into its calls, and copying one token is a single attention
        step that a tiny model learns; copying three pieces of a spelt-out id it did not learn."""
        return [*ALL_TICKERS, *ACCOUNT_IDS]

    def entity_groups(self) -> list[list[str]]:
        """The tickers of each market (a ticker swapped within its market keeps the market check
        right) and the account ids."""
        return [list(ts) for ts in TICKERS.values()] + [list(ACCOUNT_IDS)]

    def vocabulary(self) -> list[str]:
        """Each tool name is one token: choosing a tool becomes one decision instead of a spelling
        exercise (the tiny model otherwise stitches pieces into names like check_market_history)."""
        return list(TOOL_NAMES)


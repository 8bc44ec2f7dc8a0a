"""What a run samples, behind one interface: single-turn completions or multi-turn agent episodes.

The coordinator's step is the same for both (draw → sample → score → algorithm → learn → push). A
workload says what differs, and only that: the rows, the worker method that samples them and its fixed
arguments, how a batch is scored (the reward pool; the environment's trajectory score), the statistics
only episodes have, the warm-up's examples, the probe every push is checked with, and the eval table.
`workload_for` picks one from `env.enabled`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors.driver.setup_steps import answer_examples, drill_examples, probe_sequence, trajectory_examples
from actors.generation import Generation
from actors.reward.pool import RewardPool
from actors.worker.agent_loop import EPISODE_EVAL_KEYS, episode_eval, episode_metrics
from configs.root import Config
from contracts.types import Sample, ScoreRequest, ScoreResult
from tasks.base import Task, overrides

# sample(items, **sampling) -> Generation: the roles' fan-out over the workers, or one local worker
Sampler = Callable[..., Generation]
Writer = Callable[[str, str], None]  # (file name in the run directory, text)


class Completions:
    """Single-turn: a prompt rendered from each row, n completions per prompt, scored by the reward
    pool (`reward.functions`, the task's judge among them)."""

    method = "generate"
    episodes = False

    def __init__(self, cfg: Config, task: Task) -> None:
        self.cfg, self.task = cfg, task
        self.judge: str | None = task.judge_name()  # the reward actors start with it
        self.correct_key, self.eval_keys = task.judge_key(), task.eval_keys
        self.max_len = cfg.rollout.max_tokens  # a sample's length limit (overlong shaping)

    def rows(self) -> tuple[list[dict], list[dict]]:
        return self.task.rows()

    def items(self, tokenizer: Any, rows: list[dict]) -> list:
        """What the worker method takes for `rows`."""
        return [self.task.render_prompt(tokenizer, r) for r in rows]

    def sampling(self) -> dict[str, Any]:
        """The worker method's arguments besides the items and the sampling settings."""
        return {}

    def score(self, pool: RewardPool | None, rows: list[dict], gen: Generation, step: int = 0) -> ScoreResult:
        flat_rows = [row for row, g in zip(rows, gen.groups) for _ in g]
        return pool.score(ScoreRequest(prompts=[row["prompt"] for row in flat_rows],
                                       completions=[s.text for s in gen.samples],
                                       columns=self.task.columns(flat_rows),
                                       completion_ids=[s.token_ids for s in gen.samples], step=step))

    def stats(self, samples: list[Sample]) -> dict[str, float]:
        """Statistics of a step's samples besides the batch statistics every workload has."""
        return {}

    def warmup_examples(self, tokenizer: Any, rows: list[dict]) -> tuple[list[dict], list[tuple], Any]:
        """(the rows the examples come from, (prompt, target) examples, the drill or None)."""
        targets = self.task.warmup_rows(rows)
        return targets, [(self.task.render_prompt(tokenizer, r), r["solution"]) for r in targets], None

    def entity_swaps(self, tokenizer: Any) -> list[list[int]] | None:
        """The token ids the warm-up swaps (`train.warmup.swap_entities`), or None."""
        return None

    def probe(self, tokenizer: Any, rows: list[dict]) -> tuple[list[int], list[int]]:
        return probe_sequence(self.task, tokenizer, rows)

    def tokenizer_text(self) -> tuple[Callable[[], list[str]], list[str]]:
        """What a tiny model's tokenizer is built from (`models.resolve.resolve_model`)."""
        return self.task.tokenizer_text(episodes=self.episodes)

    def eval_table(self, sample: Sampler, tokenizer: Any, rows: list[dict], temperature: float,
                   tag: str, write: Writer | None = None) -> dict:
        """The task's eval table of one answer per held-out row (greedy at temperature 0); with `write`,
        every answer is kept in completions_<tag>.jsonl with its scores and the judge's verdict."""
        gen = sample(self.items(tokenizer, rows), n=1, temperature=temperature, seed=0)
        texts, ids = [g[0].text for g in gen.groups], [g[0].token_ids for g in gen.groups]
        answers: list[dict] = []
        # A user's task may override evaluate without the `answers` argument: its file then has no scores.
        keeps = "answers" in inspect.signature(self.task.evaluate).parameters
        table = self.task.evaluate(rows, texts, ids, **({"answers": answers} if keeps else {}))
        if write is not None:
            lines = [json.dumps({"row": i, "group": self.task.group_of(r), "prompt": r["prompt"],
                                 "completion": g[0].text, "truncated": g[0].truncated,
                                 **(answers[i] if i < len(answers) else {})}, ensure_ascii=False, default=str)
                     for i, (r, g) in enumerate(zip(rows, gen.groups, strict=True))]
            write(f"completions_{tag}.jsonl", "".join(x + "\n" for x in lines))
        return table


# Score keys that count, not rate: metrics of their own (episode_metrics), not reward parts.
_COUNTS = ("turns", "tool_calls", "tool_errors")


class Episodes(Completions):
    """Agent episodes: n episodes per row played against the task's environment, each scored by the
    environment's trajectory score (its `total` the reward, its `success` the judge); no reward actors
    start, only the environment saw what happened."""

    method = "play_episodes"
    episodes = True

    def __init__(self, cfg: Config, task: Task) -> None:
        super().__init__(cfg, task)
        self.judge, self.correct_key, self.eval_keys = None, "success", EPISODE_EVAL_KEYS
        self.max_len = cfg.env.max_turns * cfg.rollout.max_tokens

    def rows(self) -> tuple[list[dict], list[dict]]:
        return self.task.episode_rows()

    def items(self, tokenizer: Any, rows: list[dict]) -> list:
        return rows

    def sampling(self) -> dict[str, Any]:
        e = self.cfg.env
        return {"task": self.cfg.task, "max_turns": e.max_turns, "max_context": e.max_context}

    def score(self, pool: RewardPool | None, rows: list[dict], gen: Generation, step: int = 0) -> ScoreResult:
        scores = [s.episode.score for s in gen.samples]
        return ScoreResult(rewards=[sc["total"] for sc in scores],
                           breakdowns=[{k: v for k, v in sc.items() if k not in _COUNTS} for sc in scores],
                           failed=[False] * len(scores))

    def stats(self, samples: list[Sample]) -> dict[str, float]:
        return episode_metrics(samples)

    def warmup_examples(self, tokenizer: Any, rows: list[dict]) -> tuple[list[dict], list[tuple], Any]:
        """The task's scripted trajectories of the episode rows played against its environment (the
        policy's turns learned, the observations not), after the entity drill when configured."""
        from learner.warmup import Drill

        examples, d = self.trajectories(tokenizer, rows), self.cfg.train.warmup.drill
        drill = None
        if d.steps or d.mix:
            drilled = drill_examples(self.task, tokenizer, d.rows, self._system_text(rows), d.gap_words,
                                     self.cfg.train.seed)
            if not drilled:
                raise ValueError(f"train.warmup.drill: task {self.task.name!r} "
                                 f"gave no drill rows out of {d.rows}")
            answers = []
            if d.answers:
                answers = answer_examples(self.cfg, self.task, tokenizer, d.rows, d.answer_turns,
                                          lambda rs: self.trajectories(tokenizer, rs))
            drill = Drill(drilled, d.steps, d.batch_size, d.mix, answers, d.answers)
        return rows, examples, drill

    def trajectories(self, tokenizer: Any, rows: list[dict]) -> list[tuple]:
        """(prompt ids, completion ids, loss mask) of the rows' scripted trajectories."""
        return trajectory_examples(self.cfg, self.task, tokenizer, rows)

    def _system_text(self, rows: list[dict]) -> str:
        """The system messages an episode starts with (the drill's gap filler: text the model reads
        between a request and its first call in every episode)."""
        first = self.task.environment(self.cfg.env.max_turns).reset(rows[0]) if rows else []
        return " ".join(m["content"] for m in first if m["role"] == "system")

    def entity_swaps(self, tokenizer: Any) -> list[list[int]] | None:
        """The task's entity groups as token ids, when `train.warmup.swap_entities`; each entity must be
        one token (`Task.episode_vocabulary`), or swapping it would cut a word in pieces."""
        if not self.cfg.train.warmup.swap_entities:
            return None
        groups = []
        for group in self.task.entity_groups():
            groups.append([])
            for entity in group:
                ids = tokenizer.encode(entity, add_special_tokens=False)
                if len(ids) != 1:
                    raise ValueError(f"train.warmup.swap_entities: {entity!r} is not one token of this "
                                     f"tokenizer ({len(ids)} tokens)")
                groups[-1].append(ids[0])
        return groups

    def probe(self, tokenizer: Any, rows: list[dict]) -> tuple[list[int], list[int]]:
        """The first scripted turn of the first row's episode: what every push is checked with."""
        prompt, completion, _ = self.trajectories(tokenizer, rows[:1])[0]
        return prompt, completion[:64]

    def eval_table(self, sample: Sampler, tokenizer: Any, rows: list[dict], temperature: float,
                   tag: str, write: Writer | None = None) -> dict:
        """One episode per held-out row (greedy at temperature 0); with `write`, every one is kept in
        episodes_<tag>.jsonl."""
        samples = sample(rows, n=1, temperature=temperature, seed=0).samples
        if write is not None:
            lines = [json.dumps({"id": r.get("id"), "category": r.get(self.task.group_column),
                                 "messages": s.episode.messages, "turns": s.episode.turns,
                                 "truncated": s.truncated, "score": s.episode.score}, ensure_ascii=False)
                     for r, s in zip(rows, samples, strict=True)]
            write(f"episodes_{tag}.jsonl", "\n".join(lines) + "\n")
        return episode_eval(rows, samples, self.task.group_column)


class Harness(Episodes):
    """Agent episodes played by the run's harness (`env: {kind: harness}`) through each worker's OpenAI
    gateway: a session's recorded calls are the sample, the harness's return its score (`total` the reward,
    `success` the judge). A harness that raised, timed out or made no call is a failed episode: counted,
    its error logged, its reward not trained on."""

    method = "play_harness"

    def __init__(self, cfg: Config, task: Task) -> None:
        import secrets

        super().__init__(cfg, task)
        self.token = secrets.token_urlsafe(24)  # the run's: a gateway answers only requests that carry it
        # A template file is read here and its text sent: a worker's node need not have the file.
        name = cfg.env.chat_template
        self.chat_template = name if name in ("tools", "model") else Path(name).read_text()

    def rows(self) -> tuple[list[dict], list[dict]]:
        """The task's episode rows when it has them, else its rows."""
        return self.task.episode_rows() if overrides(self.task, "episode_rows") else self.task.rows()

    def sampling(self) -> dict[str, Any]:
        e = self.cfg.env
        return {"harness": e.harness, "token": self.token, "max_turns": e.max_turns, "timeout_s": e.timeout_s,
                "concurrency": e.concurrency, "chat_template": self.chat_template,
                "tool_parser": e.tool_parser}

    def score(self, pool: RewardPool | None, rows: list[dict], gen: Generation, step: int = 0) -> ScoreResult:
        out = super().score(pool, rows, gen, step)
        errors = [s.episode.error for s in gen.samples]
        out.failed = [e is not None for e in errors]
        out.failures = sum(out.failed)
        name = self.cfg.env.harness
        out.failure_log = [f"harness {name}: {e.strip().splitlines()[0]}" for e in errors if e]
        return out

    def stats(self, samples: list[Sample]) -> dict[str, float]:
        n = max(1, len(samples))
        calls = sum(len(s.episode.turns) for s in samples)
        return {**episode_metrics(samples), "calls_per_episode": calls / n,
                "frac_split": sum(bool(s.parts) for s in samples) / n,
                "harness_failures": float(sum(s.episode.error is not None for s in samples))}

    def trajectories(self, tokenizer: Any, rows: list[dict]) -> list[tuple]:
        from actors.driver.harness_warmup import harness_examples

        return harness_examples(self.cfg, self.task, tokenizer, rows)

    def probe(self, tokenizer: Any, rows: list[dict]) -> tuple[list[int], list[int]]:
        """The first scripted call of the first row, as the harness asks it; any fixed sequence where the
        task has no scripted replies or the harness cannot play them."""
        from actors.driver.harness_warmup import fallback_probe

        try:
            return super().probe(tokenizer, rows)
        except Exception:  # noqa: BLE001 - the probe only needs a fixed sequence
            return fallback_probe(self.cfg, tokenizer, rows[0])

    def tokenizer_text(self) -> tuple[Callable[[], list[str]], list[str]]:
        """The task's episode text and its scripted conversations as the harness and template render them."""
        from actors.driver.harness_warmup import corpus

        text, vocabulary = self.task.tokenizer_text(episodes=overrides(self.task, "episode_corpus"))
        rows = self.rows()[0][:200]
        return (lambda: text() + corpus(self.cfg, self.task, rows)), vocabulary + list(HARNESS_TAGS)


HARNESS_TAGS = ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>")
"""The tools template's tags: one token each in a tiny model's tokenizer."""


def workload_for(cfg: Config, task: Task) -> Completions:
    """Harness sessions, agent episodes or single-turn completions, by `env.kind`."""
    if cfg.env.kind == "harness":
        return Harness(cfg, task)
    return Episodes(cfg, task) if cfg.env.enabled else Completions(cfg, task)

"""The step loop: how long, how big, warm-up, evaluation, checkpoints, outputs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from configs.base import Section
from configs.pipeline import KINDS, PipelineConfig, SyncPipeline

# Every seed key's upper bound. train.seed + a worker's index (below 1024) becomes the vLLM engine's seed,
# which vLLM hands to np.random.seed (0 <= seed < 2**32); the step seed train.seed * 100_003 + step must
# fit torch's 64-bit seed. 2**31 - 1 satisfies both, and any 32-bit consumer a task may have.
SEED_MAX = 2**31 - 1

# One step's samples (train.prompts_per_step x rollout.n) are generated, scored and shipped to the learner
# as one batch, all held in memory at once. The field report's 7B run uses 256 a step; 65536 is 256 times
# that, far past any useful batch, and stops a typo (1e9 prompts) before it becomes an out-of-memory crash.
MAX_SAMPLES_PER_STEP = 65536


class DrillConfig(Section):
    """Agent runs (`env.enabled`): the task's entity drill before the warm-up proper. A drill row is a
    request under its own instruction and, as the target, only the parameters of the calls it asks for
    (`Task.episode_drill`): every target token is a lookup of something the request names. A random tiny
    model learns that lookup in about a thousand dense drill steps; from whole trajectories, where the
    entities are a few tokens among many, it learns it only after about 2,000 warm-up steps
    (docs/experiments.md)."""

    steps: int = Field(0, ge=0)
    """Drill steps before the warm-up's own (0: no drill)."""
    rows: int = Field(5000, ge=1)
    """Drill rows the task generates (none of them a held-out request)."""
    batch_size: int = Field(32, ge=1)
    """Drill rows per drill step."""
    mix: int = Field(0, ge=0)
    """Drill rows added to every warm-up step after the drill, so the warm-up keeps the lookup instead
    of memorising its training rows' entities."""
    answers: int = Field(0, ge=0)
    """Answer-drill rows added to every drill step and every warm-up step: a scripted trajectory of a
    drill row (`Task.episode_drill_rows`) with only its final answer learned, which must name what the
    last call did. The request drill teaches copying from the request into the first calls; the final
    answer copies from calls two turns back, which a tiny model otherwise answers with the most
    frequent ticker or amount (docs/experiments.md, "The answer drill on seeds 0, 1 and 2")."""
    answer_turns: int = Field(1, ge=1, le=4)
    """The policy turns each answer-drill row learns, counted from its end: 1, the final answer; 2, the
    last call as well (a call that copies from the request two turns back), the tool's reply between
    them not learned."""
    gap_words: int = Field(0, ge=0)
    """Up to this many words of the episodes' system prompt (a random run of them, drawn per drill row)
    appended to each drill request. Without them the drill's answer always starts right after the
    request, and the model learns to look the entity up at that distance, which an episode's call, tens
    of tokens further on, never is (docs/experiments.md, "Copying by content, not by distance")."""


class WarmupConfig(Section):
    """Optional SFT warm-up on the task's warm-up rows, so that a random tiny model learns the output
    format before RL (the 7B preset skips it)."""

    enabled: bool = False
    """Run the warm-up before RL."""
    steps: int = Field(100, ge=0)
    """Optimizer steps."""
    lr: float = Field(2e-3, gt=0)
    """Learning rate (full fine-tune of the base weights)."""
    lr_final_ratio: float = Field(1.0, gt=0.0, le=1.0)
    """The warm-up's own steps (not the drill's) follow a cosine from `lr` down to `lr` x this (1.0:
    constant). A decay ends the warm-up on a settled model instead of wherever the last large steps left
    it."""
    batch_size: int = Field(32, ge=1)
    """Rows per step."""
    balanced: bool = False
    """Draw warm-up rows balanced over the task's groups (`category`) instead of in shuffled epochs.
    What the targets are (e.g. a deliberate label error) is the task's choice: `task.options`."""
    drill: DrillConfig = DrillConfig()
    """Agent runs: the entity drill before (and mixed into) the warm-up."""
    swap_entities: bool = False
    """Agent runs: each time the warm-up (or the drill) draws a row, its entities (tickers, account ids:
    `Task.entity_groups`) are replaced consistently by others of their kind, so that the model can only
    predict them by copying them from the request, never from memory of the row."""
    cache: bool = True
    """Keep the finished warm-up model in the cache (`$NGRPO_CACHE`, default `~/.cache/ngrpo-ray`,
    `warmups/`) and reuse it in every later run whose warm-up has the same inputs (model, tokenizer,
    examples, settings, seed, threads, code, CPU model): the same weights, byte for byte, without the
    minutes. False: always train it, store nothing."""


class TrainConfig(Section):
    """The Coordinator's loop."""

    steps: int = Field(100, ge=0)
    """RL steps (each: generate → score → learn → push)."""
    prompts_per_step: int = Field(16, ge=1)
    """Prompts per step; each is sampled `rollout.n` times (at most MAX_SAMPLES_PER_STEP samples in all)."""
    seed: int = Field(0, ge=0, le=SEED_MAX)
    """Seed of prompt order, sampling and initialisation (0 to 2**31 - 1)."""
    sampling: Literal["shuffle", "balanced", "adaptive"] = "shuffle"
    """`shuffle`: epochs over the rows in random order; `balanced`: each prompt's category drawn
    uniformly, then a row of it (every category gets equal RL attention whatever its share);
    `adaptive`: categories drawn with weight `adaptive_floor + (1 - recent tool accuracy)`, so the
    ones the policy still gets wrong get more prompts."""
    adaptive_by: str = Field("category", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """Adaptive sampling: the row column whose values are weighed (every training row must have it).
    The fund assistant's `kind` (the row's template, e.g. `combo_withdraw_funds` vs
    `combo_transfer_funds`) finds the hard part of a category that is mostly solved."""
    adaptive_floor: float = Field(0.1, ge=0.0, le=10.0)
    """Adaptive sampling: weight every category keeps however well it is solved."""
    adaptive_ema: float = Field(0.3, gt=0.0, le=1.0)
    """Adaptive sampling: weight of the newest step in each category's moving tool accuracy."""
    pipeline: PipelineConfig = SyncPipeline()
    """Where a step's batch comes from (configs/pipeline.py). `sync`: sampled when the step asks, by the
    policy the learner has. `one_step_off`: step k+1's batch is sampled while the learner trains on step
    k's. `stream` (with its own `max_staleness` and `max_in_flight`): every worker keeps samples in flight
    and takes weights at fixed points of its stream. A bare name is the kind with its defaults."""

    @field_validator("pipeline", mode="before")
    @classmethod
    def _pipeline_kind(cls, value: Any) -> Any:
        """`pipeline: stream` is `pipeline: {kind: stream}` (null, as older configs could write: sync); a
        section without a kind is refused by name."""
        if value is None:
            return {"kind": "sync"}
        if isinstance(value, str):
            return {"kind": value}
        if isinstance(value, dict) and "kind" not in value:
            raise ValueError(f"name its kind ({', '.join(KINDS)}), e.g. {{kind: stream, max_staleness: 2}}")
        return value

    warmup: WarmupConfig = WarmupConfig()
    """SFT warm-up stage."""
    eval_before: bool = True
    """Evaluate on the held-out set before RL."""
    eval_after: bool = True
    """Evaluate on the held-out set after RL."""
    eval_limit: int | None = Field(None, ge=1)
    """Evaluate on at most this many held-out rows (None: all)."""
    checkpoint_every: int = Field(10, ge=0)
    """Save a complete checkpoint every K steps (0: only at the start and the end). A checkpoint holds
    everything that decides the rest of the run: LoRA, optimizer and scheduler state of every learner
    rank, the coordinator's state (step, policy version, random generators, prompt queues, adaptive
    weights, NGRPO switch) and the metrics position."""
    keep_checkpoints: int = Field(3, ge=1, le=1000)
    """How many of the newest checkpoints to keep (older ones are deleted after a new one is complete)."""
    resume: str = Field("auto", min_length=1)
    """`auto`: a run whose run_name has a complete checkpoint continues from the newest one (without
    one it starts over); `never`: refuse to reuse a run_name; or the path of a checkpoint folder."""
    resume_trusted_dirs: list[str] = Field(default_factory=list)
    """Folders besides the run root (train.run_dir) whose checkpoints `resume` may name. Resuming loads
    pickled files, i.e. runs code: list only folders no one else can write to. Wherever it is, the
    checkpoint and its run folder must belong to you and be writable by no one else."""
    max_restarts: int = Field(3, ge=0, le=1000)
    """Replacements of dead or hung processes of one role (rollout workers, the learner group, the
    coordinator) the run may make within `restart_window` steps; past it the run stops after a final
    checkpoint, naming the role, its node and the cause."""
    restart_window: int = Field(100, ge=1, le=1_000_000)
    """Steps over which `max_restarts` counts: a long run survives many faults far apart, a crash loop
    still stops."""
    max_skipped_updates: int = Field(3, ge=1, le=1000)
    """Updates in a row that may be skipped for a non-finite loss or gradient norm before the run stops."""
    max_failed_steps: int = Field(3, ge=0, le=100_000)
    """Steps in a row in which every completion's reward failed before the run stops (exit 1, naming the
    reward and its first error); 0: never. One bad step of a flaky reward service does not stop it."""
    max_idle_steps: int = Field(50, ge=0, le=100_000)
    """Steps in a row without an update (every reward failed, every advantage 0, or the update skipped)
    before the run stops (exit 1); 0: never."""
    no_signal_steps: int = Field(5, ge=0, le=100_000)
    """The first K steps watched for a reward the model never earns: when every completion of them got
    the same score from every reward, one warning (log, event `no_signal`, the report) names the reward
    and shows a completion; 0: not watched."""
    stop_if_no_signal: bool = False
    """Stop the run (exit 1) at that warning instead of going on."""
    log_completions_every: int = Field(10, ge=0, le=100_000)
    """Every N steps, a few of the step's completions with their scores go to completions_train.jsonl and
    the trackers (TensorBoard text, an MLflow table, a W&B table); 0: never."""
    log_completions: int = Field(4, ge=1, le=1000)
    """How many completions (the first of each of the first groups of the step)."""
    run_dir: str = "runs"
    """Parent folder of run directories."""
    run_name: str | None = Field(None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
    """Run folder name: letters, digits, `.`, `_`, `-`, not starting with a dot (default: a timestamp)."""
    progress: bool = True
    """Show a progress bar."""

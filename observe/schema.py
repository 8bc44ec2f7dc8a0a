"""The metrics schema: every key a row of metrics.jsonl may carry, in one place.

Each `Metric` names its key (a `{tag}` part stands for a family: `accuracy/{category}`), the role
that produces it, how values from several learner ranks merge into one, the Ray metrics tag of a
family, and a one-line meaning. Merging over ranks, the Ray metrics export, the Grafana dashboard, the
end-of-run report and the metric lists in docs/ and the README all read it; tests fail when a run
emits a key the schema lacks, or the schema declares one that no run emits.

    python -m observe.schema            # the Markdown table of docs/metrics.md
    python -m observe.schema --by-role  # the README's list

>>> lookup("accuracy/combo").tag, lookup("loss").merge
('category', 'sum')
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Literal

Role = Literal["coordinator", "rollout", "reward", "learner"]
Merge = Literal["mean", "sum", "max"]


@dataclass(frozen=True)
class Metric:
    key: str  # "reward_mean", or a family "accuracy/{category}"
    role: Role  # who measures it (the Ray metrics `role` tag)
    help: str
    merge: Merge = "mean"  # over learner ranks
    numeric: bool = True  # False: text (a fingerprint), kept in the JSONL only

    @property
    def prefix(self) -> str:
        """The key before "/" (the whole key when it is not a family)."""
        return self.key.split("/", 1)[0]

    @property
    def tag(self) -> str | None:
        """The Ray metrics tag that holds a family's part after "/" (None when not a family)."""
        return self.key.split("{", 1)[1].rstrip("}") if "/{" in self.key else None


def _m(key: str, role: Role, help: str, merge: Merge = "mean", numeric: bool = True) -> Metric:
    return Metric(key, role, help, merge, numeric)


METRICS: tuple[Metric, ...] = (
    _m("step", "coordinator", "RL step (1-based)"),
    _m("policy_version", "coordinator", "policy version the workers serve after this step's push"),
    _m("ngrpo_active", "coordinator", "1 when NGRPO's virtual samples were used for this step's advantages"),
    _m("advantage_abs_mean", "coordinator", "mean |advantage| over the batch's samples"),
    _m("overlong_penalty_mean", "coordinator", "mean overlong penalty added to the rewards (<= 0)"),
    _m("sampling_weight/{value}", "coordinator", "adaptive sampling: weight of each category or kind"),
    _m("reward_mean", "reward", "mean reward of the batch (before shaping)"),
    _m("reward_std", "reward", "population std of the batch's rewards"),
    _m("reward_failures", "reward",
       "completions whose reward failed (raised, hung, NaN/inf or out of range): "
       "left out of their group and the loss"),
    _m("dropped_groups", "reward", "groups left out of the step for having fewer than two valid rewards"),
    _m("reward/{category}", "reward", "mean reward per category"),
    _m("reward_part/{component}", "reward",
       "mean over the batch of each reward's score (under its name), each part of a reward's breakdown "
       "(e.g. tool, params) and total: the weighted sum of the rewards (a failed one counts 0)"),
    _m("frac_reward_zero_std", "reward", "fraction of groups whose rewards are all equal (no GRPO signal)"),
    _m("frac_zero_std_all_max", "reward", "zero-std groups all at the maximum reward"),
    _m("frac_zero_std_all_min", "reward", "zero-std groups all at the minimum reward"),
    _m("frac_zero_std_other", "reward", "zero-std groups at another common value"),
    _m("frac_with_signal", "reward", "groups with reward spread (what GRPO learns from)"),
    _m("frac_with_signal_ngrpo", "reward", "groups NGRPO would learn from (all but the all-max ones)"),
    _m("accuracy", "reward", "fraction of samples the task's judge calls right"),
    _m("accuracy/{category}", "reward", "the task judge's accuracy per category"),
    _m("completion_length", "rollout", "mean completion length in tokens"),
    _m("frac_truncated", "rollout", "fraction of completions cut at max_tokens"),
    _m("policy_version_lag_max", "rollout", "largest (learner version - sampling version) in the batch"),
    _m("episode_turns_mean", "rollout", "agent episodes: mean policy turns per episode"),
    _m("tool_calls_per_episode", "rollout", "agent episodes: mean tool calls per episode"),
    _m("tool_error_rate", "rollout",
       "agent episodes: share of tool calls the environment answered with an error"),
    _m("success_rate", "rollout",
       "agent episodes: share of episodes that did what was asked (the env's judge)"),
    _m("frac_truncated_episodes", "rollout", "agent episodes: share that ran out of turns or context"),
    _m("obs_token_frac", "rollout",
       "agent episodes: share of completion tokens that are observations (masked)"),
    _m("calls_per_episode", "rollout", "harness: mean model calls per session"),
    _m("frac_split", "rollout",
       "harness: share of sessions cut into several samples (a prompt did not extend the one before)"),
    _m("harness_failures", "rollout", "harness: episodes whose harness raised, timed out or made no call"),
    _m("policy_version_lag_mean", "rollout",
       "mean (learner version - sampling version): 1 in the one-step-off pipeline"),
    _m("engine_occupancy", "rollout",
       "stream: running sequences per engine step over the pipeline's max_in_flight, since the last step"),
    _m("version_lag_mean", "rollout",
       "stream: mean (learner version - version that sampled it) per policy token"),
    _m("version_lag_max", "rollout", "stream: largest version lag of a policy token in the batch", "max"),
    _m("frac_partial", "rollout", "stream: share of samples whose tokens span more than one policy version"),
    _m("stale_dropped", "rollout",
       "stream: samples with a token more than the pipeline's max_staleness versions behind "
       "(not trained on)", "sum"),
    _m("loss", "learner", "policy loss of the update (summed over ranks' shares)", "sum"),
    _m("grad_norm", "learner", "global gradient norm before clipping"),
    _m("lr", "learner", "learning rate of the update"),
    _m("clip_frac_low", "learner", "fraction of tokens clipped at 1 - eps_low (negative advantage)"),
    _m("clip_frac_high", "learner", "fraction of tokens clipped at 1 + eps_high (positive advantage)"),
    _m("approx_kl", "learner", "k3 estimate of KL(old || new) per token"),
    _m("ratio_mean", "learner", "mean importance ratio new/old per token"),
    _m("entropy", "learner", "mean per-token entropy of the policy on the sampled completions"),
    _m("kl_ref", "learner", "k3 KL to the reference (adapter disabled) per token; with a KL term only"),
    _m("is_ratio_mean", "learner",
       "mean importance weight pi_old / pi_behaviour per token, before truncation (TIS)"),
    _m("is_ratio_max", "learner", "largest importance weight of a token, before truncation", "max"),
    _m("tis_clip_frac", "learner", "fraction of tokens whose importance weight was truncated at tis_cap"),
    _m("logprob_gap_mean", "learner", "mean |learner - vLLM| logprob of the sampled tokens (push check)"),
    _m("logprob_gap_max", "learner", "largest |learner - vLLM| logprob of one sampled token", "max"),
    _m("learned_sequences", "learner", "sequences that carried gradient (non-zero advantage or KL)", "sum"),
    _m("update_skipped", "learner", "1 when the update was skipped for a non-finite loss or gradient norm "
       "(nothing moved, nothing pushed)", "max"),
    _m("weights_fingerprint", "learner", "content hash of the LoRA weights every worker serves",
       numeric=False),
    _m("push_bytes", "learner", "bytes of LoRA weights pushed to each worker"),
    _m("probe_gap_max", "rollout", "largest |vLLM - learner| logprob of the probe sequence after the push"),
    _m("memory/{process}", "coordinator", "peak resident memory so far (GB) of each role's largest process: "
       "learner (a rank), rollout (a worker), coordinator; what the memory plan is checked against",
       merge="max"),
    _m("time/{phase}", "coordinator", "seconds of each phase of the step: generate, reward, learn, sync; "
       "step: its wall time (one-step-off: generate ran during the step before; stream: generate is the "
       "wait for the batch); weight_wait (stream): workers' seconds at a due point, summed"),
)
_EXACT = {m.key: m for m in METRICS if m.tag is None}
_FAMILIES = {m.prefix: m for m in METRICS if m.tag is not None}


def lookup(key: str) -> Metric:
    """The schema entry of a row key; KeyError for a key the schema does not declare."""
    if key in _EXACT:
        return _EXACT[key]
    head, sep, tail = key.partition("/")
    if sep and tail and head in _FAMILIES:
        return _FAMILIES[head]
    raise KeyError(f"metric {key!r} is not in observe/schema.py")


MEASURED = ("time", "memory")
"""Families the machine measures (seconds, resident memory) rather than the run computes."""


def reproducible(row: dict) -> dict:
    """`row` without its measured keys: what two runs of one config on one machine agree on bit for bit.

    >>> reproducible({"step": 3, "time/learn": 1.5, "memory/learner": 0.7, "reward_mean": 0.25})
    {'step': 3, 'reward_mean': 0.25}
    """
    return {k: v for k, v in row.items() if not ("/" in k and k.split("/", 1)[0] in MEASURED)}


def merge_ranks(per_rank: list[dict[str, float]]) -> dict[str, float]:
    """One row from every learner rank's metrics, each key merged as the schema says."""
    out: dict[str, float] = {}
    for key in per_rank[0]:
        vals = [m[key] for m in per_rank if key in m]
        merge = lookup(key).merge
        out[key] = float(sum(vals)) if merge == "sum" else float(max(vals)) if merge == "max" else float(
            sum(vals) / len(vals))
    return out


def markdown() -> str:
    """The schema as a Markdown table (docs/metrics.md)."""
    lines = ["| key | role | over learner ranks | meaning |", "|---|---|---|---|"]
    for m in METRICS:
        merge = m.merge if m.role == "learner" and m.numeric else "—"
        lines.append(f"| `{m.key}` | {m.role} | {merge} | {m.help} |")
    return "\n".join(lines) + "\n"


def by_role() -> str:
    """The keys grouped by the role that produces them, one Markdown bullet per role (the README)."""
    roles: dict[str, list[str]] = {}
    for m in METRICS:
        roles.setdefault(m.role, []).append(f"`{m.key}`")
    return "\n".join(f"- {role}: {', '.join(keys)}" for role, keys in roles.items()) + "\n"


if __name__ == "__main__":
    sys.stdout.write(by_role() if sys.argv[1:] == ["--by-role"] else markdown())

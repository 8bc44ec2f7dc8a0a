"""Multi-turn episodes at the token level: sampled ids kept as sampled, observations appended as ids
rendered once, a loss mask on the policy's own tokens, template drift detected.

The fast tests drive `run_episodes` with a scripted engine (it says a fixed JSON turn as token ids);
the last one plays episodes with a real vLLM engine and scores them with a real DeepSpeed learner."""

from __future__ import annotations

import json

import pytest

from actors.worker.agent_loop import TemplateDriftError, Wrapper, check_transcript, run_episodes
from configs.task import TaskConfig
from tasks.base import load_task
from tasks.fund_assistant.episodes import FINAL_TOOL, episode_rows
from tests.ray_sync import Sync

ROWS = episode_rows(3, 6)
TASK = load_task(TaskConfig(name="fund_assistant"))


def _oracle_turn(row: dict, k: int) -> str:
    if k < len(row["expected"]):
        return json.dumps({"thought": "t", "action": row["expected"][k], "plan": ["p"]}, ensure_ascii=False)
    answer = "ok " + (row["outcome"] or ["done"])[0]
    return json.dumps({"thought": "t", "action": {"tool": FINAL_TOOL, "params": {"answer": answer}}},
                      ensure_ascii=False)


def scripted_engine(tok, turn=_oracle_turn, eos=True):
    """An engine that answers each sequence with the scripted turn of its row, as token ids."""
    calls = []

    def engine(sequences):
        calls.append(len(sequences))
        out = []
        for seq in sequences:
            text = tok.decode(seq)
            row = next(r for r in ROWS if r["request"] in text)
            k = text.count("<|im_start|>assistant") - 1
            ids = tok.encode(turn(row, k), add_special_tokens=False) + ([tok.eos_token_id] if eos else [])
            out.append((ids, [-0.25] * len(ids)))
        return out

    return engine, calls


def test_episodes_keep_sampled_ids_and_mask_only_the_policys_tokens(tiny_tokenizer):
    tok = tiny_tokenizer
    engine, calls = scripted_engine(tok)
    samples = run_episodes(ROWS, lambda: TASK.environment(6), tok, engine, max_context=4096)
    assert calls[0] == len(ROWS)  # every episode's first turn in one engine call
    for row, s in zip(ROWS, samples, strict=True):
        assert s.episode.score["success"] == 1.0 and not s.truncated
        assert len(s.token_ids) == len(s.loss_mask) == len(s.logprobs)
        policy = [t for t, m in zip(s.token_ids, s.loss_mask) if m]
        said = [tok.encode(_oracle_turn(row, k), add_special_tokens=False) + [tok.eos_token_id]
                for k in range(len(row["expected"]) + 1)]
        assert policy == [t for turn in said for t in turn]  # exactly the sampled ids, nothing re-tokenized
        assert all(lp == (-0.25 if m else 0.0) for lp, m in zip(s.logprobs, s.loss_mask))
        observed = tok.decode([t for t, m in zip(s.token_ids, s.loss_mask) if not m])
        for m in s.episode.messages:
            if m["role"] == "tool":
                assert m["content"] in observed
        check_transcript(tok, s)


def test_an_episode_that_outgrows_its_context_is_truncated(tiny_tokenizer):
    engine, _ = scripted_engine(tiny_tokenizer)
    samples = run_episodes(ROWS[:2], lambda: TASK.environment(6), tiny_tokenizer, engine, max_context=100)
    assert all(s.truncated and s.episode.score["success"] == 0.0 and len(s.episode.turns) == 1
               for s in samples)
    for s in samples:
        check_transcript(tiny_tokenizer, s)  # ends on an observation, the next turn opened


def test_a_turn_cut_by_the_length_limit_is_closed_by_the_template(tiny_tokenizer):
    engine, _ = scripted_engine(tiny_tokenizer, eos=False)  # no end-of-turn token sampled
    samples = run_episodes(ROWS[:2], lambda: TASK.environment(3), tiny_tokenizer, engine, max_context=4096)
    for s in samples:
        check_transcript(tiny_tokenizer, s)


def test_a_broken_template_round_trip_is_detected(tiny_tokenizer):
    import copy

    tok = copy.deepcopy(tiny_tokenizer)
    # A template that rewrites tool results when it renders them: the ids appended during the episode
    # are not the conversation the template describes.
    shout = "{{ m['content'] | upper if m['role'] == 'tool' else m['content'] }}"
    tok.chat_template = tok.chat_template.replace("{{ m['content'] }}", shout)
    engine, _ = scripted_engine(tok)
    english = [r for r in ROWS if r["lang"] == "en"][:1]  # observations with letters to change
    samples = run_episodes(english, lambda: TASK.environment(6), tok, engine, max_context=4096)
    with pytest.raises(TemplateDriftError, match="different conversation"):
        check_transcript(tok, samples[0])
    # A template that renders earlier turns differently once a tool message follows is refused at once.
    tok.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                         "{% if loop.last %}<|im_end|>\n{% else %}<|im_end|>{% endif %}{% endfor %}"
                         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    with pytest.raises(TemplateDriftError, match="earlier turns"):
        Wrapper.of(tok)


@pytest.mark.vllm
@pytest.mark.deepspeed
@pytest.mark.ray
def test_real_engine_episodes_train_with_the_single_turn_logprob_gap(tiny_paths, ray_local):
    """vLLM plays multi-turn episodes (the untrained tiny policy: malformed turns, error observations,
    more turns); the learner scores the same ids with the observations masked. The gap between the
    two on the policy's tokens stays at the single-turn level: no token drifted between the turns."""
    from actors.worker.rollout_worker import RolloutWorker
    from configs.algorithm import AlgorithmConfig
    from configs.learner import LearnerConfig
    from configs.model import LoraConfig, ModelConfig
    from configs.rollout import RolloutConfig
    from contracts.types import TrainBatch
    from learner.learner import Learner, free_port

    lora = LoraConfig(r=4, alpha=8)
    worker = ray_local.remote(RolloutWorker).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), RolloutConfig(max_tokens=24), lora, seed=0)
    learner = ray_local.remote(Learner).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), ModelConfig(lora=lora),
        LearnerConfig(zero_stage=2, lr=1e-3, micro_batch_size=4), AlgorithmConfig())
    try:
        w, rank = Sync(worker), Sync(learner)
        assert rank.setup("127.0.0.1", free_port()) > 0
        task = TaskConfig(name="fund_assistant")
        played = w.play_episodes(ROWS, task, max_turns=3, n=1, temperature=1.0, seed=5)
        again = w.play_episodes(ROWS, task, max_turns=3, n=1, temperature=1.0, seed=5).groups
    finally:
        ray_local.kill(worker)
    assert [len(g) for g in played.groups] == [1] * len(ROWS) and played.policy_version == 0
    samples = [g[0] for g in played.groups]
    assert all(s.policy_version == 0 and s.versions is None for s in samples)
    again = [g[0] for g in again]
    assert [s.token_ids for s in again] == [s.token_ids for s in samples]  # seeded
    assert sum(len(s.episode.turns) for s in samples) > len(samples)  # several turns per episode
    assert all(len(s.token_ids) > s.policy_tokens for s in samples if len(s.episode.turns) > 1)
    batch = TrainBatch([s.prompt_ids for s in samples], [s.token_ids for s in samples],
                       [s.logprobs for s in samples],
                       [float(s.episode.score["total"]) - 0.1 for s in samples],
                       loss_mask=[s.loss_mask for s in samples])
    try:
        m = rank.train_step(batch)
    finally:
        ray_local.kill(learner)
    assert m["logprob_gap_max"] < 1e-3 and m["logprob_gap_mean"] < 1e-5, m


def test_episode_metrics_count_turns_calls_errors_and_observation_tokens(tiny_tokenizer):
    from actors.worker.agent_loop import episode_metrics

    engine, _ = scripted_engine(tiny_tokenizer)
    good = run_episodes(ROWS, lambda: TASK.environment(6), tiny_tokenizer, engine, max_context=4096)
    bad_engine, _ = scripted_engine(tiny_tokenizer, turn=lambda row, k: '{"thought": "t", "action": '
                                    '{"tool": "teleport", "params": {}}, "plan": ["p"]}')
    bad = run_episodes(ROWS[:2], lambda: TASK.environment(2), tiny_tokenizer, bad_engine, max_context=4096)
    m = episode_metrics(good + bad)
    calls = sum(len(r["expected"]) for r in ROWS) + 2 * 2
    assert m["tool_calls_per_episode"] == pytest.approx(calls / 8)
    assert m["tool_error_rate"] == pytest.approx(4 / calls)  # the teleports only
    assert m["success_rate"] == pytest.approx(6 / 8) and m["frac_truncated_episodes"] == pytest.approx(2 / 8)
    assert m["episode_turns_mean"] == pytest.approx((sum(len(r["expected"]) + 1 for r in ROWS) + 4) / 8)
    tokens = sum(len(s.token_ids) for s in good + bad)
    masked = sum(len(s.token_ids) - s.policy_tokens for s in good + bad) / tokens
    assert m["obs_token_frac"] == pytest.approx(masked) and 0.0 < masked < 1.0


def test_the_episode_eval_table_splits_success_by_category(tiny_tokenizer):
    from actors.worker.agent_loop import episode_eval

    engine, _ = scripted_engine(tiny_tokenizer)
    rows = ROWS[:4]
    samples = run_episodes(rows, lambda: TASK.environment(6), tiny_tokenizer, engine, max_context=4096)
    samples[0].episode.score["success"] = 0.0  # as if the first episode had failed
    table = episode_eval(rows, samples)
    first = rows[0]["category"]
    same = [r for r in rows if r["category"] == first]
    assert table["per_category"][first] == pytest.approx((len(same) - 1) / len(same))
    assert set(table["per_category"]) == {r["category"] for r in rows}
    assert table["success_rate"] == pytest.approx(3 / 4) and table["n"] == 4 and table["truncated"] == 0.0

"""The OpenAI gateway on a real rollout worker (the tiny model's vLLM engine, in this process), driven by
the real `openai` client through harnesses (tests/actors/harnesses.py).

It checks that what a session records is what the engine sampled and what the chat template renders
(nothing tokenized again: greedy ids against the worker's own `generate` of the same prompt); that a
two-turn conversation with a tool call is one sample; that tool calls come back parsed; that requests
without the run's token, and requests that would sample off the policy, are refused; that a harness
that raises or hangs is that episode's failure only."""

from __future__ import annotations

import pytest

from actors.worker.sessions import session_samples
from models.tool_template import TOOL_PARSER, TOOLS_CHAT_TEMPLATE
from tests.actors import harnesses

TOKEN = "test-run-token"


@pytest.fixture(scope="module")
def worker(tiny_paths):
    from actors.worker.rollout_worker import RolloutWorker
    from configs.model import LoraConfig
    from configs.rollout import RolloutConfig

    cfg = RolloutConfig(n=2, max_tokens=24, max_model_len=512, kv_cache_memory_bytes=64 * 1024**2)
    w = RolloutWorker(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), cfg, LoraConfig(),
                      request_seeds=True)
    started = w.gateway_start(TOKEN, chat_template=TOOLS_CHAT_TEMPLATE, tool_parser=TOOL_PARSER)
    assert started["address"].startswith("http://127.0.0.1:") and started["template_keeps_prefix"]
    yield w
    w.gateway_stop()


def _render(tok, messages, tools=None) -> list[int]:
    text = tok.apply_chat_template(messages, tools=tools, chat_template=TOOLS_CHAT_TEMPLATE, tokenize=False,
                                   add_generation_prompt=True)
    return tok(text, add_special_tokens=False)["input_ids"]


def test_a_session_records_the_rendered_prompt_and_the_ids_the_engine_sampled(worker, tiny_tokenizer):
    rows = [{"question": "查一下我的余额"}]
    (played,) = worker.play_sessions(rows, "tests.actors.harnesses:two_turns", n=1)
    assert played.error is None and played.reward == 1.0, played.error
    first, second = played.calls
    question = [{"role": "user", "content": "查一下我的余额"}]
    assert first.prompt_ids == _render(tiny_tokenizer, question, harnesses.TOOLS)
    greedy = worker.generate([tiny_tokenizer.decode(first.prompt_ids)], n=1, temperature=0.0,
                             max_tokens=24).groups[0][0]
    assert first.sampled_ids == greedy.token_ids  # what the engine samples for that prompt, unchanged
    assert first.logprobs == pytest.approx(greedy.logprobs, abs=1e-5)
    # The second call's prompt is the conversation so far (the reply, a tool result): it extends the
    # first call's prompt and sampled ids token for token, so the session is one sample.
    assert second.prompt_ids[: len(first.prompt_ids) + len(first.sampled_ids)] == (
        first.prompt_ids + first.sampled_ids)
    (sample,) = session_samples(played.calls)
    assert sample.policy_tokens == len(first.sampled_ids) + len(second.sampled_ids)
    observation = second.prompt_ids[len(first.prompt_ids) + len(first.sampled_ids):]
    assert "<tool_response>" in tiny_tokenizer.decode(observation)


def test_n_sessions_of_each_row_run_together_and_fail_alone(worker):
    rows = [{"question": "查一下我的余额"}, {"question": "raise"}, {"question": "hang"}]
    played = worker.play_sessions(rows, "tests.actors.harnesses:one_turn_or_fail", n=2, timeout_s=5.0)
    assert [p.row_index for p in played] == [0, 0, 1, 1, 2, 2]
    ok, raised, hung = played[0:2], played[2:4], played[4:6]
    assert all(p.error is None and p.reward is not None and len(p.calls) == 1 for p in ok)
    assert all("RuntimeError: the harness failed" in p.error for p in raised)
    assert all(p.error == "timed out after 5s" for p in hung)


def test_requests_without_the_token_or_that_would_sample_off_the_policy_are_refused(worker):
    (played,) = worker.play_sessions([{}], "tests.actors.harnesses:refusals", n=1)
    assert played.error is None, played.error
    assert played.metrics == {"unauthorized": 401.0, "required_tool": 400.0, "stop_strings": 400.0,
                              "models": 1.0, "completion": 1.0}
    assert len(played.calls) == 1  # the completion; nothing refused was sampled


def test_an_openai_agents_sdk_agent_runs_unchanged_through_the_gateway(worker, tiny_tokenizer, monkeypatch):
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")  # no traces sent anywhere
    rows = [{"question": "查一下我的余额"}]
    (played,) = worker.play_sessions(rows, "tests.actors.harnesses:agents_sdk", n=1)
    assert played.error is None, played.error
    first = played.calls[0]
    # the SDK's request, rendered by the gateway: its instructions as the system turn, its tool listed
    text = tiny_tokenizer.decode(first.prompt_ids)
    assert text.startswith("<|im_start|>system\nAnswer the user's question") and '"check_balance"' in text
    greedy = worker.generate([text], n=1, temperature=0.0, max_tokens=16).groups[0][0]
    assert first.sampled_ids == greedy.token_ids
    assert len(session_samples(played.calls)) == 1


def _played(worker, rows, harness, **kw):
    """`play_harness` as a run calls it (the samples), at the run's sampling settings."""
    from actors.generation import Generation

    kw = {"n": 2, "temperature": 0.0, "max_tokens": 12, "seed": 0, "max_turns": 6, **kw}
    return Generation.of([worker.play_harness(rows, harness, TOKEN, **kw)])


def test_a_run_samples_each_call_at_its_own_settings_and_the_session_is_one_sample(worker, tiny_tokenizer):
    # The harness asks for temperature 2.0 and 400 tokens; the run says greedy and 12: both sessions of the
    # row are the greedy ones, each call at most 12 tokens, and the second call is past max_turns (1).
    rows = [{"question": "查一下我的余额"}]
    gen = _played(worker, rows, "tests.actors.harnesses:hot_two_turns", max_turns=1)
    (group,) = gen.groups
    a, b = group
    assert a.token_ids == b.token_ids and a.policy_tokens <= 12 and a.parts is None
    prompt = tiny_tokenizer.decode(a.prompt_ids)
    greedy = worker.generate([prompt], n=1, temperature=0.0, max_tokens=12).groups[0][0]
    assert a.token_ids == greedy.token_ids
    # the call limit made the episode truncated; the harness's own return is the score
    assert a.truncated and a.episode.score["total"] == 1.0 and a.episode.score["turns"] == 1.0
    assert a.episode.error is None and a.episode.messages[-1]["role"] == "assistant"


def test_a_session_that_rewrites_its_history_is_cut_and_every_piece_is_trained(worker):
    from actors.driver.step_data import train_batch
    from algo.step import StepResult

    gen = _played(worker, [{"question": "hi"}], "tests.actors.harnesses:rewrites_history", n=1)
    (sample,) = gen.samples
    assert sample.parts is not None and len(sample.pieces()) == 2
    assert sample.policy_tokens == sum(len(p.token_ids) for p in sample.pieces())
    import torch

    out = StepResult(advantages=torch.tensor([[0.5]]), token_weights=None, metrics={}, active=False,
                     event=None, trained=torch.tensor([[True]]))
    batch = train_batch(gen, out, version=0)
    assert batch.advantages == [0.5, 0.5]  # both pieces with the session's advantage
    assert [len(c) for c in batch.completion_ids] == [len(p.token_ids) for p in sample.pieces()]


def test_the_warm_up_renders_a_harness_conversation_as_the_gateway_does(tiny_paths, tiny_tokenizer):
    """Each request of the fund harness's scripted conversation, rendered by the gateway (vLLM's render
    path, as a played session's calls are), has the prompt ids the warm-up builds for it, and the warm-up's
    example joins them (the tool results masked) as a session's calls are joined."""
    import asyncio

    from actors.driver.harness_warmup import conversations, harness_examples
    from actors.worker.gateway.render import Renderer
    from configs.loader import load_config
    from tasks.base import load_task

    cfg = load_config("tiny-cpu-agent-openai", ["task.options.n_episodes=20"])
    task = load_task(cfg.task)
    row = task.episode_rows()[0][0]
    (prompt, completion, mask), = harness_examples(cfg, task, tiny_tokenizer, [row])
    renderer = Renderer(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), 1024, "policy",
                        TOOLS_CHAT_TEMPLATE, TOOL_PARSER)
    asked = conversations(cfg, task, [row])[0]
    rendered = [asyncio.run(renderer.chat({"model": "policy", "messages": a.messages, "tools": a.tools}))
                for a in asked]
    assert len(asked) == 3 and rendered[0].prompt_ids == prompt
    for later in rendered[1:]:  # every later prompt is the example's prompt and completion so far
        assert later.prompt_ids[len(prompt):] == completion[: len(later.prompt_ids) - len(prompt)]
    assert "<tool_call>" in tiny_tokenizer.decode(completion) and 0 in mask and mask[-1] == 1


def test_a_deterministic_harness_plays_the_same_sessions_whatever_the_timing_and_the_batch(worker):
    """Per-request seeds and lock-step stepping: the same rows played twice by a harness whose pauses
    between calls are random give the same ids and logprobs; a row played alone gives the same ids."""
    rows = [{"question": "查一下我的余额"}, {"question": "hi"}]
    kw = {"n": 3, "temperature": 1.0, "max_tokens": 10, "seed": 7}
    first = _played(worker, rows, "tests.actors.harnesses:jittery", **kw).samples
    again = _played(worker, rows, "tests.actors.harnesses:jittery", **kw).samples
    alone = _played(worker, rows[:1], "tests.actors.harnesses:jittery", **kw).samples
    assert len({tuple(s.token_ids) for s in first[:3]}) > 1  # the three sessions of a row differ
    assert [s.token_ids for s in first] == [s.token_ids for s in again]
    assert [s.logprobs for s in first] == [s.logprobs for s in again]
    assert [s.token_ids for s in first[:3]] == [s.token_ids for s in alone]
    assert all(s.episode.score["turns"] == 3 for s in first)


def test_during_a_run_a_session_makes_one_call_at_a_time_of_one_choice(worker):
    (sample,) = _played(worker, [{"question": "hi"}], "tests.actors.harnesses:two_at_once", n=1).samples
    score = sample.episode.score
    # which of two calls at once goes first would depend on timing; n choices would cut the session
    assert score["refused_concurrent"] == 1.0 and score["refused_n2"] == 1.0 and score["turns"] == 1.0


def test_a_session_cut_by_its_timeout_leaves_nothing_to_the_next_of_its_name(worker):
    rows = [{"question": "hi"}]
    (cut,) = _played(worker, rows, "tests.actors.harnesses:call_then_hang", n=1, timeout_s=2.0).samples
    assert cut.episode.error == "timed out after 2s" and cut.episode.score["turns"] == 1.0
    (again,) = _played(worker, rows, "tests.actors.harnesses:two_turns", n=1).samples  # the same name
    assert again.episode.error is None and again.episode.score["turns"] == 2.0 and again.parts is None


def test_a_conversation_longer_than_the_context_is_a_400_and_a_truncated_episode(worker):
    (sample,) = _played(worker, [{"question": "hi"}], "tests.actors.harnesses:too_long", n=1).samples
    assert sample.episode.score["status"] == 400.0 and sample.episode.truncated
    assert sample.episode.error == "the harness made no model call"  # nothing sampled: not trained on

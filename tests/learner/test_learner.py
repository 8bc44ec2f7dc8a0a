"""Learner on a real DeepSpeed engine (gloo, CPU): steps, shortcuts, export.

The rank runs as a Ray actor (the same class the coordinator uses): torch.distributed is process-global,
and the vLLM tests in this session initialise it too, so each engine gets its own process.
"""

from __future__ import annotations

import pytest
import torch

from configs.algorithm import AlgorithmConfig
from configs.learner import LearnerConfig
from configs.model import LoraConfig, ModelConfig
from contracts.types import TrainBatch
from learner.learner import Learner, free_port
from tests.ray_sync import Sync

pytestmark = pytest.mark.deepspeed


def _batch(advantages, seed=0, rollout_logprobs=None):
    g = torch.Generator().manual_seed(seed)
    n = len(advantages)
    prompts = [[1, 5, 6, 7, 2] for _ in range(n)]
    comps = [torch.randint(10, 300, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g).tolist()
             for _ in range(n)]
    lps = rollout_logprobs or [[0.0] * len(c) for c in comps]
    return TrainBatch(prompts, comps, lps, list(advantages))


@pytest.fixture(scope="module")
def learner(tiny_paths, ray_local):
    model_cfg = ModelConfig(lora=LoraConfig(r=4, alpha=8))
    actor = ray_local.remote(Learner).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), model_cfg,
        LearnerConfig(zero_stage=2, lr=1e-2, micro_batch_size=3), AlgorithmConfig())
    rank = Sync(actor)
    assert rank.setup("127.0.0.1", free_port()) > 0
    yield rank
    ray_local.kill(actor)


def test_zero_advantage_batch_is_skipped_and_changes_nothing(learner):
    before = learner.export_lora()
    m = learner.train_step(_batch([0.0] * 4))
    after = learner.export_lora()
    assert m["learned_sequences"] == 0.0
    assert after.fingerprint == before.fingerprint  # no gradient, fresh optimizer: weights unchanged
    assert after.version == before.version + 1


def test_step_moves_weights_and_reports_the_logprob_gap(learner):
    before = learner.export_lora()
    batch = _batch([1.0, -1.0, 0.5, -0.5, 0.0])
    m = learner.train_step(batch)
    after = learner.export_lora()
    assert after.fingerprint != before.fingerprint
    assert m["learned_sequences"] == 4.0 and m["grad_norm"] > 0
    assert m["ratio_mean"] == pytest.approx(1.0)  # on-policy: old logprobs are the current ones
    # Rollout logprobs of 0 against a real model: the gap is the model's own -logprob, clearly > 0.
    assert m["logprob_gap_mean"] > 0.5
    for key in ("clip_frac_low", "clip_frac_high", "entropy", "loss", "logprob_gap_max"):
        assert key in m


def test_exported_lora_is_peft_shaped(learner):
    update = learner.export_lora()
    keys = list(update.weights)
    assert keys and all(".lora_A." in k or ".lora_B." in k for k in keys)
    assert update.scale == pytest.approx(2.0)
    assert all(v.dtype == torch.float32 and v.device.type == "cpu" for v in update.weights.values())
    # PEFT's adapter keys (no adapter name), one A and one B per targeted module of every layer.
    assert not any(".default." in k for k in keys)
    assert sum(".lora_A." in k for k in keys) == sum(".lora_B." in k for k in keys) == len(keys) // 2


def test_the_probe_is_scored_without_lora_dropout(tiny_paths, ray_local):
    """The workers serve the weights without dropout; a probe scored in train mode (where a training step
    leaves the engine) would differ from theirs on every push, and from itself."""
    model_cfg = ModelConfig(lora=LoraConfig(r=4, alpha=8, dropout=0.5))
    actor = ray_local.remote(Learner).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), model_cfg,
        LearnerConfig(zero_stage=2, lr=1e-2, micro_batch_size=3), AlgorithmConfig())
    rank = Sync(actor)
    try:
        assert rank.setup("127.0.0.1", free_port()) > 0
        rank.set_probe([1, 5, 6, 7, 2], [11, 12, 13, 14, 15, 16])
        rank.train_step(_batch([1.0, -1.0, 0.5]))  # LoRA B is no longer 0: dropout would show
        first, again = rank.export_lora(), rank.export_lora()
        assert first.probe_logprobs == again.probe_logprobs and len(first.probe_logprobs) == 6
    finally:
        ray_local.kill(actor)


def test_lr_schedule_reaches_the_deepspeed_optimizer(tiny_paths, ray_local):
    # Linear decay over one RL step: step 1 at the full lr, step 2 (past the end) at lr 0. If the
    # scheduler's lr did not reach the optimizer ZeRO wraps, the second step would still move weights.
    cfg = LearnerConfig(zero_stage=2, lr=1e-2, micro_batch_size=3, lr_schedule="linear")
    actor = ray_local.remote(Learner).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), ModelConfig(lora=LoraConfig(r=4, alpha=8)),
        cfg, AlgorithmConfig(), rl_steps=1)
    rank = Sync(actor)
    try:
        assert rank.setup("127.0.0.1", free_port()) > 0
        start = rank.export_lora().fingerprint
        first = rank.train_step(_batch([1.0, -1.0, 0.5]))
        moved = rank.export_lora().fingerprint
        second = rank.train_step(_batch([1.0, -1.0, 0.5], seed=1))
        assert first["lr"] == pytest.approx(1e-2) and second["lr"] == 0.0
        assert moved != start and second["grad_norm"] > 0
        assert rank.export_lora().fingerprint == moved
    finally:
        ray_local.kill(actor)


def test_a_decaying_schedule_needs_the_run_length():
    with pytest.raises(ValueError, match="rl_steps"):
        Learner("m", "t", ModelConfig(), LearnerConfig(lr_schedule="cosine"), AlgorithmConfig())
    # train.steps=0 (warm-up and eval only) is a run length too: it used to fail the learner's start.
    Learner("m", "t", ModelConfig(), LearnerConfig(lr_schedule="cosine"), AlgorithmConfig(), rl_steps=0)


def test_a_non_finite_loss_skips_the_update(learner):
    before = learner.export_lora()
    m = learner.train_step(_batch([1.0, float("nan"), -1.0]))
    after = learner.export_lora()
    assert m["update_skipped"] == 1.0
    assert after.fingerprint == before.fingerprint and after.version == before.version  # nothing moved
    m = learner.train_step(_batch([1.0, -1.0, 0.5], seed=3))  # and the next good batch trains normally
    assert m["update_skipped"] == 0.0 and learner.export_lora().fingerprint != before.fingerprint


def test_saved_state_continues_exactly(tiny_paths, ray_local, tmp_path):
    """LoRA, optimizer (ZeRO-2 partitions) and lr schedule come back: the next update on a restored
    rank gives the same weights, bit for bit, as on the rank that never stopped."""
    cfg = LearnerConfig(zero_stage=2, lr=1e-2, micro_batch_size=3, lr_schedule="linear")

    def rank(rl_steps=4):
        actor = ray_local.remote(Learner).options(num_cpus=1).remote(
            str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir),
            ModelConfig(lora=LoraConfig(r=4, alpha=8)),
            cfg, AlgorithmConfig(), rl_steps=rl_steps)
        r = Sync(actor)
        assert r.setup("127.0.0.1", free_port()) > 0
        return r, actor

    a, actor_a = rank()
    a.train_step(_batch([1.0, -1.0, 0.5]))
    a.save_state(str(tmp_path / "ckpt"))
    a.train_step(_batch([0.5, -0.5, 1.0], seed=1))
    want = a.export_lora()
    ray_local.kill(actor_a)
    b, actor_b = rank()
    try:
        assert b.load_state(str(tmp_path / "ckpt")) == 1
        m = b.train_step(_batch([0.5, -0.5, 1.0], seed=1))
        got = b.export_lora()
    finally:
        ray_local.kill(actor_b)
    assert m["lr"] == pytest.approx(1e-2 * 0.75)  # the schedule resumed at its second step
    assert (got.version, got.fingerprint) == (want.version, want.fingerprint)
    # Resumed with a longer run (more steps): its first step already follows the longer decay, not
    # the lr the saved run's schedule left in the optimizer state.
    longer, actor_c = rank(rl_steps=8)
    try:
        longer.load_state(str(tmp_path / "ckpt"))
        assert longer.train_step(_batch([0.5, -0.5, 1.0], seed=1))["lr"] == pytest.approx(1e-2 * 7 / 8)
    finally:
        ray_local.kill(actor_c)


def test_observation_tokens_are_left_out_of_the_update_and_the_metrics(learner, tmp_path):
    """A multi-turn sample's completion holds tool observations the policy did not sample (mask 0).
    Whatever stands at those positions in vLLM's logprobs (which have none there) and in the token
    weights must not change the update or the metrics; without the mask the same change does."""
    base = _batch([1.0, -1.0, 0.5], seed=7)
    masks = [[1, 1, 0, 0, 1, 1, 1, 1][: len(c)] for c in base.completion_ids]

    def variant(noise: float, masked: bool) -> TrainBatch:
        lps = [[noise if m == 0 else -2.0 for m in mk] for mk in masks]
        weights = [[3.0 if m == 0 else 1.0 for m in mk] if noise else [1.0] * len(mk) for mk in masks]
        return TrainBatch(base.prompt_ids, base.completion_ids, lps, base.advantages, token_weights=weights,
                          loss_mask=masks if masked else None)

    learner.save_state(str(tmp_path / "start"))

    def train(batch):
        learner.load_state(str(tmp_path / "start"))
        m = learner.train_step(batch)
        return learner.export_lora().fingerprint, m

    quiet, m_quiet = train(variant(0.0, masked=True))
    noisy, m_noisy = train(variant(-30.0, masked=True))
    assert noisy == quiet
    for key in ("loss", "entropy", "logprob_gap_mean", "logprob_gap_max", "is_ratio_mean", "clip_frac_high"):
        assert m_noisy[key] == m_quiet[key], key
    unmasked_quiet, _ = train(variant(0.0, masked=False))
    unmasked_noisy, m_unmasked = train(variant(-30.0, masked=False))
    assert unmasked_noisy != unmasked_quiet and unmasked_quiet != quiet
    assert m_unmasked["logprob_gap_max"] > m_noisy["logprob_gap_max"]


def test_shared_prompt_learner_takes_the_same_step(tiny_paths, ray_local):
    """`share_prompt` (each prompt run once a micro-batch) updates the LoRA weights as running every
    prompt+completion whole does, up to float rounding, with fewer micro-batches; a step at another
    advantage would differ by far more than that rounding."""
    g = torch.Generator().manual_seed(5)
    prompts = [[1, 5, 6, 7, 2] * 6] * 3 + [[1, 8, 9, 2] * 5] * 3
    comps = [torch.randint(10, 300, (n,), generator=g).tolist() for n in (4, 7, 2, 6, 3, 5)]
    advantages = [1.0, -0.5, 0.0, 0.5, -1.0, 1.0]
    batch = TrainBatch(prompts, comps, [[0.0] * len(c) for c in comps], advantages)
    flipped = TrainBatch(prompts, comps, batch.rollout_logprobs, [-a for a in advantages])

    def step(share: bool, b: TrainBatch):
        actor = ray_local.remote(Learner).options(num_cpus=1).remote(
            str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir),
            ModelConfig(lora=LoraConfig(r=4, alpha=8)),
            LearnerConfig(zero_stage=2, lr=1e-2, share_prompt=share), AlgorithmConfig())
        try:
            rank = Sync(actor)
            assert rank.setup("127.0.0.1", free_port()) > 0
            micro = rank.plan_micro_batches(b)
            m = rank.train_step(b)
            return micro, m, rank.export_lora()
        finally:
            ray_local.kill(actor)

    micro_whole, m_whole, whole = step(False, batch)
    micro_shared, m_shared, shared = step(True, batch)
    _, _, other = step(True, flipped)
    assert micro_whole == [[4, 5, 3, 0, 1]] and micro_shared == [[0, 1], [4, 5, 3]]
    assert m_shared["learned_sequences"] == m_whole["learned_sequences"] == 5.0
    assert m_shared["loss"] == pytest.approx(m_whole["loss"], rel=1e-4)
    moved = gap = 0.0
    for k, w in whole.weights.items():
        gap = max(gap, (shared.weights[k] - w).abs().max().item())
        moved = max(moved, (other.weights[k] - w).abs().max().item())
    assert gap < 1e-5 < 1e-3 < moved

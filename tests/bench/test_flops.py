"""bench.flops counts the learner's work from the model's shapes; bench.real's table and fit."""

from __future__ import annotations

from bench.flops import (
    attention_flops,
    batch_work,
    linear_flops_per_token,
    lora_flops_per_token,
    matmul_flops_per_s,
    segments_of,
    update_flops,
)
from contracts.types import TrainBatch
from models.memory import ModelShape

SMOL = ModelShape(vocab=49152, hidden=576, ffn=1536, layers=30, heads=9, kv_heads=3, head_dim=64, tied=True)


def test_linear_flops_are_two_per_weight_of_the_blocks():
    from transformers import LlamaConfig, LlamaForCausalLM

    conf = LlamaConfig(vocab_size=300, hidden_size=48, intermediate_size=80, num_hidden_layers=3,
                       num_attention_heads=6, num_key_value_heads=2, tie_word_embeddings=True)
    model = LlamaForCausalLM(conf)
    weights = sum(m.weight.numel() for n, m in model.model.layers.named_modules()
                  if m.__class__.__name__ == "Linear")
    assert linear_flops_per_token(ModelShape.of_config(conf.to_dict())) == 2 * weights
    # SmolLM2-135M: ~106 M weights in its blocks (135 M less the 28 M tied embedding)
    assert 2 * 100e6 < linear_flops_per_token(SMOL) < 2 * 110e6


def test_attention_counts_each_position_it_attends():
    brute = sum(4 * SMOL.layers * SMOL.heads * SMOL.head_dim * (t + 1) for t in range(100, 140))
    assert attention_flops(SMOL, 100, 40) == brute
    # a prompt and its completion run apart attend to what they would attend to run whole
    assert attention_flops(SMOL, 0, 100) + attention_flops(SMOL, 100, 40) == attention_flops(SMOL, 0, 140)


def test_lora_counts_only_its_modules():
    q = lora_flops_per_token(SMOL, 16, ["q_proj"])
    assert q == 2 * SMOL.layers * 16 * (576 + 576)
    assert lora_flops_per_token(SMOL, 16, ["q_proj", "not_a_layer"]) == q


def test_shared_prompt_does_less_work_and_less_padding():
    prompt, comps = [1] * 600, [[2] * 40, [2] * 60, [2] * 80]
    whole, real_w, pad_w = segments_of([prompt] * 3, comps, shared=False)
    shared, real_s, pad_s = segments_of([prompt] * 3, comps, shared=True)
    assert real_w == 3 * 600 + 180 and pad_w == 3 * 680
    assert real_s == 600 + 180 and pad_s == 600 + 3 * 80
    f_whole = update_flops(SMOL, whole, 180, 16, ["q_proj"])
    f_shared = update_flops(SMOL, shared, 180, 16, ["q_proj"])
    # what sharing saves is exactly the prompt's work, twice (the head scores completions only)
    assert f_whole - f_shared == 2 * update_flops(SMOL, [(0, 600)], 0, 16, ["q_proj"])
    assert f_whole > 2 * f_shared


def test_batch_work_follows_the_plan():
    batch = TrainBatch([[1] * 10] * 4, [[2] * 5, [2] * 3, [2] * 5, [2] * 5], [[0.0] * 5] * 4, [1.0] * 4)
    both = batch_work(batch, [[0, 1], [2, 3], []], lambda p, c: False, SMOL, 16, ["q_proj"])
    one = batch_work(batch, [[0, 1]], lambda p, c: False, SMOL, 16, ["q_proj"])
    assert both["real_tokens"] == 15 + 13 + 15 + 15 and both["padded_tokens"] == 4 * 15
    assert one["flops"] < both["flops"]
    shared = batch_work(batch, [[0, 1, 2, 3]], lambda p, c: True, SMOL, 16, ["q_proj"])
    assert shared["real_tokens"] == 10 + 18 and shared["flops"] < both["flops"]


def test_matmul_peak_is_measured():
    tiny = ModelShape(vocab=10, hidden=32, ffn=64, layers=1, heads=2, kv_heads=1, head_dim=16, tied=True)
    assert matmul_flops_per_s(tiny, rows=64, seconds=0.02) > 1e6


class _Units:
    def __init__(self, units):
        self.units = units

    def median(self, key="seconds"):
        import statistics

        return statistics.median(u[key] for u in self.units)


def test_real_table_ratios_and_fit():
    from bench.real import fit_per_token, rows, scaling

    learner = {"flops": 4e11, "peak_flops": 2e11, "real_tokens": 900, "padded_tokens": 1000, "learned": 64}
    m = {
        "gen-ours": _Units([{"seconds": 1.0, "tokens": 960}]),
        "gen-bare": _Units([{"seconds": 1.0, "tokens": 1000}]),
        "learner-ds": _Units([{**learner, "seconds": 4.0}]),  # 1e11 FLOP/s of 2e11
        "learner-shared": _Units([{**learner, "flops": 1e11, "seconds": 2.0}]),
        "rl-sync": _Units([{"seconds": 10.0, "sync": 0.1, "memory/learner": 4.0, "memory/rollout": 3.0}]),
        "rl-off": _Units([{"seconds": 8.0, "sync": 0.1, "learn": 7.5}]),
        "trl": _Units([{"seconds": 25.0}]),
    }
    table = {r["measure"].split(" (")[0]: r for r in rows(m)}
    assert abs(table["generation vs bare vLLM"]["ratio"] - 0.96) < 1e-9
    mfu = [r for r in rows(m) if r["measure"].startswith("learner FLOP/s")]
    assert [r["ratio"] for r in mfu] == [0.5, 0.25]  # 4e11 in 4 s and 1e11 in 2 s, of 2e11 FLOP/s
    assert table["learner step: share_prompt vs whole sequences"]["ratio"] == 2.0
    assert table["RL step: synchronous vs TRL GRPOTrainer"]["ratio"] == 2.5
    assert table["RL step: one-step-off vs synchronous"]["ratio"] == 1.25
    assert table["LoRA push / synchronous RL step"]["met"] == "yes"
    memory = table["peak RSS, all roles of the synchronous run"]
    assert memory["ngrpo_ray"] == 7.0 and memory["met"] == "yes"
    assert "10% of its tokens padding" in next(r["measure"] for r in rows(m) if "whole" in r["measure"])

    slope, fixed = fit_per_token([(1000, 3.0), (2000, 5.0), (4000, 9.0)])
    assert abs(slope - 0.002) < 1e-12 and abs(fixed - 1.0) < 1e-9
    points = {f"scale-c{c}": _Units([{"real_tokens": 100 * c, "seconds": 1 + c / 10, "learned": c}])
              for c in (16, 64, 256)}
    text, data = scaling(points)
    assert abs(data["fits"]["completions"]["seconds_per_token"] - 0.001) < 1e-12
    assert "length" not in data["fits"] and text.count("\n") == 2 + 3 + 1

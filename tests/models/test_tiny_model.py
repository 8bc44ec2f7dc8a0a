"""The offline tiny model: deterministic build, Auto classes, the tokenizer trap, vLLM generation."""

from __future__ import annotations

import json

import pytest
import torch


def test_builds_once_and_loads_with_auto_classes(tiny_paths, fund_task):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from configs.model import TinyModelConfig
    from models.tiny import ensure_tiny_model

    # Cached: the same folder, no rebuild.
    assert ensure_tiny_model(TinyModelConfig(), fund_task.corpus(), fund_task.vocabulary()) == tiny_paths
    tok = AutoTokenizer.from_pretrained(tiny_paths.tokenizer_dir)
    # The tokenizer trap (docs/platform.md#tokenizer-trap): a Qwen2Tokenizer would split digits
    # differently than the BPE we trained.
    assert "Qwen2" not in type(tok).__name__
    assert not (tiny_paths.tokenizer_dir / "config.json").exists()
    model = AutoModelForCausalLM.from_pretrained(tiny_paths.model_dir)
    conf = json.loads((tiny_paths.model_dir / "config.json").read_text())
    assert conf["model_type"] == "qwen2" and conf["vocab_size"] == len(tok)
    assert conf["hidden_size"] // conf["num_attention_heads"] in (32, 64, 80, 96, 112, 128)
    assert all(len(tok.tokenize(name)) == 1 for name in fund_task.vocabulary())  # each tool one token
    ids = tok("查一下我的余额 ACC001", return_tensors="pt")["input_ids"]
    assert tok.decode(ids[0]) == "查一下我的余额 ACC001"  # byte-level BPE round-trips Chinese
    out = model.generate(ids, max_new_tokens=5, do_sample=False)
    assert out.shape[1] == ids.shape[1] + 5


def test_chat_template_and_special_tokens(tiny_tokenizer, fund_task):
    text = fund_task.render_prompt(tiny_tokenizer, {"prompt": "查余额"})
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert tiny_tokenizer.eos_token == "<|im_end|>"
    assert len(tiny_tokenizer.tokenize("<|im_end|>")) == 1


def test_build_is_deterministic(tmp_path, monkeypatch, fund_task):
    from safetensors.torch import load_file

    from configs.model import TinyModelConfig
    from models.tiny import ensure_tiny_model

    cfg = TinyModelConfig(num_layers=1, hidden_size=64, num_heads=2, num_kv_heads=1, intermediate_size=64,
                          vocab_size=600)
    corpus = fund_task.corpus()[:3000]
    monkeypatch.setenv("NGRPO_CACHE", str(tmp_path / "a"))
    a = ensure_tiny_model(cfg, corpus)
    monkeypatch.setenv("NGRPO_CACHE", str(tmp_path / "b"))
    b = ensure_tiny_model(cfg, corpus)
    assert a.model_dir != b.model_dir
    wa, wb = (load_file(str(a.model_dir / "model.safetensors")),
              load_file(str(b.model_dir / "model.safetensors")))
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert ((a.tokenizer_dir / "tokenizer.json").read_text()
            == (b.tokenizer_dir / "tokenizer.json").read_text())


@pytest.mark.vllm
def test_generates_in_vllm(tiny_paths):
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(tiny_paths.model_dir), tokenizer=str(tiny_paths.tokenizer_dir), dtype="float32",
              enforce_eager=True, kv_cache_memory_bytes=64 * 1024**2, max_model_len=256, seed=0)
    outs = llm.generate(["<|im_start|>user\n查余额<|im_end|>\n<|im_start|>assistant\n"] * 2,
                        SamplingParams(n=2, temperature=1.0, max_tokens=8, logprobs=0), use_tqdm=False)
    assert len(outs) == 2 and all(len(o.outputs) == 2 for o in outs)
    c = outs[0].outputs[0]
    assert 1 <= len(c.token_ids) <= 8 and len(c.logprobs) == len(c.token_ids)

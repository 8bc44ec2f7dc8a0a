"""LoRA transit: fingerprints, merging into base weights equals PEFT's forward, PEFT-format export."""

from __future__ import annotations

import pytest
import torch

from contracts import lora as lora_io

TARGETS = ["q_proj", "v_proj", "up_proj"]


@pytest.fixture()
def peft_model(tiny_paths):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(tiny_paths.model_dir)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=TARGETS, lora_dropout=0.0))
    with torch.no_grad():  # B starts at 0 (identity); give it values so the merge matters
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    return model


def _lora_sd(model):
    from peft import get_peft_model_state_dict

    return {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}


def test_fingerprint_changes_with_any_value():
    w = {"a.lora_A.weight": torch.ones(2, 3), "a.lora_B.weight": torch.zeros(3, 2)}
    fp = lora_io.fingerprint(w)
    assert fp == lora_io.fingerprint({k: v.clone() for k, v in reversed(list(w.items()))})
    w2 = {k: v.clone() for k, v in w.items()}
    w2["a.lora_B.weight"][1, 1] = 1e-6
    assert lora_io.fingerprint(w2) != fp


def test_merged_weights_match_peft_forward(peft_model, tiny_paths):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    sd = _lora_sd(peft_model)
    base = load_file(str(tiny_paths.model_dir / "model.safetensors"))
    merged = lora_io.merged_weights(base, sd, scale=8 / 4)
    assert set(merged) == {lora_io.base_key(k)[0] for k in sd}
    assert all(any(t in k for t in TARGETS) for k in merged)
    plain = AutoModelForCausalLM.from_pretrained(tiny_paths.model_dir)
    plain.load_state_dict(merged, strict=False)
    ids = torch.randint(5, 500, (2, 12))
    with torch.no_grad():
        a = peft_model(input_ids=ids).logits
        b = plain(input_ids=ids).logits
    assert torch.allclose(a, b, atol=1e-4)
    assert (base["model.layers.0.self_attn.q_proj.weight"].data_ptr()
            != merged["model.layers.0.self_attn.q_proj.weight"].data_ptr())


def test_merging_into_kept_buffers_gives_the_same_weights_and_reuses_them(peft_model, tiny_paths):
    """A worker keeps the merge buffers between pushes: the values are those of a fresh merge, the
    pristine base is untouched, and a second merge writes the same memory (no fresh allocation)."""
    from safetensors.torch import load_file

    sd = _lora_sd(peft_model)
    base = load_file(str(tiny_paths.model_dir / "model.safetensors"))
    pristine = {k: v.clone() for k, v in base.items()}
    fresh = lora_io.merged_weights(base, sd, scale=2.0)
    buffers: dict = {}
    first = lora_io.merged_weights(base, sd, scale=2.0, out=buffers)
    assert set(first) == set(fresh) == set(buffers)
    assert all(torch.allclose(first[k], fresh[k], atol=1e-6) for k in fresh)
    ptrs = {k: t.data_ptr() for k, t in first.items()}
    doubled = {k: v * 2 for k, v in sd.items() if k.endswith("lora_B.weight")} | {
        k: v for k, v in sd.items() if k.endswith("lora_A.weight")}
    second = lora_io.merged_weights(base, doubled, scale=2.0, out=buffers)
    assert {k: t.data_ptr() for k, t in second.items()} == ptrs
    expect = lora_io.merged_weights(base, doubled, scale=2.0)
    assert all(torch.allclose(second[k], expect[k], atol=1e-6) for k in expect)
    assert any(not torch.allclose(second[k], fresh[k]) for k in fresh)  # the buffers hold the new merge
    assert all(torch.equal(base[k], pristine[k]) for k in base)


def test_merge_rejects_bad_keys():
    with pytest.raises(ValueError):
        lora_io.merged_weights({"x.weight": torch.zeros(2, 2)}, {"x.bias": torch.zeros(2)}, 1.0)
    with pytest.raises(KeyError):
        lora_io.merged_weights({}, {"base_model.model.y.lora_A.weight": torch.zeros(1, 2),
                                    "base_model.model.y.lora_B.weight": torch.zeros(2, 1)}, 1.0)


def test_saved_adapter_loads_in_peft(peft_model, tiny_paths, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    sd = _lora_sd(peft_model)
    lora_io.save_peft_adapter(sd, tmp_path / "ad", r=4, alpha=8, target_modules=TARGETS,
                              base_model=str(tiny_paths.model_dir))
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_paths.model_dir),
                                       tmp_path / "ad")
    ids = torch.randint(5, 500, (1, 10))
    with torch.no_grad():
        assert torch.allclose(loaded(input_ids=ids).logits, peft_model(input_ids=ids).logits, atol=1e-5)


def test_an_update_crosses_the_object_store_unchanged_and_writable(peft_model):
    """Ray pickles with protocol 5 and hands large buffers over out of band; the weights come back as
    tensors equal to those sent (same fingerprint), and the receiver may write to them."""
    import pickle

    from contracts.types import LoraUpdate

    weights = _lora_sd(peft_model)
    sent = LoraUpdate(3, weights, lora_io.fingerprint(weights), 2.0, [1, 2, 3], 1, [-0.5, -0.25])
    buffers: list = []
    data = pickle.dumps(sent, protocol=5, buffer_callback=buffers.append)
    assert buffers, "the weights should travel as out-of-band buffers"
    # read-only, as from the store
    got = pickle.loads(data, buffers=[memoryview(bytes(b.raw())) for b in buffers])
    assert lora_io.fingerprint(got.weights) == sent.fingerprint
    assert all(isinstance(v, torch.Tensor) and torch.equal(v, weights[k]) for k, v in got.weights.items())
    assert ((got.version, got.scale, got.probe_ids, got.probe_start, got.probe_logprobs)
            == (3, 2.0, [1, 2, 3], 1, [-0.5, -0.25]))
    next(iter(got.weights.values())).add_(1.0)  # writable
    # the sender's untouched
    assert sent.weights is weights and lora_io.fingerprint(weights) == sent.fingerprint

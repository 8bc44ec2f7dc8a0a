"""shared_prompt_scores runs a group's prompt once: the logprobs, entropy and LoRA gradients of running
each prompt+completion whole, on the tiny model (Qwen2) and on SmolLM2-135M's shapes (Llama)."""

from __future__ import annotations

import pytest
import torch

from learner.sequences import completion_scores, output_layer, pack, shared_prompt_scores


def _lora(model):
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj",
                                                                                  "down_proj"]))
    with torch.no_grad():  # B = 0 at init would make every LoRA A's gradient zero: nothing to compare
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    return model


def _tiny(tiny_paths):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_paths.model_dir))


def _smollm2_shapes():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=2,
                                        num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                        max_position_embeddings=512, tie_word_embeddings=True))


def _scores(model, fn):
    model.zero_grad()
    lp, ent = fn()
    # Weights per position, so a gradient that reached the wrong position would differ.
    w = torch.linspace(0.5, 1.5, lp.shape[1])[None]
    (lp * w).sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    return lp.detach(), ent, grads


@pytest.mark.parametrize("which", ["tiny", "smollm2_shapes"])
def test_shared_prompt_equals_whole_sequences(which, request):
    torch.manual_seed(0)
    base = _tiny(request.getfixturevalue("tiny_paths")) if which == "tiny" else _smollm2_shapes()
    model = _lora(base).eval()
    head = output_layer(model)
    g = torch.Generator().manual_seed(3)
    vocab = model.config.vocab_size
    prompt = torch.randint(3, vocab, (37,), generator=g).tolist()
    # Lengths 1 (only the prompt's last position predicts), ragged, and the longest last.
    completions = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (12, 1, 30, 7)]
    packed = pack([prompt] * len(completions), completions, pad_id=0)
    mask = packed.completion_mask.bool()

    whole = _scores(model, lambda: completion_scores(model, packed, head, with_entropy=True))
    shared = _scores(model, lambda: shared_prompt_scores(model, prompt, completions, head, with_entropy=True))

    assert shared[0].shape == whole[0].shape == (4, 30)
    torch.testing.assert_close(shared[0], whole[0], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(shared[1], whole[1], rtol=1e-4, atol=1e-5)
    assert (shared[0][~mask] == 0).all() and (shared[0][mask] < 0).all()
    assert whole[2] and set(shared[2]) == set(whole[2])
    # The prompt's LoRA gradient arrives through the repeated cache: q_proj of the prompt positions only
    # matters through k/v, so compare every adapter, prompt-side ones included.
    for name, grad in whole[2].items():
        assert grad.abs().sum() > 0, name
        torch.testing.assert_close(shared[2][name], grad, rtol=1e-3, atol=1e-6)


def test_a_wrong_prompt_gives_other_numbers(tiny_paths):
    """The check above can fail: scoring the completions behind another prompt moves the logprobs."""
    torch.manual_seed(0)
    model = _lora(_tiny(tiny_paths)).eval()
    head = output_layer(model)
    g = torch.Generator().manual_seed(4)
    vocab = model.config.vocab_size
    prompt = torch.randint(3, vocab, (20,), generator=g).tolist()
    completions = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (6, 9)]
    with torch.no_grad():
        right, _ = completion_scores(model, pack([prompt] * 2, completions, 0), head)
        wrong, _ = shared_prompt_scores(model, prompt[:-1] + [prompt[-1] + 1], completions, head)
    assert not torch.allclose(right, wrong, atol=1e-3)

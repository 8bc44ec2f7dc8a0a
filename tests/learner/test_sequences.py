"""completion_logits runs the LM head only from the earliest completion on: same logits as the full head."""

from __future__ import annotations

import torch

from learner.sequences import completion_logits, pack, token_logprobs


def _full_head_logits(model, packed):
    logits = model(input_ids=packed.input_ids, attention_mask=packed.attention_mask, use_cache=False).logits
    t = packed.completion_ids.shape[1]
    pos = (packed.starts[:, None] - 1 + torch.arange(t)[None, :]).clamp(max=logits.shape[1] - 1)
    return torch.gather(logits, 1, pos[:, :, None].expand(-1, -1, logits.shape[-1]))


def test_trimmed_head_matches_the_full_head(tiny_paths):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_paths.model_dir)).eval()
    g = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    # Prompt lengths 1 (the head must start at position 0), 7 and 30; completions of different lengths.
    prompts = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (1, 7, 30)]
    completions = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (5, 12, 3)]
    packed = pack(prompts, completions, pad_id=0)
    with torch.no_grad():
        trimmed, full = completion_logits(model, packed), _full_head_logits(model, packed)
    assert trimmed.shape == full.shape == (3, 12, vocab)
    mask = packed.completion_mask.bool()
    torch.testing.assert_close(trimmed[mask], full[mask], rtol=1e-5, atol=1e-5)
    lp = token_logprobs(trimmed, packed.completion_ids)
    assert torch.isfinite(lp[mask]).all() and (lp[mask] < 0).all()


def test_gathered_scores_equal_the_full_path_exactly(tiny_paths):
    """completion_scores (LM head on completion positions only, one log_softmax) gives the logprobs and
    entropy of the full-logits path, bit for bit, through a PEFT LoRA model, and the same gradient."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from learner.sequences import completion_scores, entropy, output_layer

    torch.manual_seed(0)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(str(tiny_paths.model_dir)),
                           LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"]))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    g = torch.Generator().manual_seed(1)
    vocab = model.config.vocab_size
    prompts = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (1, 40, 17, 90)]
    completions = [torch.randint(3, vocab, (n,), generator=g).tolist() for n in (5, 33, 1, 60)]
    packed = pack(prompts, completions, pad_id=0)
    mask = packed.completion_mask.bool()

    logits = completion_logits(model, packed)
    ref_lp = token_logprobs(logits, packed.completion_ids)
    (ref_lp * packed.completion_mask).sum().backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    lp, ent = completion_scores(model, packed, output_layer(model), with_entropy=True)
    (lp * packed.completion_mask).sum().backward()

    assert torch.equal(lp[mask], ref_lp[mask]) and (lp[~mask] == 0).all()
    assert torch.equal(ent[mask], entropy(logits.detach())[mask])
    for n, p in model.named_parameters():
        if n in ref_grads:
            torch.testing.assert_close(p.grad, ref_grads[n], rtol=1e-6, atol=1e-7)


def test_chunked_head_equals_one_chunk_on_the_real_models_shapes():
    """SmolLM2-135M's widths (hidden 576, 9 heads over 3 KV heads, vocabulary 49,152; two of its 30
    layers, random weights): the LM head in chunks of 16 positions, each recomputed in the backward pass,
    gives the logprobs, entropy and LoRA gradients of one whole chunk."""
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    from learner.sequences import completion_scores, output_layer

    torch.manual_seed(0)
    conf = LlamaConfig(hidden_size=576, intermediate_size=1536, num_hidden_layers=2, num_attention_heads=9,
                       num_key_value_heads=3, vocab_size=49152, max_position_embeddings=256,
                       tie_word_embeddings=True)
    model = get_peft_model(LlamaForCausalLM(conf), LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj",
                                                                                                     "down_proj"]))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(3, conf.vocab_size, (n,), generator=g).tolist() for n in (4, 50, 21)]
    completions = [torch.randint(3, conf.vocab_size, (n,), generator=g).tolist() for n in (30, 9, 41)]
    packed = pack(prompts, completions, pad_id=0)
    head = output_layer(model)

    def run(chunk_bytes):
        model.zero_grad()
        lp, ent = completion_scores(model, packed, head, with_entropy=True, chunk_bytes=chunk_bytes)
        (lp * packed.completion_mask).sum().backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
        return lp.detach(), ent, grads

    whole, chunked = run(1 << 30), run(4 * conf.vocab_size * 16)  # 80 positions: 1 chunk, then 5
    torch.testing.assert_close(chunked[0], whole[0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(chunked[1], whole[1], rtol=1e-5, atol=1e-5)
    assert whole[2] and set(chunked[2]) == set(whole[2])
    for name, grad in whole[2].items():
        torch.testing.assert_close(chunked[2][name], grad, rtol=1e-4, atol=1e-6)
    mask = packed.completion_mask.bool()
    assert (whole[0][mask] < 0).all() and (whole[0][~mask] == 0).all()

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

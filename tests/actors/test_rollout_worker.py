"""RolloutWorker with a real vLLM engine: groups, logprobs, verified weight pushes.

Each worker runs as a Ray actor (the class the coordinator uses), one engine per process. The tests of
merged serving share one worker (`merged`, an engine costs about 9 s to start here); each starts from
the base model (`serve_base`), as a run rolled back to step 0 does."""

from __future__ import annotations

import pytest
import torch

from actors.errors import PushError
from actors.worker.rollout_worker import RolloutWorker
from configs.model import LoraConfig
from configs.rollout import RolloutConfig
from contracts import lora as lora_io
from contracts.types import LoraUpdate, Served
from tests.ray_sync import Sync

pytestmark = [pytest.mark.vllm, pytest.mark.ray]


def _worker(ray, *args, **kwargs):
    actor = ray.remote(RolloutWorker).options(num_cpus=1).remote(*args, **kwargs)
    return Sync(actor), actor


PROMPT = "<|im_start|>user\n查一下我的余额<|im_end|>\n<|im_start|>assistant\n"


def _random_lora(model_dir, lora_cfg: LoraConfig, seed: int, version: int) -> LoraUpdate:
    from peft import LoraConfig as PeftLoraConfig
    from peft import get_peft_model, get_peft_model_state_dict
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(model_dir),
        PeftLoraConfig(r=lora_cfg.r, lora_alpha=lora_cfg.alpha, target_modules=lora_cfg.target_modules),
    )
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
    sd = {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}
    return LoraUpdate(version, sd, lora_io.fingerprint(sd), lora_cfg.alpha / lora_cfg.r)


def _teacher_forced_logprobs(model_dir, update: LoraUpdate | None, prompt_ids, completion_ids):
    """transformers (+ the LoRA merged) logprobs of a completion: what the worker should serve."""
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from learner.sequences import completion_logits, pack, token_logprobs

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    if update is not None:
        base = load_file(str(model_dir / "model.safetensors"))
        model.load_state_dict(lora_io.merged_weights(base, update.weights, update.scale), strict=False)
    packed = pack([prompt_ids], [completion_ids], 0)
    with torch.no_grad():
        return token_logprobs(completion_logits(model, packed), packed.completion_ids)[0]


LCFG = LoraConfig(r=8, alpha=16)
CFG = RolloutConfig(n=3, max_tokens=12, temperature=1.0, max_model_len=256,
                    kv_cache_memory_bytes=64 * 1024**2)


@pytest.fixture(scope="module")
def merged(tiny_paths, ray_local):
    """One merged-serving worker for the tests below; each test starts it on the base model."""
    w, actor = _worker(ray_local, str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), CFG, LCFG, seed=0)
    yield w
    ray_local.kill(actor)


@pytest.fixture
def on_base(merged):
    merged.serve_base()
    return merged


@pytest.fixture
def adapter_worker(tiny_paths, ray_local):
    cfg = CFG.model_copy(update={"serve_mode": "adapter"})
    w, actor = _worker(ray_local, str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), cfg, LCFG, seed=0)
    yield w
    ray_local.kill(actor)


@pytest.mark.parametrize("mode", ["merged", "adapter"])
def test_generate_and_push(tiny_paths, mode, request):
    w = request.getfixturevalue("on_base" if mode == "merged" else "adapter_worker")
    out = w.generate([PROMPT, PROMPT + " "])
    assert len(out.groups) == 2 and all(len(g) == 3 for g in out.groups)
    c = out.groups[0][0]
    assert len(c.token_ids) == len(c.logprobs) and all(lp <= 0 for lp in c.logprobs)
    assert c.policy_version == 0 and out.fingerprint == "base"
    greedy_before = w.generate([PROMPT], n=1, temperature=0.0).groups[0][0]

    update = _random_lora(tiny_paths.model_dir, LCFG, seed=1, version=1)
    served = w.load_adapter(update)
    assert (served.version, served.fingerprint) == (1, update.fingerprint) and served.nbytes > 0
    assert w.fingerprint() == (1, update.fingerprint)
    after = w.generate([PROMPT], n=1, temperature=0.0)
    greedy_after = after.groups[0][0]
    assert after.policy_version == 1 and greedy_after.policy_version == 1
    assert greedy_after.token_ids != greedy_before.token_ids  # the push took
    # What vLLM serves is exactly the learner's model: its logprobs match a transformers recomputation.
    ref = _teacher_forced_logprobs(tiny_paths.model_dir, update, after.groups[0][0].prompt_ids,
                                   greedy_after.token_ids)
    assert torch.allclose(torch.tensor(greedy_after.logprobs), ref, atol=1e-3)
    # A run rolled back to its checkpoint of step 0 serves the base model again, value for value.
    assert w.serve_base() == Served(0, 0, "base", 0) and w.fingerprint() == (0, "base")
    again = w.generate([PROMPT], n=1, temperature=0.0).groups[0][0]
    assert (again.token_ids, again.logprobs) == (greedy_before.token_ids, greedy_before.logprobs)


def test_push_with_wrong_fingerprint_is_refused(tiny_paths, on_base):
    w = on_base
    update = _random_lora(tiny_paths.model_dir, LCFG, seed=2, version=1)
    corrupted = LoraUpdate(1, update.weights, "0000000000000000", update.scale)
    with pytest.raises(PushError, match="fingerprint"):
        w.load_adapter(corrupted)
    assert w.fingerprint() == (0, "base")  # still honest about what it serves
    w.load_adapter(update)
    with pytest.raises(PushError, match="not newer"):
        w.load_adapter(update)


def test_min_p_cuts_the_sampling_tail(tiny_paths, ray_local):
    """rollout.min_p reaches vLLM: keeping only tokens within 0.1% of the top one, sampling at T 1.0
    reproduces greedy decoding (the random tiny model samples almost anything without it)."""
    cfg = CFG.model_copy(update={"n": 6, "min_p": 0.999, "max_tokens": 8})
    w, actor = _worker(ray_local, str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), cfg, LCFG)
    greedy = w.generate([PROMPT], n=1, temperature=0.0).groups[0][0].token_ids
    sampled = [c.token_ids for c in w.generate([PROMPT]).groups[0]]
    ray_local.kill(actor)
    assert len(sampled) == 6 and all(s == greedy for s in sampled)


class NoopReloadWorker(RolloutWorker):
    """A fault: a merged reload that does nothing, while the worker reports the new fingerprint."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.policy._reload_merged = lambda update: None


def _with_probe(update: LoraUpdate, model_dir, tok) -> LoraUpdate:
    prompt = tok(PROMPT, add_special_tokens=False)["input_ids"]
    completion = tok('{"thought": "先查余额", "action": {"tool": "check_balance"}}',
                     add_special_tokens=False)["input_ids"]
    update.probe_ids, update.probe_start = prompt + completion, len(prompt)
    update.probe_logprobs = _teacher_forced_logprobs(model_dir, update, prompt, completion).tolist()
    return update


@pytest.fixture
def noop_worker(tiny_paths, ray_local):
    actor = ray_local.remote(NoopReloadWorker).options(num_cpus=1).remote(
        str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), CFG, LCFG)
    yield Sync(actor)
    ray_local.kill(actor)


def _probed_update(tiny_paths, tiny_tokenizer) -> LoraUpdate:
    return _with_probe(_random_lora(tiny_paths.model_dir, LCFG, seed=3, version=1), tiny_paths.model_dir,
                       tiny_tokenizer)


def test_the_probe_of_a_push_that_took_matches_the_learner(tiny_paths, tiny_tokenizer, on_base):
    served = on_base.load_adapter(_probed_update(tiny_paths, tiny_tokenizer))
    assert served.probe_gap < 1e-3  # vLLM scores the probe as the learner does


def test_the_probe_catches_a_push_that_did_not_take(tiny_paths, tiny_tokenizer, noop_worker):
    with pytest.raises(PushError, match="did not take"):
        noop_worker.load_adapter(_probed_update(tiny_paths, tiny_tokenizer))
    assert noop_worker.fingerprint() == (0, "base")  # it does not claim the new version

"""The logprob tap inside vLLM's model runner gives exactly what vLLM itself returns for `logprobs=0`."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.ray]


class _Engine:
    """One vLLM engine in its own process (the engine initialises torch.distributed). A small token
    budget per step splits the long prompt into chunks, whose thrown-away samples the tap must skip."""

    def __init__(self, model_dir: str) -> None:
        from cluster.runtime import apply_role_env

        apply_role_env()
        from vllm import LLM

        self.llm = LLM(model=model_dir, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
                       kv_cache_memory_bytes=64 * 1024**2, max_model_len=256, seed=0,
                       max_num_batched_tokens=64,
                       max_num_seqs=16)
        self.prompts = [list(range(5, 150)), [9], list(range(20, 40))]

    def available(self) -> bool:
        from actors.worker import vllm_tap

        return vllm_tap.available(self.llm)

    def sample(self, tap: bool) -> list:
        import torch
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        from actors.worker import vllm_tap

        self.llm.reset_prefix_cache()  # each call schedules (and so samples) as on a fresh engine
        torch.manual_seed(3)
        params = SamplingParams(n=3, temperature=1.0, max_tokens=20, logprobs=None if tap else 0,
                                flat_logprobs=True, detokenize=False)
        prompts = [TokensPrompt(prompt_token_ids=p) for p in self.prompts]
        if not tap:
            outs = self.llm.generate(prompts, params, use_tqdm=False)
            return [[(list(c.token_ids), list(c.logprobs.logprobs)) for c in o.outputs] for o in outs]
        with vllm_tap.recording() as rec:
            outs = self.llm.generate(prompts, params, use_tqdm=False)
        lps = rec.logprobs(outs)
        self.last = (rec, outs)
        return [[(list(c.token_ids), lp) for c, lp in zip(o.outputs, g)] for o, g in zip(outs, lps)]

    def tampered(self) -> str:
        """The last recording with one token changed: the check against vLLM's output must refuse it."""
        from actors.worker.vllm_tap import TapError

        rec, outs = self.last
        ids, discard, tokens, lps = rec.steps[-1]
        rec.steps[-1] = (ids, discard, [t + 1 for t in tokens], lps)
        try:
            rec.logprobs(outs)
        except TapError as e:
            return str(e)
        return ""


def test_tapped_logprobs_equal_vllms_own_with_chunked_prompts(tiny_paths, ray_local):
    actor = ray_local.remote(_Engine).options(num_cpus=1).remote(str(tiny_paths.model_dir))
    try:
        assert ray_local.get(actor.available.remote())
        own = ray_local.get(actor.sample.remote(False))
        tapped = ray_local.get(actor.sample.remote(True))
        refused = ray_local.get(actor.tampered.remote())
        own_again = ray_local.get(actor.sample.remote(False))  # outside a recording nothing changes
    finally:
        ray_local.kill(actor)
    assert tapped == own == own_again
    assert ([len(g) for g in tapped] == [3, 3, 3]
            and all(len(ids) == len(lp) > 0 for g in tapped for ids, lp in g))
    assert "not the ones vLLM returned" in refused

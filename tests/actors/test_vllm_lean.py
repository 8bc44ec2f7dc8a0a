"""The lean logprob path inside vLLM gives exactly what vLLM's own code gives (a guard for upgrades)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.ray]


class _Engine:
    """One vLLM engine in its own process (the engine initialises torch.distributed)."""

    def __init__(self, model_dir: str, tokenizer_dir: str) -> None:
        from cluster.runtime import apply_role_env

        apply_role_env()
        from vllm import LLM

        self.llm = LLM(model=model_dir, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
                       kv_cache_memory_bytes=64 * 1024**2, max_model_len=256, seed=0)

    def sample(self) -> list:
        import torch
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        torch.manual_seed(3)
        params = SamplingParams(n=3, temperature=1.0, max_tokens=20, logprobs=0, flat_logprobs=True,
                                detokenize=False)
        outs = self.llm.generate([TokensPrompt(prompt_token_ids=[5, 6, 7, 8]),
                                  TokensPrompt(prompt_token_ids=[9])],
                                 params, use_tqdm=False)
        return [(list(c.token_ids), vars(c.logprobs), c.cumulative_logprob) for o in outs for c in o.outputs]

    def install(self) -> None:
        from actors.worker import vllm_lean

        vllm_lean.install()


def test_lean_logprobs_equal_vllms_own(tiny_paths, ray_local):
    actor = ray_local.remote(_Engine).options(num_cpus=1).remote(str(tiny_paths.model_dir),
                                                                 str(tiny_paths.tokenizer_dir))
    try:
        before = ray_local.get(actor.sample.remote())
        ray_local.get(actor.install.remote())
        after = ray_local.get(actor.sample.remote())
    finally:
        ray_local.kill(actor)
    assert before == after
    assert all(len(ids) == len(lp["logprobs"]) for ids, lp, _ in after)

"""One shortcut inside vLLM's output processing, for the rollout worker's lean generation path.

The worker asks vLLM for the sampled token's logprob only (`logprobs=0`, `flat_logprobs=True`) and for
no text (`detokenize=False`, no tokenizer in the engine: it decodes each completion once itself). vLLM
still walks its generic per-position path for every generated token — three `tolist` conversions, a
rank chain, a decoded-token iterator — which cost about 10% of generation on the tiny model
(docs/platform.md#generation-overhead). For exactly that case the shortcut appends the same values
(token id, logprob, rank, no decoded text) to the same `FlatLogprobs` lists directly; every other case
goes through vLLM's own code. `tests/actors/test_vllm_lean.py` checks the result equals vLLM's own, so
a vLLM upgrade that changes the internals fails a test instead of the numbers.
"""

from __future__ import annotations

_installed = False


def install() -> None:
    """Patch `LogprobsProcessor._update_sample_logprobs` once per process (idempotent)."""
    global _installed
    if _installed:
        return
    from vllm.logprobs import FlatLogprobs
    from vllm.v1.engine.logprobs import LogprobsProcessor

    generic = LogprobsProcessor._update_sample_logprobs

    def update(self, logprobs_lists) -> None:
        flat = self.logprobs
        if self.tokenizer is not None or self.num_logprobs != 0 or type(flat) is not FlatLogprobs:
            return generic(self, logprobs_lists)
        token_ids_lst, logprobs_lst, ranks_lst, _ = logprobs_lists
        for ranks, logprobs, token_ids in zip(ranks_lst, logprobs_lst, token_ids_lst):
            value = float(logprobs[0])  # the sampler puts the sampled token first
            self.cumulative_logprob += value
            n = len(flat.logprobs)
            flat.start_indices.append(n)
            flat.token_ids.append(int(token_ids[0]))
            flat.logprobs.append(value)
            flat.ranks.append(int(ranks))  # the rank of the sampled token (a scalar per position)
            flat.decoded_tokens.append(None)
            flat.end_indices.append(n + 1)

    LogprobsProcessor._update_sample_logprobs = update
    _installed = True

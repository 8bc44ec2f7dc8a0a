"""The rollout worker's vLLM engine one step at a time, for the sample stream (`actors.worker.sample_stream`).

`LLM.generate` adds a batch of requests and steps the engine until all of them finish; the stream adds
requests between steps instead (a finished sample's slot is refilled at once) and takes each finished
request as it comes. The sampled tokens' logprobs come from the tap inside the engine where it runs
(`actors.worker.vllm_tap`: the CPU engine here), recorded step by step and checked against the tokens vLLM
returns; elsewhere vLLM is asked for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class EngineStepper:
    def __init__(self, llm: Any, params: Callable[[int], Any], lora: Callable[[], Any], tap: bool) -> None:
        self.llm, self.engine, self.params, self.lora, self.tap = llm, llm.llm_engine, params, lora, tap
        self._live: set[str] = set()
        self._taken: dict[str, tuple[list[int], list[float]]] = {}  # tap: per request, so far

    def add(self, key: str, ids: list[int], max_tokens: int) -> None:
        self.add_params(key, ids, self.params(max_tokens))

    def add_params(self, key: str, ids: list[int], params: Any) -> None:
        """Add a request with its own sampling parameters (one sample; ids in, ids out)."""
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        # With the tap only finished requests come back (the tap has every token as it is sampled);
        # without it, each step's new tokens, kept here until the request finishes or is paused.
        params.output_kind = RequestOutputKind.FINAL_ONLY if self.tap else RequestOutputKind.DELTA
        params.detokenize = False  # ids only: the engine has no tokenizer
        if not self.tap:  # the sampled tokens' logprobs, asked of vLLM
            params.logprobs, params.flat_logprobs = 0, True
        self.engine.add_request(key, TokensPrompt(prompt_token_ids=list(ids)), params,
                                lora_request=self.lora())
        self._live.add(key)

    def running(self) -> int:
        return len(self._live)

    def step(self) -> list[tuple[str, list[int], list[float], str]]:
        """One engine step; the requests it finished: (key, sampled ids, their logprobs, finish reason)."""
        from actors.worker import vllm_tap

        if not self.tap:
            done = []
            for o in self.engine.step():
                c = o.outputs[0]
                entry = self._taken.setdefault(o.request_id, ([], []))
                entry[0].extend(c.token_ids)
                entry[1].extend(c.logprobs.logprobs)
                if o.finished:
                    ids, lps = self._taken.pop(o.request_id)
                    done.append((o.request_id, ids, lps, str(c.finish_reason)))
                    self._live.discard(o.request_id)
            return done
        with vllm_tap.recording() as rec:
            outs = self.engine.step()
        for ids, discard, tokens, lps in rec.steps:
            for rid, thrown_away, token, lp in zip(ids, discard, tokens, lps):
                if not thrown_away:
                    entry = self._taken.setdefault(rid.rsplit("-", 1)[0], ([], []))
                    entry[0].append(token)
                    entry[1].append(lp)
        done = []
        for o in outs:
            tokens, lps = self._taken.pop(o.request_id, ([], []))
            if tokens != list(o.outputs[0].token_ids):
                raise vllm_tap.TapError(f"request {o.request_id}: the recorded tokens are not the ones "
                                        "vLLM returned")
            self._live.discard(o.request_id)
            done.append((o.request_id, tokens, lps, str(o.outputs[0].finish_reason)))
        return done

    def clear(self) -> dict[str, tuple[list[int], list[float]]]:
        """Abort every request in flight; returns what each had sampled so far (ids, logprobs)."""
        sampled = {key: self._taken.pop(key, ([], [])) for key in sorted(self._live)}
        if self._live:
            self.engine.abort_request(sorted(self._live))
            while self.engine.has_unfinished_requests():  # let the engine drop them
                self.engine.step()
        self._live.clear()
        self._taken.clear()
        self.llm.reset_prefix_cache()
        return sampled

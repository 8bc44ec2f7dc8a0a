"""Sampled-token logprobs taken inside vLLM's model runner, for the rollout worker's CPU engine.

Asking vLLM for logprobs (`logprobs=0`) sends every sampled token's logprob through per-request Python
objects at every engine step: the scheduler slices the step's lists per request, the output processor
appends them to each request's logprob lists. On the tiny model that cost 78 ms of a 896 ms generation
(16 prompts x 8 samples x 96 tokens, measured in one process), even with `actors/worker/vllm_lean.py`.

The tap computes what vLLM's sampler computes for `logprobs=0` — log_softmax of the raw logits in
float32, taken at the sampled token — and keeps, per engine step, the batch's request ids, which rows
were real samples (a chunk of a prompt samples a token that is thrown away), the tokens and their
logprobs, in plain lists. The requests themselves ask for no logprobs. `Recording.logprobs(outputs)` puts
the values back per completion and checks every token against vLLM's output, so a change in vLLM's
internals raises instead of attaching logprobs to the wrong tokens. `tests/actors/test_vllm_tap.py`
checks the values equal vLLM's own, bit for bit.

Only for an engine running in this process without async scheduling (`available`): the CPU engine here.
Elsewhere the worker asks vLLM for the logprobs (the lean path of `actors/worker/vllm_lean.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TapError(RuntimeError):
    """The recorded samples do not match what vLLM returned (its internals changed)."""


class Recording:
    """What the engine sampled during one `generate` call, step by step."""

    def __init__(self) -> None:
        self.steps: list[tuple[list[str], list[bool], list[int], list[float]]] = []
        self.pending: Any = None  # the sampler's logprobs of the step in progress

    def logprobs(self, outputs: list) -> list[list[list[float]]]:
        """Per request output, per completion (in `outputs[i].outputs` order): the sampled tokens'
        logprobs. Requests enter the batch in the order they were added (first come, first served):
        prompt by prompt, and a prompt's n samples by index."""
        by_request: dict[str, tuple[list[int], list[float]]] = {}
        for ids, discard, tokens, lps in self.steps:
            for rid, thrown_away, token, lp in zip(ids, discard, tokens, lps):
                entry = by_request.setdefault(rid, ([], []))
                if not thrown_away:
                    entry[0].append(token)
                    entry[1].append(lp)
        recorded = list(by_request.values())
        expected = sum(len(o.outputs) for o in outputs)
        if len(recorded) != expected:
            raise TapError(f"the engine sampled for {len(recorded)} "
                           f"requests, {expected} completions came back")
        result, start = [], 0
        for out in outputs:
            mine = recorded[start : start + len(out.outputs)]
            start += len(out.outputs)
            group = []
            for c in out.outputs:
                tokens, lps = mine[c.index]
                if list(c.token_ids) != tokens:
                    raise TapError(f"request {out.request_id}, sample {c.index}: the recorded tokens are "
                                   "not the ones vLLM returned")
                group.append(lps)
            result.append(group)
        return result


_recording: Recording | None = None
_installed = False
_counts = [0, 0]  # engine steps recorded in this process, and the sequences in their batches (summed)


def available(llm: Any) -> bool:
    """Whether the tap can see `llm`'s samples: its model runner in this process, synchronous scheduling."""
    executor = getattr(llm.llm_engine, "model_executor", None)
    if executor is None or type(executor).__name__ != "UniProcExecutor":
        return False
    return not any(llm.collective_rpc(_async_scheduling))


def counts() -> tuple[int, int]:
    """(engine steps, running sequences summed over them) recorded in this process so far: what
    `make bench` divides into the engine's occupancy, for every pipeline alike."""
    return _counts[0], _counts[1]


def _async_scheduling(worker: Any) -> bool:
    return bool(worker.model_runner.use_async_scheduling)


@contextmanager
def recording() -> Iterator[Recording]:
    """Record the samples of the engine calls made inside the block (one at a time per process)."""
    global _recording
    install()
    _recording = rec = Recording()
    try:
        yield rec
    finally:
        _recording = None


def install() -> None:
    """Wrap the sampler's forward and the runner's bookkeeping once per process (idempotent); both do
    nothing extra outside `recording()` or for requests that ask vLLM for logprobs themselves."""
    global _installed
    if _installed:
        return
    from vllm.v1.sample.sampler import Sampler
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    Sampler.forward = _tapped_forward(Sampler.forward)
    GPUModelRunner._bookkeeping_sync = _tapped_bookkeeping(GPUModelRunner._bookkeeping_sync)
    _installed = True


def _tapped_forward(forward):
    def tapped(self, logits, sampling_metadata, *args, **kwargs):
        rec = _recording
        if rec is None or sampling_metadata.max_num_logprobs is not None:
            return forward(self, logits, sampling_metadata, *args, **kwargs)
        if self.logprobs_mode != "raw_logprobs":
            raise TapError(f"the tap computes raw logprobs; the engine is set to {self.logprobs_mode}")
        raw = self.compute_logprobs(logits)  # before sampling, which may scale the logits in place
        out = forward(self, logits, sampling_metadata, *args, **kwargs)
        if out.sampled_token_ids.shape[-1] != 1:
            raise TapError("the tap does not handle speculative decoding")
        rec.pending = raw.gather(-1, out.sampled_token_ids.long()).squeeze(-1)
        return out

    return tapped


def _tapped_bookkeeping(bookkeeping):
    def tapped(self, scheduler_output, sampler_output, *args, **kwargs):
        rec = _recording
        if rec is not None and rec.pending is not None:
            n = sampler_output.sampled_token_ids.shape[0]
            _counts[0] += 1
            _counts[1] += n
            rec.steps.append((self.input_batch.req_ids[:n], self.discard_request_mask.np[:n].tolist(),
                              sampler_output.sampled_token_ids[:, 0].tolist(), rec.pending.tolist()))
            rec.pending = None
        return bookkeeping(self, scheduler_output, sampler_output, *args, **kwargs)

    return tapped

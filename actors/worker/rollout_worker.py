"""RolloutWorker: one vLLM engine that samples groups of completions and serves the newest policy.

Owns the engine and what it serves. It knows nothing of rewards or training: it receives rendered
prompts, returns token ids + logprobs tagged with the policy version, and takes LoRA updates in one of
two modes — `adapter` (vLLM LoRA serving, a new adapter id per version) or `merged` (merge the delta
into a pristine copy of the base weights and reload them in place; faster generation on CPU).

>>> w = RolloutWorker(base_model_dir, tokenizer_dir, rollout_cfg, lora_cfg)  # doctest: +SKIP
>>> w.generate(["<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n"], n=2).groups[0][0].text
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

import torch

from actors.errors import PushError
from actors.worker.agent_loop import run_episodes
from actors.worker.offsets import token_char_offsets
from configs.model import LoraConfig
from configs.rollout import RolloutConfig
from configs.task import TaskConfig
from contracts import lora as lora_io
from contracts.identity import node_identity
from contracts.types import LoraUpdate, Rollout, Sample, Served
from tasks.base import load_task

log = logging.getLogger(__name__)

NO_ADAPTER = "base"  # fingerprint of the bare base model


def engine_env() -> dict[str, str]:
    """Environment vLLM needs on this stack; set before `import vllm` (docs/platform.md#in-process-engine)."""
    return {
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",  # in-process engine: 2–3 s start-up instead of 15 s
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }


class RolloutWorker:
    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"RolloutWorker({getattr(self, 'worker_index', '?')})"

    def __init__(
        self,
        base_model_dir: str,
        tokenizer_dir: str,
        cfg: RolloutConfig,
        lora_cfg: LoraConfig,
        dtype: str = "float32",
        worker_index: int = 0,
        seed: int = 0,
    ) -> None:
        for k, v in engine_env().items():
            os.environ.setdefault(k, v)
        threads = torch.get_num_threads()
        from transformers import AutoTokenizer
        from vllm import LLM

        from actors.worker import cpu_binding, vllm_lean, vllm_tap

        vllm_lean.install()
        self.cfg, self.lora_cfg, self.worker_index = cfg, lora_cfg, worker_index
        self.base_model_dir = str(base_model_dir)
        # The engine gets token ids and returns token ids: this worker tokenizes each prompt and decodes
        # each completion once, instead of vLLM detokenizing token by token (the lean path).
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        kwargs = dict(
            model=self.base_model_dir,
            skip_tokenizer_init=True,
            dtype=dtype,
            seed=seed + worker_index,
            max_model_len=cfg.max_model_len,
            tensor_parallel_size=cfg.tensor_parallel_size,
        )
        if cfg.distributed_executor_backend:
            kwargs["distributed_executor_backend"] = cfg.distributed_executor_backend
        if torch.cuda.is_available():
            kwargs["gpu_memory_utilization"] = cfg.gpu_memory_utilization
        else:
            kwargs.update(enforce_eager=True, kv_cache_memory_bytes=cfg.kv_cache_memory_bytes)
            # Tensor parallelism on the CPU: each rank's threads on cores this worker reserved, not a
            # NUMA node each (actors/cpu_binding.py).
            cpu_binding.set_thread_binding(cfg.tensor_parallel_size, cfg.num_cpus, worker_index)
        if cfg.serve_mode == "adapter":
            kwargs.update(enable_lora=True, max_lora_rank=_lora_rank_slot(lora_cfg.r), max_loras=2)
        _quiet_vllm()
        self.llm = LLM(**kwargs)
        # The in-process engine drops torch's threads (docs/platform.md#threads-and-pinning).
        torch.set_num_threads(threads)
        # Logprobs of the sampled tokens from inside the engine where it runs here (actors/vllm_tap.py).
        self._tap = vllm_tap.available(self.llm)
        self.version = 0
        self.served_fingerprint = NO_ADAPTER
        self._lora_request = None
        self._loads = 0  # adapter loads so far: each gets its own vLLM LoRA id
        default_gap = 1e-3 if dtype == "float32" else 0.1  # bf16/fp16 logprobs differ far more
        self.max_logprob_gap = cfg.max_logprob_gap or default_gap
        self._adapter_dir = Path(tempfile.mkdtemp(prefix=f"ngrpo-adapters-w{worker_index}-"))
        self._pristine: dict[str, torch.Tensor] | None = None
        if cfg.serve_mode == "merged":
            self._pristine = _load_base_weights(self.base_model_dir)

    # ---- generation -------------------------------------------------------------------------------
    def generate(
        self,
        prompts: list[str],
        n: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        offsets: bool = False,
    ) -> Rollout:
        """n completions per prompt with token ids, raw-distribution logprobs and finish reasons;
        with `offsets`, each token's character span in the text too (for DART token weights)."""
        params = self._sampling(n or self.cfg.n, temperature, max_tokens, seed)
        outs, logprobs = self._run(self.tokenizer(prompts)["input_ids"], params)
        samples = [c for out in outs for c in out.outputs]
        texts = iter(self.tokenizer.batch_decode([c.token_ids for c in samples], skip_special_tokens=True))
        groups = []
        for out, lps in zip(outs, logprobs):
            prompt, group = list(out.prompt_token_ids), []
            for c, lp in zip(out.outputs, lps):
                ids = list(c.token_ids)
                spans = token_char_offsets(self.tokenizer, ids) if offsets else None
                group.append(Sample(prompt, ids, lp, next(texts), str(c.finish_reason), self.version, spans))
            groups.append(group)
        return self._rollout(groups)

    def play_episodes(self, rows: list[dict], task: TaskConfig, max_turns: int, n: int | None = None,
                      temperature: float | None = None, max_tokens: int | None = None,
                      seed: int | None = None, max_context: int | None = None,
                      offsets: bool = False) -> Rollout:
        """n multi-turn episodes per row against the task's environment (groups as `generate`'s), all in
        flight together (`actors.worker.agent_loop`): each turn is one batched engine call over the live
        episodes, at most `max_tokens` per turn; an episode is truncated when it fills `max_context`
        tokens. With `offsets`, each token's character span in the episode's text too (DART)."""
        params = self._sampling(1, temperature, max_tokens, seed)

        def engine(sequences: list[list[int]]) -> list[tuple[list[int], list[float]]]:
            outs, logprobs = self._run(sequences, params)
            return [(list(o.outputs[0].token_ids), lps[0]) for o, lps in zip(outs, logprobs)]

        env_task, n = load_task(task), n or self.cfg.n
        played = run_episodes([r for r in rows for _ in range(n)], lambda: env_task.environment(max_turns),
                              self.tokenizer, engine, self._context(max_context, max_tokens), self.version,
                              offsets)
        return self._rollout([played[i * n : (i + 1) * n] for i in range(len(rows))])

    # ---- the sample stream (train.pipeline stream) ------------------------------------------------
    def stream_start(self, *, n: int, max_in_flight: int, max_staleness: int, seed: int, step: int = 0,
                     offsets: bool = False, task: TaskConfig | None = None, max_turns: int | None = None,
                     max_context: int | None = None, drain_every: int = 0) -> None:
        """Start this worker's sample stream (`actors.worker.sample_stream`) at the policy of `step`, which
        it serves:
        completions of the prompts it is fed, or with `task` episodes of the rows it is fed."""
        from actors.worker.engine_stepper import EngineStepper
        from actors.worker.sample_stream import EpisodeSettings, SampleStream

        stepper = EngineStepper(self.llm, lambda m: self._sampling(1, None, m, None),
                                lambda: self._lora_request, self._tap)
        episodes = None
        if task is not None:
            env_task = load_task(task)
            episodes = EpisodeSettings(lambda: env_task.environment(max_turns),
                                       self._context(max_context, None))
        base = seed * 100_003 + self.worker_index
        self.stream = SampleStream(stepper, self.tokenizer, n=n, max_tokens=self.cfg.max_tokens,
                               max_in_flight=max_in_flight, max_staleness=max_staleness,
                               reseed=lambda version: self._reseed(base + 7919 * (version + 1)),
                               episodes=episodes, offsets=offsets, step=step, version=self.version,
                               drain_every=drain_every)

    def stream_feed(self, batch: int, groups: list) -> None:
        """A batch's groups for this worker (prompts are tokenized here, once)."""
        if self.stream.episodes is None and groups:
            ids = self.tokenizer([g.item for g in groups])["input_ids"]
            for g, prompt in zip(groups, ids, strict=True):
                g.item = prompt
        self.stream.feed(batch, groups)

    def stream_advance(self, step: int | None = None):
        """Go on sampling; with `step`, first take the policy of that step (just loaded, at the due point)."""
        if step is not None:
            self.stream.take(step, self.version)
        return self.stream.advance()

    def stream_stop(self) -> int:
        """End the stream (the engine is emptied); returns the samples dropped."""
        stream, self.stream = getattr(self, "stream", None), None
        return stream.stop() if stream is not None else 0

    def engine_counts(self) -> tuple[int, int] | None:
        """(engine steps, running sequences summed over them) so far, read from the tap (None without
        it): a benchmark's measure of how full the engine's batch was, whatever the pipeline."""
        from actors.worker import vllm_tap

        return vllm_tap.counts() if self._tap else None

    def _context(self, max_context: int | None, max_tokens: int | None) -> int:
        """An episode's token limit: `max_context`, leaving room in the engine for one more turn."""
        return min(max_context or self.cfg.max_model_len,
                   self.cfg.max_model_len - (max_tokens or self.cfg.max_tokens))

    def _rollout(self, groups: list[list[Sample]]) -> Rollout:
        return Rollout(groups, self.version, self.worker_index, self.served_fingerprint)

    def _run(self, prompt_ids: list[list[int]], params) -> tuple[list, list[list[list[float]]]]:
        """vLLM's outputs for token-id prompts, and per output and sample the sampled tokens' logprobs."""
        from vllm.inputs import TokensPrompt

        from actors.worker import vllm_tap

        prompts = [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids]
        if not self._tap:
            outs = self.llm.generate(prompts, params, lora_request=self._lora_request, use_tqdm=False)
            return outs, [[list(c.logprobs.logprobs) for c in o.outputs] for o in outs]
        with vllm_tap.recording() as rec:
            outs = self.llm.generate(prompts, params, lora_request=self._lora_request, use_tqdm=False)
        return outs, rec.logprobs(outs)

    def _sampling(self, n: int, temperature: float | None, max_tokens: int | None, seed: int | None):
        """vLLM sampling parameters for `n` samples per sequence: sampled ids and their logprobs in flat
        lists, no detokenizing (the lean path). A seed on CPU reseeds the engine here (`_reseed`)."""
        from vllm import SamplingParams

        temperature = self.cfg.temperature if temperature is None else temperature
        params = SamplingParams(
            n=n,
            temperature=temperature,
            top_p=self.cfg.top_p if temperature > 0 else 1.0,
            min_p=self.cfg.min_p if temperature > 0 else 0.0,
            max_tokens=max_tokens or self.cfg.max_tokens,
            # The sampled token's logprob only: taken inside the engine where it runs here
            # (actors/vllm_tap.py), else asked of vLLM in flat lists (actors/vllm_lean.py).
            logprobs=None if self._tap else 0,
            flat_logprobs=True,
            detokenize=False,
            # Per-request seeds break vLLM's CPU sampler ("CPU Generator does not use offset" when a
            # prefill is split); on CPU the seed reseeds the engine's generator instead (below).
            seed=seed if torch.cuda.is_available() else None,
        )
        self._reseed(seed)
        return params

    def _reseed(self, seed: int | None) -> None:
        """On CPU, what the next call samples depends only on (weights, prompts, seed), not on what the
        engine did before: a restarted or replacement engine samples what this one would have."""
        if seed is not None and not torch.cuda.is_available():
            self.llm.reset_prefix_cache()
            torch.manual_seed(seed)

    # ---- weight push ------------------------------------------------------------------------------
    def load_adapter(self, update: LoraUpdate, rollback: bool = False) -> Served:
        """Serve `update` from now on; returns what is served (version, fingerprint, size, probe gap).

        Raises PushError when the received weights do not hash to the learner's fingerprint, when the
        engine refuses them, or when what the engine then serves does not score the update's probe as
        the learner does (the reload did not take) even after one more reload — never keeps serving
        the old policy silently. `rollback` accepts an older version (the run went back to a checkpoint).
        """
        got = lora_io.fingerprint(update.weights)
        if got != update.fingerprint:
            raise PushError(
                f"worker {self.worker_index}: version {update.version} arrived with fingerprint {got}, "
                f"learner sent {update.fingerprint}"
            )
        if update.version <= self.version and self.served_fingerprint != NO_ADAPTER and not rollback:
            raise PushError(f"worker {self.worker_index}: version "
                            f"{update.version} is not newer than {self.version}")
        gap = None
        for attempt in (1, 2):
            self._apply(update)
            gap = self.probe_gap(update)
            if gap is None or gap <= self.max_logprob_gap:
                break
            log.warning("worker %d: probe gap %.3g after loading version %d (attempt %d)",
                        self.worker_index, gap, update.version, attempt)
        else:
            raise PushError(
                f"worker {self.worker_index}: after loading version {update.version} (twice) the engine "
                f"scores the probe {gap:.3g} away from the learner (allowed {self.max_logprob_gap:g}): "
                "the weights did not take"
            )
        self.version = update.version
        self.served_fingerprint = got
        return Served(self.worker_index, self.version, got, lora_io.nbytes(update.weights), gap)

    def serve_base(self) -> Served:
        """Serve the bare base model again: the run went back to its checkpoint of step 0, whose policy
        is the base model (a fresh engine serves it too, so a rolled-back engine must as well)."""
        if self.served_fingerprint != NO_ADAPTER:
            if self._pristine is not None:  # merged: the base weights back in place of the merged ones
                self.llm.collective_rpc("reload_weights", kwargs={
                    "weights_iterator": iter(list(self._pristine.items())), "is_checkpoint_format": True})
            self._lora_request = None
            self.llm.reset_prefix_cache()
        self.version, self.served_fingerprint = 0, NO_ADAPTER
        return Served(self.worker_index, 0, NO_ADAPTER, 0)

    def _apply(self, update: LoraUpdate) -> None:
        if self.cfg.serve_mode == "merged":
            self._reload_merged(update)
        else:
            self._serve_adapter(update)

    def probe_gap(self, update: LoraUpdate) -> float | None:
        """Largest |vLLM - learner| logprob over the update's probe tokens, as the engine serves now
        (None when the update carries no probe)."""
        if not update.probe_ids or update.probe_logprobs is None:
            return None
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        ids, start = update.probe_ids, update.probe_start
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        out = self.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, lora_request=self._lora_request,
                                use_tqdm=False)[0]
        served = [out.prompt_logprobs[i][ids[i]].logprob for i in range(start, len(ids))]
        return max(abs(a - b) for a, b in zip(served, update.probe_logprobs))

    def _reload_merged(self, update: LoraUpdate) -> None:
        assert self._pristine is not None
        merged = lora_io.merged_weights(self._pristine, update.weights, update.scale)
        self.llm.collective_rpc(
            "reload_weights",
            kwargs={"weights_iterator": iter(list(merged.items())), "is_checkpoint_format": True},
        )
        self.llm.reset_prefix_cache()  # cached KV blocks were computed with the old weights

    def _serve_adapter(self, update: LoraUpdate) -> None:
        from vllm.lora.request import LoRARequest

        path = lora_io.save_peft_adapter(
            update.weights,
            self._adapter_dir / f"v{update.version}",
            r=self.lora_cfg.r,
            alpha=self.lora_cfg.alpha,
            target_modules=self.lora_cfg.target_modules,
            base_model=self.base_model_dir,
        )
        # vLLM caches adapters by integer id: a NEW id per load (a rolled-back run loads a version
        # number again), or it serves the old weights.
        self._loads += 1
        self._lora_request = LoRARequest(f"policy-v{update.version}-{self._loads}", self._loads, str(path))
        # Keep the served folder and the one before it; older versions would fill the disk (7B: ~160 MB each).
        for old in self._adapter_dir.glob("v*"):
            if old.name not in (f"v{update.version}", f"v{self.version}"):
                shutil.rmtree(old, ignore_errors=True)

    def fingerprint(self) -> tuple[int, str]:
        """(policy version, fingerprint) of what this worker serves now."""
        return self.version, self.served_fingerprint

    def ready(self) -> int:
        return self.worker_index

    def identity(self) -> tuple[str | None, int]:
        """(Ray node id, process id) of this worker: where it runs, for events and fault tests."""
        return node_identity()


class _DropMessages(logging.Filter):
    """Drops the records whose message contains `text` (a filter outlives vLLM's logging set-up, which
    resets the levels of its loggers when an engine starts)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


def _drop(logger: str, text: str) -> None:
    log_ = logging.getLogger(logger)
    if not any(isinstance(f, _DropMessages) and f.text == text for f in log_.filters):
        log_.addFilter(_DropMessages(text))


def _quiet_vllm() -> None:
    """Silence vLLM messages that are not problems here, so a run's log stays readable: merged serving
    reloads only the LoRA-touched tensors, and at every push vLLM warns, per untouched layer and in a
    summary, that the others were not loaded, and keeps them, which is what we want (the push is
    verified by fingerprint and probe instead). The engine gets token ids and no tokenizer, so its
    chat-template warm-up fails by design and would print a stack trace that reads like a crash."""
    _drop("vllm.renderers.base", "Chat template warmup failed")
    reload = "vllm.model_executor.model_loader.reload"
    _drop(f"{reload}.inplace", "Following weights were not loaded from checkpoint")
    _drop(f"{reload}.layerwise", "Failed to load weights")


def _lora_rank_slot(r: int) -> int:
    """vLLM accepts only some max_lora_rank values; take the smallest that fits r."""
    for slot in (8, 16, 32, 64, 128, 256, 320, 512):
        if r <= slot:
            return slot
    return r


def _load_base_weights(model_dir: str) -> dict[str, torch.Tensor]:
    """The pristine base state dict (all safetensors shards) kept for merging."""
    from safetensors.torch import load_file

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"merged serving needs safetensors weights in {model_dir}")
    weights: dict[str, torch.Tensor] = {}
    for f in files:
        weights.update(load_file(str(f)))
    return weights

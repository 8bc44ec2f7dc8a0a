"""What a rollout worker's engine serves: the base model, or a LoRA update loaded and verified.

Two ways to serve an update: `adapter` (vLLM LoRA serving, a new adapter id per load) or `merged` (the
delta merged into a pristine copy of the base weights, reloaded in place; faster generation on the
CPU). Either way a load is checked twice, by the fingerprint of the weights that arrived and by the
probe: the engine must score the update's probe sequence as the learner does, or the load is retried
once and then refused. Never does the engine go on serving the old policy silently.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path

import torch

from actors.errors import PushError
from configs.model import LoraConfig
from configs.rollout import RolloutConfig
from contracts import lora as lora_io
from contracts.types import LoraUpdate, Served

log = logging.getLogger(__name__)

NO_ADAPTER = "base"  # fingerprint of the bare base model


class ServedPolicy:
    """The policy one engine serves: its version, its fingerprint and the LoRA request sampling uses."""

    def __init__(self, llm, cfg: RolloutConfig, lora_cfg: LoraConfig, base_model_dir: str, dtype: str,
                 worker_index: int) -> None:
        self.llm, self.cfg, self.lora_cfg = llm, cfg, lora_cfg
        self.base_model_dir, self.worker_index = base_model_dir, worker_index
        self.version = 0
        self.fingerprint = NO_ADAPTER
        self.lora_request = None  # what sampling passes to the engine (adapter mode)
        self._loads = 0  # adapter loads so far: each gets its own vLLM LoRA id
        default_gap = 1e-3 if dtype == "float32" else 0.1  # bf16/fp16 logprobs differ far more
        self.max_logprob_gap = cfg.max_logprob_gap or default_gap
        self._adapter_dir = Path(tempfile.mkdtemp(prefix=f"ngrpo-adapters-w{worker_index}-"))
        self._pristine: dict[str, torch.Tensor] | None = None
        self._merged: dict[str, torch.Tensor] = {}  # merge buffers, reused by every load (vLLM copies them)
        if cfg.serve_mode == "merged":
            self._pristine = _load_base_weights(self.base_model_dir)

    def load(self, update: LoraUpdate, rollback: bool = False) -> Served:
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
        if update.version <= self.version and self.fingerprint != NO_ADAPTER and not rollback:
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
        self.fingerprint = got
        return Served(self.worker_index, self.version, got, lora_io.nbytes(update.weights), gap)

    def serve_base(self) -> Served:
        """Serve the bare base model again: the run went back to its checkpoint of step 0, whose policy
        is the base model (a fresh engine serves it too, so a rolled-back engine must as well)."""
        if self.fingerprint != NO_ADAPTER:
            if self._pristine is not None:  # merged: the base weights back in place of the merged ones
                self.llm.collective_rpc("reload_weights", kwargs={
                    "weights_iterator": iter(list(self._pristine.items())), "is_checkpoint_format": True})
            self.lora_request = None
            self.llm.reset_prefix_cache()
        self.version, self.fingerprint = 0, NO_ADAPTER
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
        out = self.llm.generate([TokensPrompt(prompt_token_ids=ids)], params, lora_request=self.lora_request,
                                use_tqdm=False)[0]
        served = [out.prompt_logprobs[i][ids[i]].logprob for i in range(start, len(ids))]
        return max(abs(a - b) for a, b in zip(served, update.probe_logprobs))

    def _reload_merged(self, update: LoraUpdate) -> None:
        assert self._pristine is not None
        merged = lora_io.merged_weights(self._pristine, update.weights, update.scale, self._merged)
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
        self.lora_request = LoRARequest(f"policy-v{update.version}-{self._loads}", self._loads, str(path))
        # Keep the served folder and the one before it; older versions would fill the disk (7B: ~160 MB each).
        for old in self._adapter_dir.glob("v*"):
            if old.name not in (f"v{update.version}", f"v{self.version}"):
                shutil.rmtree(old, ignore_errors=True)


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

"""What leaves a learner rank and comes back: the LoRA export each push carries (with the probe that
lets a worker check it serves these weights), the rank's part of a checkpoint, and the PEFT adapter.

A mixin of `learner.learner.Learner`, which owns the engine, the optimizer and the update; this part
only reads the engine's weights and state (every method here is a collective under ZeRO-3 where it
says so).
"""

from __future__ import annotations

from contextlib import nullcontext

import torch

from contracts import lora as lora_io
from contracts.types import LoraUpdate
from learner.sequences import completion_scores, output_layer, pack


class LearnerWeights:
    # ---- export -----------------------------------------------------------------------------------
    def export_lora(self) -> LoraUpdate | None:
        """The current LoRA weights (on every rank under ZeRO-3, which must gather); rank 0 returns them."""
        lora = self._lora_parameters()
        ctx = nullcontext()
        if self.cfg.zero_stage == 3:
            import deepspeed

            ctx = deepspeed.zero.GatheredParameters([p for _, p in lora], modifier_rank=None)
        with ctx:
            sd = {k: p.detach().to(torch.float32).cpu().clone() for k, p in lora}
        probe = self._probe_logprobs()  # every rank: under ZeRO-3 the forward is a collective
        if self.rank != 0:
            return None
        lc = self.model_cfg.lora
        update = LoraUpdate(self.version, sd, lora_io.fingerprint(sd), lc.alpha / lc.r)
        if probe is not None:
            update.probe_ids = self._probe[0] + self._probe[1]
            update.probe_start, update.probe_logprobs = len(self._probe[0]), probe
        return update

    def _lora_parameters(self) -> list[tuple[str, torch.nn.Parameter]]:
        """(PEFT state-dict key, parameter) of every LoRA weight, found once: PEFT's own
        get_peft_model_state_dict walks the whole model's state dict on every call (~4 ms a push here)."""
        if getattr(self, "_lora", None) is None:
            from peft import get_peft_model_state_dict

            model = self.engine.module
            lora = [(n.replace(".default", ""), p) for n, p in model.named_parameters() if "lora_" in n]
            if sorted(k for k, _ in lora) != sorted(get_peft_model_state_dict(model)):
                raise RuntimeError("the LoRA parameters do not match PEFT's adapter state dict")
            self._lora = lora
        return self._lora

    def set_probe(self, prompt_ids: list[int], completion_ids: list[int]) -> None:
        """A fixed sequence whose completion logprobs every export carries, so that each worker can
        check that it serves these weights (`RolloutWorker.load_adapter`)."""
        self._probe = (list(prompt_ids), list(completion_ids))

    @torch.no_grad()
    def _probe_logprobs(self) -> list[float] | None:
        if getattr(self, "_probe", None) is None:
            return None
        prompt, completion = self._probe
        packed = pack([prompt], [completion], self.pad_id)
        # In eval mode: the workers serve the weights without LoRA dropout, and after a training step the
        # engine is in train mode, where a dropout above 0 would make every probe differ.
        training = self.engine.training
        self.engine.eval()
        try:
            return completion_scores(self.engine, packed, output_layer(self.engine))[0][0].tolist()
        finally:
            self.engine.train(training)

    # ---- checkpoints ------------------------------------------------------------------------------
    def save_state(self, path: str) -> None:
        """This rank's part of a checkpoint: the LoRA weights, the optimizer state (ZeRO partitions
        included), the lr schedule and the policy version. Every rank must call it (a collective)."""
        client = {"version": self.version, "scheduler": self.scheduler.state_dict()}
        self.engine.save_checkpoint(path, tag="state", client_state=client, save_latest=False,
                                    exclude_frozen_parameters=True)

    def load_state(self, path: str) -> int:
        """Restore what `save_state` wrote (every rank); returns the policy version."""
        _, client = self.engine.load_checkpoint(path, tag="state", load_module_strict=False,
                                                load_optimizer_states=True, load_lr_scheduler_states=False)
        if client is None:
            raise RuntimeError(f"no learner state under {path}")
        self.scheduler.load_state_dict(client["scheduler"])
        # The optimizer state carries the lr the saved run set; take it from this run's schedule instead,
        # so a run resumed with more steps (a longer decay) uses its own lr from the first step on.
        for group, base, lam in zip(self.scheduler.optimizer.param_groups, self.scheduler.base_lrs,
                                    self.scheduler.lr_lambdas):
            group["lr"] = base * lam(self.scheduler.last_epoch)
        self.scheduler._last_lr = [g["lr"] for g in self.scheduler.optimizer.param_groups]
        self.version = int(client["version"])
        return self.version

    def save_adapter(self, path: str) -> str | None:
        """Save the adapter in PEFT format (safetensors); rank 0 writes."""
        update = self.export_lora()
        if update is None:
            return None
        lc = self.model_cfg.lora
        lora_io.save_peft_adapter(
            update.weights, path, r=lc.r, alpha=lc.alpha, target_modules=lc.target_modules,
            base_model=self.base_model_dir,
        )
        return path


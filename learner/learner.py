"""Learner: one rank of a DeepSpeed ZeRO engine over a PEFT LoRA model.

Owns the trainable weights, the optimizer and the update. Given a `TrainBatch` (the coordinator has
already computed advantages), each rank takes its shard, recomputes old logprobs, evaluates
`policy_loss` and steps; the export, checkpoints and the adapter are `learner.weights`. The KL
reference is the same model with the adapter disabled — no second copy of the weights. Same code on
CPU (gloo) and GPU (NCCL).

>>> rank = Learner(model_dir, tok_dir, model_cfg, learner_cfg, algo_cfg)  # doctest: +SKIP
>>> rank.setup("127.0.0.1", free_port()); rank.train_step(batch); rank.export_lora().version
1
"""

from __future__ import annotations

import logging
import math
import os
import socket
from contextlib import nullcontext

import torch

from algo.losses import policy_loss
from algo.schedule import lr_factor
from configs.algorithm import AlgorithmConfig
from configs.learner import LearnerConfig
from configs.model import ModelConfig
from contracts.identity import node_identity, peak_rss
from contracts.types import TrainBatch
from learner.build_tools import clear_stale_build_locks, use_environment_ninja
from learner.micro_batches import (
    SUMMED,
    Norm,
    counted_tokens,
    logprob_gaps,
    loss_mask,
    pad_rows,
    plan_micro_batches,
    plan_shared_micro_batches,
)
from learner.sequences import completion_scores, output_layer, pack, shared_prompt_scores
from learner.weights import LearnerWeights

log = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def node_address() -> str:
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except Exception:  # noqa: BLE001 - in-process use without Ray
        pass
    return "127.0.0.1"


class Learner(LearnerWeights):
    def __init__(
        self,
        base_model_dir: str,
        tokenizer_dir: str,
        model_cfg: ModelConfig,
        cfg: LearnerConfig,
        algo: AlgorithmConfig,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        rl_steps: int | None = None,
    ) -> None:
        # A run of 0 RL steps (a warm-up and its eval only) makes no RL update: any schedule will do.
        if cfg.lr_schedule != "constant" and rl_steps is None:
            raise ValueError(f"lr_schedule {cfg.lr_schedule!r} needs the run's number of RL steps (rl_steps)")
        self.base_model_dir, self.tokenizer_dir = str(base_model_dir), str(tokenizer_dir)
        self.model_cfg, self.cfg, self.algo = model_cfg, cfg, algo
        self.rank, self.world_size, self.seed = rank, world_size, seed
        # The schedule counts optimizer steps: updates_per_batch of them per RL step.
        self.total_updates = (rl_steps or 0) * cfg.updates_per_batch
        self.engine = None
        self.scheduler = None
        self.version = 0

    def __repr__(self) -> str:  # Ray shows it in the dashboard and as the log prefix
        return f"Learner(rank {getattr(self, 'rank', '?')}/{getattr(self, 'world_size', '?')})"

    def rendezvous(self) -> tuple[str, int]:
        """Rank 0's address and a free port for torch.distributed."""
        return node_address(), free_port()

    def setup(self, master_addr: str, master_port: int) -> int:
        """Join the process group and build the engine. Returns the number of trainable parameters."""
        use_environment_ninja()  # before DeepSpeed builds or loads its ops (learner/build_tools.py)
        clear_stale_build_locks()
        import deepspeed
        from deepspeed.accelerator import get_accelerator

        # Without these DeepSpeed falls back to MPI discovery (docs/platform.md#deepspeed-on-the-cpu).
        os.environ.update(
            MASTER_ADDR=master_addr,
            MASTER_PORT=str(master_port),
            RANK=str(self.rank),
            WORLD_SIZE=str(self.world_size),
            LOCAL_RANK="0",  # each rank is its own Ray actor and sees only its own device
            LOCAL_WORLD_SIZE="1",
        )
        deepspeed.init_distributed(get_accelerator().communication_backend_name())
        model, optimizer = self.build_model()
        mb = self.cfg.micro_batch_size
        ds_config = {
            "train_micro_batch_size_per_gpu": mb,
            "gradient_accumulation_steps": 1,
            "train_batch_size": mb * self.world_size,
            # The caller owns the accumulation boundary: a rollout batch has a variable number of
            # micro-batches, and step() once per update is exactly what GRPO needs.
            "managed_gradient_accumulation": False,
            "gradient_clipping": self.cfg.grad_clip,
            "zero_optimization": {"stage": self.cfg.zero_stage, "overlap_comm": False},
            "zero_allow_untested_optimizer": True,
            "bf16": {"enabled": self.model_cfg.dtype == "bfloat16"},
            "fp16": {"enabled": self.model_cfg.dtype == "float16"},
            "steps_per_print": 10**9,
            "wall_clock_breakdown": False,
        }
        self.engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config=ds_config)
        return sum(p.numel() for p in model.parameters() if p.requires_grad)

    def _token_cap(self) -> int | None:
        """Padded tokens per micro-batch (`learner.micro_batch_tokens`, "auto" from the model's shape)."""
        from models.memory import ModelShape, micro_batch_tokens

        c = self.cfg
        shape = ModelShape.of_folder(self.base_model_dir)
        return micro_batch_tokens(c.micro_batch_tokens, c.activation_gb, shape, self.model_cfg.dtype,
                                  c.gradient_checkpointing)

    def build_model(self) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
        """The PEFT LoRA model, its AdamW optimizer and the lr schedule (`self.scheduler`), before any
        engine wraps them (`setup` hands them to DeepSpeed; bench.side runs them plain for comparison)."""
        from peft import LoraConfig as PeftLoraConfig
        from peft import get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.manual_seed(self.seed)
        tok = AutoTokenizer.from_pretrained(self.tokenizer_dir)
        self.pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        model = AutoModelForCausalLM.from_pretrained(self.base_model_dir,
                                                     dtype=getattr(torch, self.model_cfg.dtype))
        if self.cfg.gradient_checkpointing:
            model.gradient_checkpointing_enable()
            model.enable_input_require_grads()
        lc = self.model_cfg.lora
        model = get_peft_model(model, PeftLoraConfig(
            r=lc.r, lora_alpha=lc.alpha, lora_dropout=lc.dropout, target_modules=lc.target_modules,
            task_type="CAUSAL_LM", bias="none",
        ))
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=self.cfg.lr, weight_decay=self.cfg.weight_decay)
        c = self.cfg
        # Stepped by train_step after each engine.step(), not handed to DeepSpeed: one place decides
        # when the schedule advances, whatever the ZeRO stage. ZeRO keeps the optimizer's param groups,
        # so the factor set here is the lr its step uses.
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            lambda s: lr_factor(s, self.total_updates, c.lr_schedule, c.lr_warmup_steps, c.lr_final_ratio)
        )
        return model, optimizer

    # ---- logprobs ---------------------------------------------------------------------------------
    def _forward(self, batch: TrainBatch, rows: list[int], disable_adapter: bool = False,
                 with_entropy: bool = False):
        """(packed rows, logprobs (b, T), entropy (b, T) or None) of the completions of `rows`."""
        prompts, completions = [batch.prompt_ids[i] for i in rows], [batch.completion_ids[i] for i in rows]
        packed = pack(prompts, completions, self.pad_id)
        shared = self.shares_prompt(prompts, completions)
        ctx = self.engine.module.disable_adapter() if disable_adapter else nullcontext()
        with ctx:
            if shared:
                logp, ent = shared_prompt_scores(self.engine, prompts[0], completions,
                                                 output_layer(self.engine), with_entropy)
            else:
                logp, ent = completion_scores(self.engine, packed, output_layer(self.engine), with_entropy)
        return packed, logp, ent

    def shares_prompt(self, prompts: list[list[int]], completions: list[list[int]]) -> bool:
        """Whether a micro-batch runs its prompt once: one prompt behind several completions, as
        `share_prompt` plans them."""
        return (self.cfg.share_prompt and len(prompts) > 1 and all(p == prompts[0] for p in prompts)
                and any(completions))

    @torch.no_grad()
    def _logprobs(self, batch: TrainBatch, rows: list[int], disable_adapter: bool = False) -> torch.Tensor:
        return self._forward(batch, rows, disable_adapter)[1]

    def plan_micro_batches(self, batch: TrainBatch) -> list[list[int]]:
        """This rank's micro-batches (`learner.micro_batches.plan_micro_batches`)."""
        if not hasattr(self, "token_cap"):
            self.token_cap = self._token_cap()
        plan = plan_shared_micro_batches if self.cfg.share_prompt else plan_micro_batches
        return plan(batch, self.cfg.micro_batch_size, self.world_size, self.rank,
                    skip_zero_advantage=self.algo.loss.kl_coef == 0, max_tokens=self.token_cap)

    # ---- the update -------------------------------------------------------------------------------
    def train_step(self, batch: TrainBatch) -> dict[str, float]:
        """One GRPO/NGRPO update on this rank's shard of `batch` (every rank gets the whole batch).

        Two exact shortcuts keep the CPU run fast without changing the gradient:
        - a sequence whose advantage is 0 contributes no gradient when there is no KL term, so it is
          not run at all (it still counts in the token-mean normaliser);
        - with one update per batch (strictly on-policy) the old logprobs equal the current ones, so
          they are taken from the training forward (ratio exactly 1) instead of a second forward.
        """
        assert self.engine is not None, "call setup() first"
        lc = self.algo.loss
        # Dr.GRPO divides by a constant: the configured one, else the longest completion of the batch.
        norm = Norm(
            sequences=len(batch.completion_ids),
            tokens=max(1, counted_tokens(batch)),
            max_tokens=lc.max_tokens or max(1, max(len(c) for c in batch.completion_ids)),
        )
        micro = self.plan_micro_batches(batch)
        on_policy = self.cfg.updates_per_batch == 1
        self.engine.train()
        old, ref = self._fixed_logprobs(batch, micro, on_policy)

        sums = dict.fromkeys(SUMMED, 0.0)
        count, loss_total, gaps, skipped, is_max = 0, 0.0, [], False, 0.0
        for update in range(self.cfg.updates_per_batch):
            for rows in micro:
                if not rows:
                    # Nothing to learn here, but the collectives of ZeRO need this rank's forward and
                    # backward: run one real row with its loss multiplied by zero.
                    _, logp, _ = self._forward(batch, [0])
                    self.engine.backward(logp.sum() * 0.0, scale_wrt_gas=False)
                    continue
                loss, m, old_lp = self._micro_step(batch, rows, old.get(tuple(rows)), ref.get(tuple(rows)),
                                                   norm)
                if update == 0:  # learner vs vLLM on the samples of the current policy: the same weights
                    gaps += logprob_gaps(old_lp, batch, rows)
                loss_total += loss
                for k in SUMMED:
                    sums[k] += float(m.get(k, 0.0))
                is_max = max(is_max, m.get("is_ratio_max", 0.0))
                count += 1
            lr = self.scheduler.get_last_lr()[0]
            skipped = self._step_unless_non_finite(loss_total) or skipped
            if skipped:
                break
        grad_norm = self.engine.get_global_grad_norm()
        metrics = {k: v / max(1, count) for k, v in sums.items()}
        if lc.kl_coef == 0:
            metrics.pop("kl_ref")
        if lc.tis_cap:
            metrics["is_ratio_max"] = is_max
        else:
            metrics.pop("is_ratio_mean"), metrics.pop("tis_clip_frac")
        if gaps:  # no sample of the current policy in a fully stale batch: no gap to report
            gap = torch.cat(gaps)
            metrics.update(logprob_gap_mean=gap.mean().item(), logprob_gap_max=gap.max().item())
        if not skipped:
            self.version += 1
        metrics.update(
            update_skipped=float(skipped),
            loss=loss_total / self.cfg.updates_per_batch,
            lr=lr,
            grad_norm=float(grad_norm) if grad_norm is not None else 0.0,
            learned_sequences=float(sum(len(r) for r in micro)),
            **{"memory/learner": peak_rss() / 2**30},
        )
        return metrics

    def _step_unless_non_finite(self, loss_total: float) -> bool:
        """The optimizer step, unless the loss or the gradient is not finite on some rank; then no
        weight moves, the gradients are dropped and the lr schedule does not advance. Returns skipped.

        ZeRO 1-3 check the global gradient norm themselves and drop a non-finite step; ZeRO-0 hands
        the gradients to the plain optimizer, so they are checked here."""
        bad = not math.isfinite(loss_total)
        if self.cfg.zero_stage == 0:
            bad = bad or any(p.grad is not None and not torch.isfinite(p.grad).all()
                             for p in self.engine.module.parameters())
        if self.world_size > 1:  # every rank takes the same decision (the step is a collective)
            import torch.distributed as dist

            flag = torch.tensor([float(bad)])
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)
            bad = bool(flag.item())
        if bad and self.cfg.zero_stage == 0:
            self.engine.zero_grad()
            return True
        self.engine.step()  # ZeRO 1-3: a non-finite global gradient norm makes DeepSpeed skip it
        norm = self.engine.get_global_grad_norm()
        skipped = bad or (norm is not None and not math.isfinite(float(norm)))
        if not skipped:
            self.scheduler.step()
        return skipped

    def _fixed_logprobs(self, batch: TrainBatch, micro: list[list[int]],
                        on_policy: bool) -> tuple[dict, dict]:
        """Per micro-batch: the old logprobs (only when several passes make them differ from the current
        ones) and the reference's (adapter disabled; only with a KL term), both before any update."""
        old, ref = {}, {}
        for rows in micro:
            if rows and not on_policy:
                old[tuple(rows)] = self._logprobs(batch, rows)
            if rows and self.algo.loss.kl_coef > 0:
                ref[tuple(rows)] = self._logprobs(batch, rows, disable_adapter=True)
        return old, ref

    def _micro_step(self, batch: TrainBatch, rows: list[int], old: torch.Tensor | None,
                    ref: torch.Tensor | None,
                    norm: Norm) -> tuple[float, dict[str, float], torch.Tensor]:
        """Forward, loss and backward of one micro-batch. Returns (its share of the batch loss, its loss
        metrics with the entropy, the old logprobs it used)."""
        lc = self.algo.loss
        packed, logp, ent = self._forward(batch, rows, with_entropy=True)  # (b, T) each
        old_lp = old if old is not None else logp.detach()  # the proximal policy: this update's start
        mask = loss_mask(batch, rows, packed.completion_mask)
        width = mask.shape[1]
        weights = None
        if batch.token_weights is not None:
            weights = pad_rows([batch.token_weights[i] for i in rows], width)
        behaviour = pad_rows([batch.rollout_logprobs[i] for i in rows], width) if lc.tis_cap else None
        adv = torch.tensor([batch.advantages[i] for i in rows], dtype=torch.float32)
        loss, m = policy_loss(
            logp, old_lp, adv, mask,
            eps_low=lc.eps_low, eps_high=lc.eps_high, agg=lc.agg,
            ref_logprobs=ref, kl_coef=lc.kl_coef, token_weights=weights, max_tokens=norm.max_tokens,
            behaviour_logprobs=behaviour, tis_cap=lc.tis_cap,
        )
        # Each micro-batch's mean is reweighted to its share of the GLOBAL batch, and multiplied by
        # world_size because data-parallel reduction averages gradients over ranks.
        if lc.agg == "token_mean":
            share = mask.sum().item() / norm.tokens
        else:
            share = len(rows) / norm.sequences
        self.engine.backward(loss * share * self.world_size, scale_wrt_gas=False)
        m["entropy"] = ((ent * mask).sum() / mask.sum().clamp(min=1)).item()
        return loss.item() * share, m, old_lp

    def ready(self) -> int:
        return self.rank

    def identity(self) -> tuple[str | None, int]:
        """(Ray node id, process id) of this rank: where it runs, for events and fault tests."""
        return node_identity()

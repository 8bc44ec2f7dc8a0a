"""The work every benchmark side does, defined once: the same model, prompts, group size, lengths, LoRA
and learning rate for ngrpo-ray, bare vLLM and TRL.

Two profiles, chosen by the environment variable `NGRPO_BENCH_WORK` (`bench.run` leaves it unset,
`bench.real` sets `real` for every side it starts):
- tiny (the default): the tiny model without a warm-up (its answers run to the length limit, so every
  side generates the same number of tokens), 16 held-out prompts of the fund assistant, 8 samples each,
  96 tokens, temperature 1.0, LoRA r 16 / alpha 32, lr 2e-3;
- real: SmolLM2-135M-Instruct as `make real-model` installs it, 8 held-out prompts of the
  smollm2-cpu-reasoning preset (its system prompt and reasoning-gym questions), 8 samples each, up to
  64 tokens, temperature 1.0, the preset's LoRA r 16 / alpha 32 and lr 2e-4.
Both score samples with a reward that gives every sample its own score (bench/rewards.py), so that
every sample carries gradient on every side.
"""

from __future__ import annotations

import os
from typing import Any

import torch

REAL = os.environ.get("NGRPO_BENCH_WORK") == "real"
CONFIG = "smollm2-cpu-reasoning" if REAL else "tiny-cpu"
PROMPTS = 8 if REAL else 16
WORK = {"prompts": PROMPTS, "n": 8, "max_tokens": 64 if REAL else 96, "temperature": 1.0, "lora_r": 16,
        "lora_alpha": 32, "lr": 2e-4 if REAL else 2e-3}
DESCRIPTION = ("SmolLM2-135M-Instruct, 8 prompts of the smollm2-cpu-reasoning preset x 8 samples x up to 64 "
               "tokens, T 1.0, LoRA r16/a32, lr 2e-4, a reward with a different score per sample" if REAL else
               "tiny model (no warm-up), 16 prompts x 8 samples x 96 tokens, T 1.0, LoRA r16/a32, lr 2e-3, "
               "a reward with a different score per sample")


def setup_paths() -> tuple[Any, Any, Any]:
    """(task, model paths, tokenizer), offline."""
    from bench.common import load_setup

    s = load_setup(CONFIG)
    return s.task, s.paths, s.tokenizer


def bench_config(overrides: list[str]):
    """The profile's preset set to the benchmark's work (no warm-up, no evals, no periodic checkpoints)."""
    from configs.loader import load_config

    return load_config(CONFIG, [
        "train.warmup.enabled=false", "train.eval_before=false", "train.eval_after=false", "train.steps=1000",
        f"rollout.n={WORK['n']}", f"rollout.max_tokens={WORK['max_tokens']}",
        f"train.prompts_per_step={PROMPTS}",
        f"rollout.temperature={WORK['temperature']}", f"learner.lr={WORK['lr']}", "train.sampling=shuffle",
        f"model.lora.r={WORK['lora_r']}", f"model.lora.alpha={WORK['lora_alpha']}",
        "train.checkpoint_every=0",
        "reward.functions=[{name: 'bench.rewards:text_hash_reward'}]", "rollout.call_timeout_s=600",
        "rollout.min_p=0.0",  # bare vLLM and TRL sample from the whole distribution too
        "learner.call_timeout_s=600", "train.progress=false", *overrides,
    ])


def random_lora(model_dir: str, seed: int = 0):
    """A LoRA update with random (small, non-zero) B matrices, as a worker receives one."""
    from peft import LoraConfig as PeftLoraConfig
    from peft import get_peft_model, get_peft_model_state_dict
    from transformers import AutoModelForCausalLM

    from configs.model import LoraConfig
    from contracts import lora as lora_io
    from contracts.types import LoraUpdate

    lc = LoraConfig(r=WORK["lora_r"], alpha=WORK["lora_alpha"])
    torch.manual_seed(seed)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(model_dir),
                           PeftLoraConfig(r=lc.r, lora_alpha=lc.alpha, target_modules=lc.target_modules))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.02)
    sd = {k: v.detach().clone() for k, v in get_peft_model_state_dict(model).items()}
    return LoraUpdate(1, sd, lora_io.fingerprint(sd), lc.alpha / lc.r)


def learner_batch(pad_id: int, seed: int = 0, prompts: int = PROMPTS, completion: int | None = None):
    """`prompts` x n sequences shaped like a step's batch: 80-120-token prompts, advantages on both sides
    of 0, completions of `completion` tokens (default: the tiny profile's 96, all at the limit as the
    tiny model's are; the real profile's 24-64, as a real model stops at its end token)."""
    from contracts.types import TrainBatch

    g = torch.Generator().manual_seed(seed)
    n = WORK["n"]
    b = prompts * n
    prompt_ids = [torch.randint(3, 2000, (int(torch.randint(80, 121, (1,), generator=g)),),
                                generator=g).tolist() for _ in range(prompts)]
    if completion is not None:
        lengths = [completion] * b
    elif REAL:
        low = WORK["max_tokens"] * 3 // 8
        lengths = torch.randint(low, WORK["max_tokens"] + 1, (b,), generator=g).tolist()
    else:
        lengths = [WORK["max_tokens"]] * b
    comps = [torch.randint(3, 2000, (k,), generator=g).tolist() for k in lengths]
    return TrainBatch([prompt_ids[i // n] for i in range(b)], comps, [[-5.0] * len(c) for c in comps],
                      torch.randn(b, generator=g).tolist())


def _learner(paths, zero_stage: int, share_prompt: bool = False):
    from configs.algorithm import AlgorithmConfig
    from configs.learner import LearnerConfig
    from configs.model import LoraConfig, ModelConfig
    from learner.learner import Learner

    if REAL:  # the preset's learner (token-budget micro-batches), its LoRA and model
        cfg = bench_config([])
        lcfg = cfg.learner.model_copy(update={"zero_stage": zero_stage, "share_prompt": share_prompt})
        return Learner(str(paths.model_dir), str(paths.tokenizer_dir), cfg.model, lcfg, AlgorithmConfig())
    return Learner(str(paths.model_dir), str(paths.tokenizer_dir),
                   ModelConfig(lora=LoraConfig(r=WORK["lora_r"], alpha=WORK["lora_alpha"])),
                   LearnerConfig(zero_stage=zero_stage, lr=WORK["lr"], micro_batch_size=64,
                                 share_prompt=share_prompt),
                   AlgorithmConfig())


def deepspeed_learner(paths, share_prompt: bool = False):
    """The Learner as a run uses it: DeepSpeed ZeRO-2 over PEFT, in this process."""
    from learner.learner import free_port

    learner = _learner(paths, 2, share_prompt)
    learner.setup("127.0.0.1", free_port())
    return learner


class PlainEngine:
    """The few engine calls the Learner makes, done by plain PyTorch: backward, clip, AdamW step."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer, clip: float) -> None:
        self.module, self.optimizer, self.clip, self.norm = model, optimizer, clip, None

    def __call__(self, **kwargs):
        return self.module(**kwargs)

    def train(self) -> None:
        self.module.train()

    def backward(self, loss: torch.Tensor, scale_wrt_gas: bool = False) -> None:
        loss.backward()

    def step(self) -> None:
        params = [p for p in self.module.parameters() if p.requires_grad]
        self.norm = float(torch.nn.utils.clip_grad_norm_(params, self.clip))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def get_global_grad_norm(self) -> float | None:
        return self.norm


def plain_learner(paths):
    """The same Learner step code on plain PEFT + AdamW (no DeepSpeed), for the learner's row."""
    learner = _learner(paths, 0)
    model, optimizer = learner.build_model()
    learner.engine = PlainEngine(model, optimizer, learner.cfg.grad_clip)
    return learner

"""TRL's GRPOTrainer on the benchmark's work (bench/work.py), with HF generate (no vLLM).

TRL is an optional dependency (`pip install '.[bench]'`, pinned in pyproject.toml); only this module
imports it. The trainer is paused between optimizer steps by a callback that waits for the driver.
"""

from __future__ import annotations

import time
from typing import Any

from bench.work import PROMPTS, WORK


def trl_trainer(task: Any, paths: Any, tokenizer: Any, side: Any):
    """A GRPOTrainer whose step k starts when `side.go` is released and signals `side.done` after it,
    appending its seconds to `side.times`."""
    import tempfile

    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from bench.rewards import text_hash_reward
    from configs.model import LoraConfig as OurLora

    rows = task.rows()[0]
    data = Dataset.from_list([{"prompt": task.render_prompt(tokenizer, r)} for r in rows[: PROMPTS * 200]])

    def reward(prompts, completions, **columns):
        return text_hash_reward(prompts, completions)

    class Gate(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            side.go.acquire()
            self.t = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            side.times.append(time.perf_counter() - self.t)
            side.done.release()

    b = PROMPTS * WORK["n"]
    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="ngrpo-bench-trl-"), per_device_train_batch_size=b,
        num_generations=WORK["n"], max_completion_length=WORK["max_tokens"], temperature=WORK["temperature"],
        learning_rate=WORK["lr"], beta=0.0, loss_type="dapo", epsilon=0.2, epsilon_high=0.28,
        max_steps=10_000,
        logging_steps=10_000, save_strategy="no", report_to=[], use_cpu=True, bf16=False,
        gradient_accumulation_steps=1, num_iterations=1, seed=0, disable_tqdm=True,
    )
    lora = LoraConfig(r=WORK["lora_r"], lora_alpha=WORK["lora_alpha"],
                      target_modules=OurLora().target_modules)
    model = AutoModelForCausalLM.from_pretrained(str(paths.model_dir))
    return GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=data,
                       processing_class=tokenizer,
                       peft_config=lora, callbacks=[Gate()])

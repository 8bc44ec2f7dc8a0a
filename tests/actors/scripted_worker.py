"""A FAKE rollout worker for the coordinator's unit tests: it answers from a script, not from a model.

vLLM runs here, but a test that must drive the NGRPO switch on and off, or make one kind of request
always wrong, needs to choose the answers; a sampled policy cannot be told to. Everything else in those
tests is real (learner, reward actors, the coordinator). The worker keeps the RolloutWorker interface:
token ids of the scripted text from the real tokenizer, zero logprobs, versions and fingerprints of the
pushed LoRA weights; agent episodes are scripted turns played against the task's real environment.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from actors.worker.offsets import token_char_offsets
from contracts import lora as lora_io
from contracts.types import LoraUpdate, Rollout, Sample, Served

# script(row, n, stage) -> n completion texts; stage is the RL step (1-based), "eval" or "difficulty".
Script = Callable[[dict, int, object], list[str]]


# episode_script(row, i, stage) -> the assistant turns of the i-th episode of the call, for agent runs.
EpisodeScript = Callable[[dict, int, object], list[str]]


def scripted_worker(rows: list[dict], script: Script | None = None, train_seed: int = 0,
                    episode_script: EpisodeScript | None = None) -> type:
    """A RolloutWorker-shaped class answering with `script` for the rows whose user prompt it sees, and
    playing agent episodes with `episode_script` against the task's real environment."""
    by_prompt = {r["prompt"]: r for r in rows if "prompt" in r}

    class ScriptedWorker:
        def __init__(self, base_model_dir, tokenizer_dir, cfg, lora_cfg, dtype="float32", worker_index=0,
                     seed=0):
            from transformers import AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
            self.cfg, self.worker_index = cfg, worker_index
            self.version, self.fingerprint = 0, "base"
            self.calls: list[object] = []

        def ready(self) -> int:
            return self.worker_index

        def identity(self) -> tuple[None, int]:
            return None, os.getpid()

        def generate(self, prompts, n=None, temperature=None, max_tokens=None, seed=None,
                     offsets=False) -> Rollout:
            n = n or self.cfg.n
            # RL steps pass seed = train_seed * 100_003 + step; the eval seed 0 with n=1; the filter none.
            stage = "difficulty" if seed is None else "eval" if n == 1 else seed - train_seed * 100_003
            self.calls.append(stage)
            groups = []
            for p in prompts:
                user = p.split("<|im_start|>user\n", 1)[1].split("<|im_end|>", 1)[0]
                prompt = self.tokenizer(p, add_special_tokens=False)["input_ids"]
                texts = script(by_prompt[user], n, stage)
                groups.append([self._completion(prompt, t, offsets) for t in texts])
            return Rollout(groups, self.version, self.worker_index, self.fingerprint)

        def play_episodes(self, rows, task, max_turns, n=None, temperature=None, max_tokens=None, seed=None,
                          max_context=None, offsets=False) -> Rollout:
            from actors.worker.agent_loop import scripted_samples
            from tasks.base import load_task

            n = n or self.cfg.n
            stage = ("difficulty" if seed is None else "eval" if temperature == 0
                     else seed - train_seed * 100_003)
            self.calls.append(stage)
            env_task = load_task(task)
            played = [r for r in rows for _ in range(n)]
            scripts = [episode_script(row, i, stage) for i, row in enumerate(played)]
            samples = scripted_samples(played, lambda: env_task.environment(max_turns), self.tokenizer,
                                       scripts, max_context or self.cfg.max_model_len)
            for s in samples:
                s.policy_version = self.version
                if offsets:
                    s.offsets = token_char_offsets(self.tokenizer, s.token_ids)
            return Rollout([samples[i * n : (i + 1) * n] for i in range(len(rows))], self.version,
                           self.worker_index, self.fingerprint)

        def _completion(self, prompt: list[int], text: str, offsets: bool) -> Sample:
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            finish = "stop"
            if len(ids) > self.cfg.max_tokens:
                ids, finish = ids[: self.cfg.max_tokens], "length"
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            spans = token_char_offsets(self.tokenizer, ids) if offsets else None
            return Sample(prompt, ids, [0.0] * len(ids), text, finish, self.version, spans)

        def serve_base(self) -> Served:
            self.version, self.fingerprint = 0, "base"
            return Served(self.worker_index, 0, "base", 0)

        def load_adapter(self, update: LoraUpdate, rollback: bool = False) -> Served:
            got = lora_io.fingerprint(update.weights)
            assert got == update.fingerprint
            self.version, self.fingerprint = update.version, got
            return Served(self.worker_index, update.version, got,
                          sum(v.numel() * 4 for v in update.weights.values()))

    return ScriptedWorker

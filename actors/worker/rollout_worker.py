"""RolloutWorker: one vLLM engine that samples groups of completions and serves the newest policy.

The Ray actor of the worker's side: it samples (completions, agent episodes, or its sample stream) and
takes LoRA updates. It knows nothing of rewards or training: it receives rendered prompts, returns
token ids + logprobs tagged with the policy version. How its engine is built is
`actors.worker.engine`'s; what the engine serves and how an update is loaded and verified,
`actors.worker.served_policy`'s.

>>> w = RolloutWorker(base_model_dir, tokenizer_dir, rollout_cfg, lora_cfg)  # doctest: +SKIP
>>> w.generate(["<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n"], n=2).groups[0][0].text
"""

from __future__ import annotations

import torch

from actors.worker.agent_loop import run_episodes
from actors.worker.engine import build_engine
from actors.worker.offsets import token_char_offsets
from actors.worker.served_policy import ServedPolicy
from configs.model import LoraConfig
from configs.rollout import RolloutConfig
from configs.task import TaskConfig
from contracts.identity import node_identity, peak_rss
from contracts.types import LoraUpdate, Rollout, Sample, Served
from tasks.base import load_task


def _node_address() -> str:
    """This node's address under Ray (where the gateway listens), 127.0.0.1 without it."""
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except ImportError:
        pass
    return "127.0.0.1"


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
        request_seeds: bool = False,
    ) -> None:
        # The engine first: it sets the environment vLLM and transformers need (offline, quiet) before
        # either is imported.
        self.llm = build_engine(str(base_model_dir), cfg, lora_cfg, dtype, seed, worker_index, request_seeds)
        self.request_seeds = request_seeds or torch.cuda.is_available()  # (per-request seeds work on GPUs)
        from transformers import AutoTokenizer

        from actors.worker import vllm_tap

        self.cfg, self.lora_cfg, self.worker_index = cfg, lora_cfg, worker_index
        self.model_dir, self.tokenizer_dir = str(base_model_dir), str(tokenizer_dir)
        self.gateway = None  # the OpenAI endpoint, once started (`gateway_start`)
        # The engine gets token ids and returns token ids: this worker tokenizes each prompt and decodes
        # each completion once, instead of vLLM detokenizing token by token (the lean path).
        self.tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        # Logprobs of the sampled tokens from inside the engine where it runs (actors/worker/vllm_tap.py).
        self._tap = vllm_tap.available(self.llm)
        self.policy = ServedPolicy(self.llm, cfg, lora_cfg, str(base_model_dir), dtype, worker_index)

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
                     max_context: int | None = None, drain_every: int = 0, harness: str | None = None,
                     token: str = "", timeout_s: float = 120.0, concurrency: int = 16,
                     chat_template: str = "tools", tool_parser: str | None = "hermes") -> None:
        """Start this worker's sample stream (`actors.worker.sample_stream`) at the policy of `step`, which
        it serves:
        completions of the prompts it is fed, with `task` episodes of the rows it is fed, with `harness`
        that harness's sessions of them through the gateway (`train.pipeline.max_in_flight` bounds them;
        `concurrency` does not apply)."""
        from actors.worker.engine_stepper import EngineStepper
        from actors.worker.sample_stream import EpisodeSettings, SampleStream

        stepper = EngineStepper(self.llm, lambda m: self._sampling(1, None, m, None),
                                lambda: self.policy.lora_request, self._tap)
        episodes = None
        if task is not None:
            env_task = load_task(task)
            episodes = EpisodeSettings(lambda: env_task.environment(max_turns),
                                       self._context(max_context, None))
        sessions = None
        if harness is not None:
            from actors.worker.gateway.harness import LiveSessions, load_harness

            self._serve_run(token, chat_template, tool_parser, None, None, max_turns or 6)
            sessions = LiveSessions(self.gateway, stepper, load_harness(harness), timeout_s, self._decode,
                                    lambda: self.version, prefix=f"t{seed}-")
        base = seed * 100_003 + self.worker_index
        self.stream = SampleStream(stepper, self.tokenizer, n=n, max_tokens=self.cfg.max_tokens,
                               max_in_flight=max_in_flight, max_staleness=max_staleness,
                               reseed=lambda version: self._reseed(base + 7919 * (version + 1)),
                               episodes=episodes, offsets=offsets, step=step, version=self.version,
                               drain_every=drain_every, sessions=sessions)

    def stream_feed(self, batch: int, groups: list) -> None:
        """A batch's groups for this worker (prompts are tokenized here, once)."""
        if self.stream.episodes is None and self.stream.sessions is None and groups:
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
        dropped = stream.stop() if stream is not None else 0
        if stream is not None and stream.sessions is not None:  # (after: nothing is asked any more)
            self.gateway.sampling, self.gateway.max_calls = None, None
        return dropped

    # ---- the OpenAI gateway (actors.worker.gateway) -------------------------------------------------
    def gateway_start(self, token: str, host: str = "127.0.0.1", chat_template: str | None = None,
                      tool_parser: str | None = None, served_name: str = "policy") -> dict:
        """Serve this worker's engine as an OpenAI endpoint on `host` (a free port), for requests that
        carry `token`. `chat_template` (text; the tokenizer's own if None) and `tool_parser` (a vLLM
        parser name) render tools and read tool calls back. Returns its address and whether the
        template keeps earlier turns as a prefix (`actors.worker.gateway.probe`)."""
        from actors.worker.gateway.probe import probe
        from actors.worker.gateway.render import Renderer
        from actors.worker.gateway.server import Gateway

        if self.gateway is None:
            renderer = Renderer(self.model_dir, self.tokenizer_dir, self.cfg.max_model_len, served_name,
                                chat_template, tool_parser)
            self.gateway = Gateway(renderer, token, lambda: self.version, host)
            self.gateway.start()

            def render(messages: list[dict], tools: list[dict], generation: bool) -> str:
                return self.tokenizer.apply_chat_template(messages, tools=tools, chat_template=chat_template,
                                                          tokenize=False, add_generation_prompt=generation)

            def encode(text: str) -> list[int]:
                return self.tokenizer(text, add_special_tokens=False)["input_ids"]

            self.template = probe(render, encode)
        return {"address": self.gateway.address, "template_keeps_prefix": self.template.keeps_prefix,
                "template": self.template.detail}

    def play_sessions(self, rows: list[dict], harness: str, n: int | None = None, timeout_s: float = 60.0,
                      concurrency: int = 16, seed: int | None = None, call: str = "h",
                      lockstep: bool = False) -> list:
        """n sessions of each row played by `harness` (`package.module:function`) against this worker's
        gateway while this thread steps the engine (`actors.worker.gateway.harness`); the sessions'
        recorded calls, rewards and failures."""
        from actors.worker.engine_stepper import EngineStepper
        from actors.worker.gateway.harness import load_harness, play

        if self.gateway is None:
            raise RuntimeError("play_sessions before gateway_start")
        stepper = EngineStepper(self.llm, lambda m: self._sampling(1, None, m, None),
                                lambda: self.policy.lora_request, self._tap)
        self._reseed(seed)
        return play(self.gateway, stepper, load_harness(harness), rows, n or self.cfg.n, timeout_s,
                    concurrency, call, lockstep)

    def play_harness(self, rows: list[dict], harness: str, token: str, n: int | None = None,
                     temperature: float | None = None, max_tokens: int | None = None, seed: int | None = None,
                     offsets: bool = False, max_turns: int = 6, timeout_s: float = 120.0,
                     concurrency: int = 16, chat_template: str = "tools",
                     tool_parser: str | None = "hermes") -> Rollout:
        """n episodes per row played by the run's harness through this worker's gateway (started on first
        use, on this node's address, for the run's `token`), groups as `generate`'s: each session's
        recorded calls are its sample (`episode_sample`). Every call samples as the run does (the
        request's temperature and the like are replaced; its max_tokens at most the run's), with a seed of
        its session and call index; with `request_seeds` the engine steps in lock step with the harnesses
        (`actors.worker.gateway.bridge.Bridge`), and a deterministic harness plays the same sessions in
        every run, on this worker or on one that replaces it."""
        from actors.worker.gateway.harness import episode_sample

        if offsets:
            raise ValueError("token offsets (DART) are not made for harness sessions")
        self._serve_run(token, chat_template, tool_parser, temperature, max_tokens, max_turns)
        n = n or self.cfg.n
        try:
            # (a session's name, and so its calls' seeds, is its place in the worker's share of the step)
            played = self.play_sessions(rows, harness, n, timeout_s, concurrency, seed,
                                        f"s{seed}-w{self.worker_index}", lockstep=self.request_seeds)
        finally:
            self.gateway.sampling, self.gateway.max_calls = None, None
        samples = [episode_sample(p, self._decode, self.version) for p in played]
        return self._rollout([samples[i * n : (i + 1) * n] for i in range(len(rows))])

    def _serve_run(self, token: str, chat_template: str, tool_parser: str | None, temperature: float | None,
                   max_tokens: int | None, max_turns: int) -> None:
        """The gateway (started on first use, on this node's address, for the run's `token`) set to sample
        as the run does, each call with its own seed where the engine allows it."""
        from models.tool_template import template_text

        self.gateway_start(token, _node_address(), template_text(chat_template), tool_parser)
        cap, seeded = max_tokens or self.cfg.max_tokens, self.request_seeds

        def sampling(asked: int | None, room: int, request_seed: int):
            return self._sampling(1, temperature, min(asked or cap, cap, room), None,
                                  request_seed if seeded else None)

        self.gateway.sampling, self.gateway.max_calls = sampling, max_turns

    def _decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def gateway_stop(self) -> None:
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None

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
        return Rollout(groups, self.version, self.worker_index, self.policy.fingerprint, peak_rss())

    def _run(self, prompt_ids: list[list[int]], params) -> tuple[list, list[list[list[float]]]]:
        """vLLM's outputs for token-id prompts, and per output and sample the sampled tokens' logprobs."""
        from vllm.inputs import TokensPrompt

        from actors.worker import vllm_tap

        prompts = [TokensPrompt(prompt_token_ids=ids) for ids in prompt_ids]
        if not self._tap:
            outs = self.llm.generate(prompts, params, lora_request=self.policy.lora_request, use_tqdm=False)
            return outs, [[list(c.logprobs.logprobs) for c in o.outputs] for o in outs]
        with vllm_tap.recording() as rec:
            outs = self.llm.generate(prompts, params, lora_request=self.policy.lora_request, use_tqdm=False)
        return outs, rec.logprobs(outs)

    def _sampling(self, n: int, temperature: float | None, max_tokens: int | None, seed: int | None,
                  request_seed: int | None = None):
        """vLLM sampling parameters for `n` samples per sequence: sampled ids and their logprobs in flat
        lists, no detokenizing (the lean path). A seed on CPU reseeds the engine here (`_reseed`);
        `request_seed` is the request's own (an engine built with `request_seeds`)."""
        from vllm import SamplingParams

        temperature = self.cfg.temperature if temperature is None else temperature
        params = SamplingParams(
            n=n,
            temperature=temperature,
            top_p=self.cfg.top_p if temperature > 0 else 1.0,
            min_p=self.cfg.min_p if temperature > 0 else 0.0,
            max_tokens=max_tokens or self.cfg.max_tokens,
            # The sampled token's logprob only: taken inside the engine where it runs here
            # (actors/worker/vllm_tap.py), else asked of vLLM in flat lists (actors/worker/vllm_lean.py).
            logprobs=None if self._tap else 0,
            flat_logprobs=True,
            detokenize=False,
            # Per-request seeds break vLLM's CPU sampler ("CPU Generator does not use offset" when a
            # prefill is split); on CPU the seed reseeds the engine's generator instead (below).
            seed=request_seed if request_seed is not None else seed if torch.cuda.is_available() else None,
        )
        self._reseed(seed)
        return params

    def _reseed(self, seed: int | None) -> None:
        """On CPU, what the next call samples depends only on (weights, prompts, seed), not on what the
        engine did before: a restarted or replacement engine samples what this one would have."""
        if seed is not None and not torch.cuda.is_available():
            self.llm.reset_prefix_cache()
            torch.manual_seed(seed)

    # ---- weight push (actors.worker.served_policy) --------------------------------------------------
    def load_adapter(self, update: LoraUpdate, rollback: bool = False) -> Served:
        """Serve `update` from now on, verified by fingerprint and probe (`ServedPolicy.load`)."""
        return self.policy.load(update, rollback)

    def serve_base(self) -> Served:
        """Serve the bare base model again (the run went back to its checkpoint of step 0)."""
        return self.policy.serve_base()

    @property
    def version(self) -> int:
        """The version of the policy this worker serves."""
        return self.policy.version

    def fingerprint(self) -> tuple[int, str]:
        """(policy version, fingerprint) of what this worker serves now."""
        return self.policy.version, self.policy.fingerprint

    def ready(self) -> int:
        return self.worker_index

    def identity(self) -> tuple[str | None, int]:
        """(Ray node id, process id) of this worker: where it runs, for events and fault tests."""
        return node_identity()

"""OpenAI requests to prompt ids and sampling parameters, and sampled ids back to OpenAI responses, by
vLLM's own engine-free render path (`ServingRender`, `ServingDerender`): the protocol, the chat
template, the tool-call parsers are vLLM's; the engine in between is the rollout worker's.

What would sample off the policy, or what this engine cannot do, is refused with a 400 before anything
is sampled: a forced tool (`tool_choice` `required` or a named function) and `response_format` (both
constrain decoding with a grammar), `stop` strings and `bad_words` (the worker's engine has no
detokenizer, so vLLM would ignore them), beam search and `echo`. A tool marked `strict` (the OpenAI
Agents SDK marks its function tools so) is served without the grammar that would pin its arguments to
the schema: the policy samples its call freely, and arguments that do not fit are the agent's to handle,
as they are from any model.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from typing import Any

Sampled = tuple[list[int], list[float], str]  # one sample: its ids, their logprobs, the finish reason


class Refused(ValueError):
    """A request the gateway does not serve; the message says why (an HTTP 400)."""


@dataclass
class Rendered:
    """A request as the engine takes it: prompt ids and one `SamplingParams` per sample (n of them)."""

    request: Any  # vLLM's ChatCompletionRequest or CompletionRequest, as rendered (it is adjusted in place)
    request_id: str
    prompt_ids: list[int]
    params: list[Any]  # vllm.SamplingParams, n = 1 each


class Renderer:
    """vLLM's render and derender services for one model, with a chat template and tool parser."""

    def __init__(self, model_dir: str, tokenizer_dir: str, max_model_len: int, served_name: str,
                 chat_template: str | None = None, tool_parser: str | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from vllm.engine.arg_utils import EngineArgs
        from vllm.entrypoints.openai.models.protocol import BaseModelPath
        from vllm.entrypoints.openai.models.serving import OpenAIModelRegistry
        from vllm.entrypoints.scale_out.derender.serving import ServingDerender
        from vllm.entrypoints.scale_out.render.serving import ServingRender
        from vllm.renderers.online_derenderer import OnlineDerenderer
        from vllm.renderers.online_renderer import OnlineRenderer
        from vllm.renderers.registry import RENDERER_REGISTRY
        from vllm.tokenizers import get_tokenizer

        # A config only (no weights are loaded); sampling defaults are vLLM's, not the model folder's, so
        # a request that says nothing samples the policy as it is (temperature 1).
        config = EngineArgs(model=model_dir, tokenizer=tokenizer_dir, max_model_len=max_model_len,
                            skip_tokenizer_init=True, generation_config="vllm").create_engine_config()
        renderer = RENDERER_REGISTRY.load_renderer("hf", config, get_tokenizer(tokenizer_dir))
        options = dict(request_logger=None, chat_template=chat_template, chat_template_content_format="auto",
                       enable_auto_tools=tool_parser is not None, tool_parser=tool_parser)
        self.models = OpenAIModelRegistry(config.model_config, [BaseModelPath(name=served_name,
                                                                              model_path=model_dir)])
        self.render = ServingRender(self.models, OnlineRenderer(config.model_config, renderer, **options))
        self.derender = ServingDerender(self.models,
                                        OnlineDerenderer(config.model_config, renderer, **options))
        self.served_name, self.max_model_len = served_name, max_model_len
        # A call the policy wrote that is not valid JSON is answered as content (the parser's own fallback);
        # while a policy learns, that is common, and the parser would log a traceback for each.
        logging.getLogger("vllm.tool_parsers").setLevel(logging.CRITICAL)
        self.eos = set(config.model_config.hf_config.eos_token_id
                       if isinstance(config.model_config.hf_config.eos_token_id, list)
                       else [config.model_config.hf_config.eos_token_id])

    # ---- requests ---------------------------------------------------------------------------------
    async def chat(self, body: dict) -> Rendered:
        from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

        _refuse_off_policy(body)
        request = ChatCompletionRequest.model_validate(_unpinned(body))
        out = await self.render.render_chat_request(request)
        return self._rendered(request, out)

    async def completion(self, body: dict) -> Rendered:
        from vllm.entrypoints.openai.completion.protocol import CompletionRequest

        _refuse_off_policy(body)
        if body.get("echo"):
            raise Refused("echo is not served")
        request = CompletionRequest.model_validate(body)
        out = await self.render.render_completion_request(request)
        if not isinstance(out, list):
            return self._rendered(request, out)
        if len(out) != 1:
            raise Refused("one prompt a request")
        return self._rendered(request, out[0])

    def _rendered(self, request: Any, out: Any) -> Rendered:
        error = getattr(out, "error", None)
        if error is not None:
            raise Refused(error.message)
        params = out.sampling_params
        if params.structured_outputs is not None:
            raise Refused("constrained decoding (a grammar) would sample off the policy")
        if getattr(params, "use_beam_search", False):
            raise Refused("beam search is not served")
        return Rendered(request, out.request_id, list(out.token_ids), _fan_out(params))

    # ---- responses --------------------------------------------------------------------------------
    def _shown(self, sample: Sampled) -> list[int]:
        """A sample's ids without the end-of-turn id it stopped on (vLLM does not show it either)."""
        ids, _, finish = sample
        return ids[:-1] if finish == "stop" and ids and ids[-1] in self.eos else ids

    def _generated(self, rendered: Rendered, samples: list[Sampled]) -> Any:
        """The samples as vLLM's token-level response, each as `_shown`."""
        from vllm.entrypoints.scale_out.token_in_token_out.protocol import (
            GenerateLogProbs,
            GenerateLogProbsContent,
            GenerateTokensChoice,
            GenerateTokensResponse,
        )

        choices = []
        for i, sample in enumerate(samples):
            shown = self._shown(sample)
            content = [GenerateLogProbsContent(token_id=t, logprob=lp) for t, lp in zip(shown, sample[1])]
            choices.append(GenerateTokensChoice(index=i, token_ids=shown, finish_reason=sample[2],
                                                logprobs=GenerateLogProbs(content=content)))
        return GenerateTokensResponse(request_id=rendered.request_id, choices=choices,
                                      prompt_token_ids=rendered.prompt_ids)

    async def _answer(self, rendered: Rendered, samples: list[Sampled], derender: Any, blank: dict,
                      kind: str) -> dict:
        """The response body: vLLM's derendering of the samples that show something, and `blank` for
        those that stopped at once (vLLM's derenderer refuses a choice without ids)."""
        said = [s for s in samples if self._shown(s)]
        body = _json(await derender(said)) if said else {
            "id": rendered.request_id, "object": kind, "created": int(time.time()), "model": self.served_name}
        made = iter(body.get("choices", []))
        body["choices"] = [{**(next(made) if self._shown(s) else {**blank, "finish_reason": s[2]}),
                            "index": i} for i, s in enumerate(samples)]
        return _usage(body, rendered, samples)

    async def chat_response(self, rendered: Rendered, samples: list[Sampled]) -> dict:
        from vllm.entrypoints.scale_out.token_in_token_out.protocol import DerenderChatRequest

        def derender(said: list[Sampled]) -> Any:
            return self.derender.derender_chat_response(DerenderChatRequest(
                generate_response=self._generated(rendered, said), chat_request=rendered.request,
                prompt_token_ids=rendered.prompt_ids, prompt_tokens=len(rendered.prompt_ids),
                model=self.served_name))

        blank = {"message": {"role": "assistant", "content": "", "tool_calls": []}, "logprobs": None}
        return await self._answer(rendered, samples, derender, blank, "chat.completion")

    async def completion_response(self, rendered: Rendered, samples: list[Sampled]) -> dict:
        from vllm.entrypoints.scale_out.token_in_token_out.protocol import DerenderCompletionRequest

        def derender(said: list[Sampled]) -> Any:
            return self.derender.derender_completion_response(DerenderCompletionRequest(
                generate_responses=[self._generated(rendered, said)], completion_request=rendered.request,
                prompt_tokens=[len(rendered.prompt_ids)], prompt_token_ids=[rendered.prompt_ids],
                model=self.served_name))

        return await self._answer(rendered, samples, derender, {"text": "", "logprobs": None},
                                  "text_completion")

    async def model_list(self) -> dict:
        return _json(await self.models.show_available_models())


def _refuse_off_policy(body: dict) -> None:
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, dict):
        raise Refused("tool_choice 'required' or a named function forces a grammar on the sampler, which "
                      "would sample off the policy; use 'auto' or 'none'")
    if body.get("response_format") not in (None, {"type": "text"}):
        raise Refused("response_format constrains decoding (off the policy); ask for JSON in the prompt")
    if body.get("stop") or body.get("bad_words"):
        raise Refused("stop strings and bad_words are not served (the engine samples token ids only); "
                      "stop on the model's end-of-turn token")
    if body.get("n", 1) is not None and int(body.get("n", 1)) < 1:
        raise Refused("n must be at least 1")


def _unpinned(body: dict) -> dict:
    """The request with its tools' `strict` off (see the module docstring)."""
    tools = body.get("tools")
    if not tools:
        return body
    loose = [{**t, "function": {**t["function"], "strict": False}}
             if isinstance(t, dict) and isinstance(t.get("function"), dict) and t["function"].get("strict")
             else t for t in tools]
    return {**body, "tools": loose}


def _fan_out(params: Any) -> list[Any]:
    """n samples as n requests of one sample each (the engine stepper follows one sample a request)."""
    n = params.n
    out = []
    for i in range(n):
        p = params.clone()
        p.n = 1
        if p.seed is not None:
            p.seed = p.seed + i
        out.append(p)
    return out


def _json(out: Any) -> dict:
    error = getattr(out, "error", None)
    if error is not None:
        raise Refused(error.message)
    return out.model_dump(mode="json", exclude_none=True)


def _usage(body: dict, rendered: Rendered, samples: list[Sampled]) -> dict:
    """Usage counted from every sampled id (the end-of-turn token included, as the engine sampled it)."""
    done = sum(len(ids) for ids, _, _ in samples)
    body["usage"] = {"prompt_tokens": len(rendered.prompt_ids), "completion_tokens": done,
                     "total_tokens": len(rendered.prompt_ids) + done}
    return body

"""The gateway's HTTP side: an OpenAI-compatible endpoint on its own thread and event loop, in front of
the worker's engine, recording every call of every session.

Routes, under `/s/<session>/v1` (a harness's client is bound to its session by its base URL):
`POST chat/completions`, `POST completions`, `GET models`. Every request must carry the run's token
(`Authorization: Bearer <token>`); any other gets a 401. A request is rendered to prompt ids on the
loop, its samples are queued for the worker's engine (`Bridge`: the engine has one owner, the thread
that steps it), and the answer is rendered back; the call is recorded as the engine saw it (prompt ids,
sampled ids, the engine's logprobs, the policy version): nothing is tokenized again.
"""

from __future__ import annotations

import asyncio
import hmac
import itertools
import logging
import threading
import zlib
from collections.abc import Callable
from typing import Any

from actors.worker.gateway.bridge import Bridge
from actors.worker.gateway.render import Refused, Renderer
from actors.worker.sessions import Call

log = logging.getLogger(__name__)


class Gateway:
    """The endpoint of one rollout worker (start, address, stop) and the calls it recorded per session."""

    def __init__(self, renderer: Renderer, token: str, version: Callable[[], int], host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.renderer, self.token, self.version, self.host, self.port = renderer, token, version, host, port
        self.bridge = Bridge(version)
        self.calls: dict[str, list[Call]] = {}
        self.transcripts: dict[str, list[dict]] = {}  # per session: the last request's messages and answer
        # While a run plays its harnesses: its sampling (a function of the request's max_tokens, None when
        # not given, and the room left in the context), which replaces the request's (the samples are the
        # policy's, at the run's temperature), and the calls a session may make (`limited` holds the
        # sessions that asked for more, or whose conversation filled the context: truncated episodes).
        self.sampling: Callable[[int | None, int, int], Any] | None = None
        self.asked: dict[str, int] = {}  # per session: the calls it asked for so far (the call index)
        # The sessions being played, each with its epoch: a request for any other is refused, and a request
        # still running when its session was taken (its harness timed out) records nothing, even when
        # a later session has the same name.
        self.open: dict[str, int] = {}
        self._epochs = itertools.count(1)
        self.max_calls: int | None = None
        self.limited: set[str] = set()
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="gateway", daemon=True)
        self._runner = None

    # ---- life -------------------------------------------------------------------------------------
    def start(self) -> str:
        """Listen; returns the base address (`http://host:port`)."""
        self._thread.start()
        self.port = self.run(self._listen())
        return self.address

    @property
    def address(self) -> str:
        return f"http://{self.host}:{self.port}"

    def base_url(self, session: str) -> str:
        """What a client of `session` is pointed at."""
        return f"{self.address}/s/{session}/v1"

    def run(self, coro: Any) -> Any:
        """Run `coro` on the gateway's loop and wait for it (from another thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        if self._runner is not None:
            self.run(self._runner.cleanup())
            self._runner = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)

    async def _listen(self) -> int:
        from aiohttp import web

        app = web.Application(middlewares=[self._auth], client_max_size=64 * 1024**2)
        app.add_routes([web.post("/s/{session}/v1/chat/completions", self._chat),
                        web.post("/s/{session}/v1/completions", self._completion),
                        web.get("/s/{session}/v1/models", self._models)])
        # A request whose client went away (a harness cut by its timeout) is cancelled, not sampled.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        return site._server.sockets[0].getsockname()[1]

    # ---- requests ---------------------------------------------------------------------------------
    def _authorized(self, request: Any) -> bool:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), self.token.encode())

    @property
    def _auth(self):
        from aiohttp import web

        @web.middleware
        async def check(request, handler):
            if not self._authorized(request):
                return _error(web, 401, "a request needs the run's token (Authorization: Bearer ...)")
            return await handler(request)

        return check

    async def _chat(self, request: Any) -> Any:
        return await self._serve(request, self.renderer.chat, self.renderer.chat_response)

    async def _completion(self, request: Any) -> Any:
        return await self._serve(request, self.renderer.completion, self.renderer.completion_response)

    async def _models(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response(await self.renderer.model_list())

    async def _serve(self, request: Any, render: Callable, respond: Callable) -> Any:
        from aiohttp import web

        session = request.match_info["session"]
        epoch = self.open.get(session)
        if epoch is None:
            return _error(web, 404, f"no session {session!r} is being played")
        from vllm.exceptions import VLLMClientError

        try:
            body = await request.json()
            if body.get("stream"):
                raise Refused("streamed responses are not served; ask without stream")
            rendered = await render(body)
        except (ValueError, VLLMClientError) as e:  # Refused, pydantic's and vLLM's validation errors
            if _CONTEXT in str(e) and self.open.get(session) == epoch:
                self.limited.add(session)
            return _error(web, 400, str(e) if isinstance(e, Refused) else f"invalid request: {e}")
        if self.open.get(session) != epoch:  # taken while it rendered
            return _error(web, 410, "the session ended while this call was read")
        call = self.asked[session] = self.asked.get(session, -1) + 1
        if self.max_calls is not None and call >= self.max_calls:
            self.limited.add(session)
            return _error(web, 400, f"this session has made its {self.max_calls} calls (env.max_turns)")
        params = rendered.params
        if self.sampling is not None:
            if len(params) > 1:  # each choice a call of its own: the session would be cut at every one
                return _error(web, 400, "n > 1 is not served during a run: ask for one choice a call")
            if self.bridge.outstanding.get(session, 0):  # which call is first would depend on timing
                return _error(web, 400, "one call at a time per session during a run")
            room = self.renderer.max_model_len - len(rendered.prompt_ids)
            if room < 1:
                self.limited.add(session)
                return _error(web, 400, f"{_CONTEXT} is {self.renderer.max_model_len} tokens, which the "
                                        "conversation fills")
            params = [self.sampling(_asked_tokens(body), room, request_seed(session, call, i))
                      for i in range(len(params))]
        answered = await self.bridge.sample(rendered.prompt_ids, params, session, call)
        samples = [sampled for sampled, _ in answered]
        if self.open.get(session) != epoch:  # taken meanwhile: its harness gave up on it
            return _error(web, 410, "the session ended while this call ran")
        for (ids, logprobs, finish), version in answered:  # the version that sampled it, not the one asked
            self.calls.setdefault(session, []).append(
                Call(list(rendered.prompt_ids), list(ids), list(logprobs), [version] * len(ids), finish))
        answer = await respond(rendered, samples)
        if isinstance(body.get("messages"), list) and answer.get("choices"):
            self.transcripts[session] = [*body["messages"], answer["choices"][0].get("message", {})]
        return web.json_response(answer)

    def open_session(self, session: str) -> None:
        """`session` starts: its requests are served from now until it is taken."""
        self.open[session] = next(self._epochs)

    def take(self, session: str) -> tuple[list[Call], list[dict], bool]:
        """A finished session's recorded calls, its last conversation and whether it hit the call limit;
        the session is closed."""
        self.open.pop(session, None)
        limited = session in self.limited
        self.limited.discard(session)
        self.asked.pop(session, None)
        self.bridge.forget(session)
        return self.calls.pop(session, []), self.transcripts.pop(session, []), limited


def request_seed(session: str, call: int, sample: int) -> int:
    """The sampling seed of a session's call (and of its n-th sample): a function of the episode and the
    call alone, so a deterministic harness plays the same episode whatever else shares the engine."""
    return zlib.crc32(f"{session}/{call}/{sample}".encode())


_CONTEXT = "maximum context length"  # vLLM's words for a prompt too long for the engine


def _asked_tokens(body: dict) -> int | None:
    asked = body.get("max_completion_tokens") or body.get("max_tokens")
    return int(asked) if isinstance(asked, int | float) and asked > 0 else None


def _error(web: Any, status: int, message: str) -> Any:
    kind = {400: "invalid_request_error", 401: "authentication_error",
            404: "not_found_error"}.get(status, "error")
    return web.json_response({"error": {"message": message, "type": kind, "code": status}}, status=status)

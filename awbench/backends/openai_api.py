"""`--backend openai`: any OpenAI-compatible chat endpoint (vLLM, SGLang, a hosted API).

`settings.concurrency` requests are in flight across all endpoints; each attempt goes to the endpoint with the
fewest requests in flight, so a retry may land on another server. Results are yielded as they complete.

Failures are sorted per sample: a prompt that exceeds the context window is that sample's `overlength`; an error
that survives the retries (5xx, timeouts, connection loss) is that sample's `error`; anything else the server
refuses (400, 401, 403, 404) would fail every sample alike, so it stops the run with `FatalAPIError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from awbench.backends import GenerationRequest
from awbench.config import ModelSettings
from awbench.openai_client import (
    FATAL_STATUS,
    FatalAPIError,
    error_summary,
    is_context_overflow,
    make_client,
    split_reasoning,
    with_retries,
)
from awbench.records import Generation, Usage

def request_body(settings: ModelSettings, request: GenerationRequest) -> dict[str, Any]:
    """The JSON body; `extra_body` keys are merged in at the top level, as the SDK does."""
    body: dict[str, Any] = {
        "model": settings.model,
        "messages": request.messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
    }
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if request.seed is not None:
        body["seed"] = request.seed
    return body | settings.extra_body


def usage_of(usage: Any) -> Usage:
    if usage is None:
        return Usage()
    prompt_details = usage.prompt_tokens_details
    completion_details = usage.completion_tokens_details
    return Usage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=prompt_details.cached_tokens if prompt_details else None,
        reasoning_tokens=completion_details.reasoning_tokens if completion_details else None,
    )


def to_generation(key: str, completion: Any, latency_s: float) -> Generation:
    """Raw content and reasoning are kept as the server sent them: the pipeline parses thinking. With a
    reasoning parser and thinking never closed, vLLM sends `content: null` and everything as reasoning."""
    if not getattr(completion, "choices", None):  # e.g. a gateway's error object sent with status 200
        return Generation(key=key, error="the response has no choices", usage=usage_of(getattr(completion, "usage", None)), latency_s=latency_s)
    choice = completion.choices[0]
    content, reasoning = split_reasoning(choice.message)
    return Generation(
        key=key,
        text=content,
        reasoning=reasoning,
        finish_reason=choice.finish_reason,
        usage=usage_of(completion.usage),
        latency_s=latency_s,
    )


@dataclass
class _Endpoint:
    client: openai.AsyncOpenAI
    in_flight: int = 0
    sent: int = 0  # breaks ties, so that endpoints share the load even one request at a time


class OpenAIBackend:
    def __init__(self, settings: ModelSettings, clients: list[openai.AsyncOpenAI]) -> None:
        if not clients:
            raise ValueError("the openai backend needs at least one base URL")
        self.settings = settings
        self.endpoints = [_Endpoint(client) for client in clients]

    def _pick(self) -> _Endpoint:
        return min(self.endpoints, key=lambda e: (e.in_flight, e.sent))

    async def _attempt(self, body: dict[str, Any], started: list[float]) -> ChatCompletion:
        """`client.post` rather than `chat.completions.create`: the latter first walks the whole request through
        the SDK's type-driven transform, ~3 ms of CPU per request on a 2-core test host, more than the rest of
        the request's handling put together (docs/performance.md). Errors and parsing are the same."""
        endpoint = self._pick()
        endpoint.in_flight += 1
        endpoint.sent += 1
        started[0] = time.perf_counter()
        try:
            return await endpoint.client.post("/chat/completions", cast_to=ChatCompletion, body=body)
        finally:
            endpoint.in_flight -= 1

    async def _one(self, request: GenerationRequest) -> Generation:
        body = request_body(self.settings, request)
        started = [time.perf_counter()]  # reset by each attempt: latency is the answering attempt's own
        try:
            completion = await with_retries(lambda: self._attempt(body, started), self.settings.max_retries)
        except openai.APIStatusError as e:
            latency = time.perf_counter() - started[0]
            if is_context_overflow(e):
                return Generation(key=request.key, overlength=True, error=error_summary(e), latency_s=latency)
            if e.status_code in FATAL_STATUS:
                raise FatalAPIError(error_summary(e)) from e
            return Generation(key=request.key, error=error_summary(e), latency_s=latency)
        except (openai.APIError, ValueError) as e:  # timeouts, connection loss; a body that is not JSON (ValueError)
            return Generation(key=request.key, error=error_summary(e), latency_s=time.perf_counter() - started[0])
        return to_generation(request.key, completion, time.perf_counter() - started[0])

    async def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        """A pool of `concurrency` workers takes requests in order; results (or the exception that stops the
        run) come back through one queue. Leaving early (an exception, the consumer stopping) cancels the rest."""
        pending = iter(requests)
        done: asyncio.Queue[Generation | BaseException] = asyncio.Queue()

        async def worker() -> None:
            for request in pending:  # one shared iterator: each request is taken by exactly one worker
                try:
                    done.put_nowait(await self._one(request))
                except Exception as e:
                    done.put_nowait(e)
                    return

        workers = [asyncio.create_task(worker()) for _ in range(min(max(1, self.settings.concurrency), len(requests)))]
        try:
            for _ in range(len(requests)):
                item = await done.get()
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def aclose(self) -> None:
        await asyncio.gather(*(e.client.close() for e in self.endpoints))


def create(settings: ModelSettings) -> OpenAIBackend:
    """Without any base URL: the SDK's default endpoint (OPENAI_BASE_URL, else OpenAI's API), which needs a key."""
    if not settings.base_urls:
        return OpenAIBackend(settings, [make_client(None, settings.api_key_env or "OPENAI_API_KEY", settings.request_timeout)])
    clients = [make_client(url, settings.api_key_env, settings.request_timeout) for url in settings.base_urls]
    return OpenAIBackend(settings, clients)

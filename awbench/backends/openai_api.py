"""`--backend openai`: any OpenAI-compatible chat endpoint (vLLM, SGLang, a hosted API).

`settings.concurrency` requests are in flight across all endpoints (and within each endpoint's shared limit,
when a judge uses it too); each attempt goes to the endpoint with the fewest requests in flight, so a retry may
land on another server. Results are yielded as they complete.

Failures are sorted per sample: a prompt that exceeds the context window is that sample's `overlength`; a
content-filter refusal, or a 5xx that says the request itself is invalid (`is_invalid_request`: a chat template
refusing the system role, a schema the server does not take), is a permanent `error`; a transient error that survives the attempt budget (5xx, 429,
timeouts, connection loss, a malformed body) is a transient `error`, which the same command retries; anything
else the server refuses (400, 401, 403, 404) would fail every sample alike, so it stops the run with
`FatalAPIError`. An endpoint that refuses every connection for a while stops the run with `EndpointDown`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from awbench.backends import GenerationRequest, generation_place
from awbench.config import ModelSettings
from awbench.prefix_order import CANDIDATE_WAIT, Place
from awbench.records import Generation
from awbench.redact import url_secrets_masked
from awbench.transport.chat_client import ChatClient, Completion, StatusError
from awbench.transport.endpoints import (
    FATAL_STATUS,
    DeadEndpointWatch,
    Endpoints,
    FatalAPIError,
    SharedLimit,
    api_key,
    error_summary,
    is_content_refusal,
    is_context_overflow,
    is_retryable,
    normalize_url,
    prompt_cache_key,
    routes_by_cache_key,
)
from awbench.transport.retry_policy import Attempts
from awbench.workers import in_prefix_order


def request_body(settings: ModelSettings, request: GenerationRequest, cache_key: str | None = None) -> dict[str, Any]:
    """The JSON body, with the trajectory's `prompt_cache_key` when given; `extra_body` keys are merged in at the
    top level, as the SDK does."""
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
    if settings.stop:
        body["stop"] = settings.stop
    if cache_key is not None:
        body["prompt_cache_key"] = cache_key
    return body | settings.extra_body


def to_generation(request: GenerationRequest, completion: Completion, latency_s: float) -> Generation:
    """Raw content and reasoning are kept as the server sent them: the pipeline parses thinking. With a
    reasoning parser and thinking never closed, vLLM sends `content: null` and everything as reasoning."""
    refused = (
        "the endpoint's content filter refused to answer" if completion.finish_reason == "content_filter" else None
    )
    return Generation(
        key=request.key,
        generation=request.generation,
        text=completion.content,
        reasoning=completion.reasoning,
        finish_reason=completion.finish_reason,
        error=refused,
        usage=completion.usage,
        latency_s=latency_s,
    )


@dataclass
class _Endpoint:
    url: str
    client: ChatClient
    limit: SharedLimit
    watch: DeadEndpointWatch
    in_flight: int = 0
    sent: int = 0  # breaks ties, so that endpoints share the load even one request at a time


class OpenAIBackend:
    def __init__(
        self, settings: ModelSettings, endpoints: list[_Endpoint], shared: Endpoints, cache_keys: bool = False
    ) -> None:
        if not endpoints:
            raise ValueError("the openai backend needs at least one base URL")
        self.settings = settings
        self.endpoints = endpoints
        self.shared = shared  # the run's: checks each URL and key once, whichever party uses it
        self.cache_keys = cache_keys  # a prompt_cache_key on every request (`routes_by_cache_key`)

    async def check(self) -> None:
        """Each endpoint answers before the first request (`check_endpoint`), all checked at once; the first that
        fails stops the others."""
        checks = [self.shared.check(e.client, "candidate", self.settings.check_timeout) for e in self.endpoints]
        try:
            await asyncio.gather(*checks)
        finally:
            for check in checks:
                check.cancel()

    def _pick(self) -> _Endpoint:
        return min(self.endpoints, key=lambda e: (e.in_flight, e.sent))

    async def _attempt(self, endpoint: _Endpoint, body: dict[str, Any], started: list[float]) -> Completion:
        endpoint.in_flight += 1
        endpoint.sent += 1
        try:
            return await self._watched(endpoint, body, started)
        finally:
            endpoint.in_flight -= 1

    @staticmethod
    async def _watched(endpoint: _Endpoint, body: dict[str, Any], started: list[float]) -> Completion:
        try:
            completion = await endpoint.limit.chat(endpoint.client, body, started)
        except Exception as error:
            endpoint.watch.record(error)
            raise
        endpoint.watch.record(None)
        return completion

    async def _one(self, request: GenerationRequest, place: Place) -> Generation:
        """At most 1 + max_retries calls for this generation, whatever the reasons for retrying (the retry
        policy's `Attempts`); each call goes to the endpoint with the fewest requests in flight."""
        body = request_body(self.settings, request, prompt_cache_key(place.trajectory) if self.cache_keys else None)
        started = [time.perf_counter()]  # reset by each attempt: latency is the answering attempt's own
        endpoint = self.endpoints[0]  # each call's pick: a failure names the endpoint that failed last

        async def call(attempt: int) -> Completion:
            nonlocal endpoint
            endpoint = self._pick()
            return await self._attempt(endpoint, body, started)

        def retried(error: BaseException) -> None:
            endpoint.watch.retry(error)  # the endpoint of the call that failed

        attempts = Attempts(self.settings.max_retries + 1, on_retry=retried)
        try:
            completion = await attempts.run(call)
        except Exception as error:
            failed = self._failed(request, error, time.perf_counter() - started[0], endpoint.client.base_url)
            return failed.model_copy(update={"same_error_attempts": attempts.same_error, "attempts": attempts.number})
        generation = to_generation(request, completion, time.perf_counter() - started[0])
        return generation.model_copy(update={"attempts": attempts.number})

    @staticmethod
    def _failed(request: GenerationRequest, error: Exception, latency: float, url: str) -> Generation:
        common = {
            "key": request.key,
            "generation": request.generation,
            "error": error_summary(error),
            "latency_s": latency,
        }
        if is_retryable(error):
            return Generation(**common, transient=True)
        if isinstance(error, StatusError):
            if is_context_overflow(error):
                return Generation(**common, overlength=True)
            if is_content_refusal(error):
                return Generation(**common)  # this sample's content, not the setup: permanent, the run goes on
            if error.status in FATAL_STATUS:
                raise FatalAPIError(refusal("candidate", url, error)) from None
            return Generation(**common)
        raise error  # not an API error: a bug, or EndpointDown stopping the run

    def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        """`concurrency` requests in flight, in prefix order (a trajectory's turns one after another, a sample's
        generations after its first: `awbench.prefix_order`), results in completion order; the exception that
        stops the run (EndpointDown, FatalAPIError) cancels the rest."""
        return in_prefix_order(requests, self._one, generation_place, self.settings.concurrency, CANDIDATE_WAIT)

    async def aclose(self) -> None:
        await asyncio.gather(*(e.client.close() for e in self.endpoints))


def refusal(role: str, url: str, error: Exception) -> str:
    """Which party's endpoint refused (the candidate's or the judge's), by its URL without credentials: a 401
    then says which key to fix."""
    return f"the {role} endpoint {url_secrets_masked(url)} refused the request: {error_summary(error)}"


def endpoint_urls(settings: ModelSettings) -> list[str | None]:
    """Without any base URL: the SDK's default endpoint (OPENAI_BASE_URL, else OpenAI's API), which needs a key."""
    return list(settings.base_urls) or [os.environ.get("OPENAI_BASE_URL")]


def preflight(settings: ModelSettings) -> None:
    """Every endpoint's key is there (MissingAPIKey otherwise), before the data is read."""
    for url in endpoint_urls(settings):
        api_key(url, settings.api_key_env)


def clients(settings: ModelSettings) -> list[tuple[str | None, ChatClient]]:
    return [
        (url, ChatClient(url, api_key(url, settings.api_key_env), settings.request_timeout))
        for url in endpoint_urls(settings)
    ]


def create(settings: ModelSettings, endpoints: Endpoints | None = None) -> OpenAIBackend:
    """`endpoints`: the run's, so that a judge on the same URL shares each endpoint's limit and watch."""
    shared = endpoints or Endpoints()
    made = [
        _Endpoint(
            url=normalize_url(url),
            client=client,
            limit=shared.limit(url, settings.concurrency, settings.tpm, settings.rpm),
            watch=shared.watch(url),
        )
        for url, client in clients(settings)
    ]
    return OpenAIBackend(
        settings, made, shared, routes_by_cache_key(settings.prompt_cache_key, endpoint_urls(settings))
    )

"""The one way awbench talks to OpenAI-compatible endpoints, for candidate models and LLM judges alike.

- `make_client`: an `AsyncOpenAI` without retries of its own (ours count every attempt against one budget).
- `post_chat`: one chat completion through the SDK's lean path.
- Transient failures (429, 5xx, timeouts, connection errors, a malformed or non-JSON body) are retried with
  exponential backoff and jitter, honouring `Retry-After`; the same command retries them again later. Other
  4xx (a wrong key, a retired model, a malformed request) are permanent: the caller decides what they mean.
- `Endpoints`: per run, one concurrency limit per endpoint URL shared by every stage that uses it, the
  dead-endpoint watch, and the check made before the first request (`check_endpoint`).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage

from awbench.records import Usage
from awbench.redact import redact, register_secret
from awbench.safe_text import clean_text

T = TypeVar("T")

MAX_RETRY_AFTER_S = 120.0
DEAD_WINDOW = 32  # consecutive connection failures to one endpoint that stop the run
CHECK_TIMEOUT_S = 10.0
FATAL_STATUS = frozenset({400, 401, 403, 404})


class MissingAPIKey(Exception):
    """A key that is needed, or whose variable was named explicitly, is not set."""


class FatalAPIError(Exception):
    """An error that retrying cannot fix (400, 401, 403, 404): the run stops with the server's message."""


class EndpointDown(Exception):
    """An endpoint refused every connection of the last DEAD_WINDOW attempts, or failed its first check."""


def api_key(base_url: str | None, api_key_env: str | None, option: str = "--api-key-env") -> str:
    """The key from the named variable. A variable named explicitly must be set; a local server usually needs
    no key (the SDK still wants a string); the OpenAI API (no base URL) does."""
    variable = api_key_env or "OPENAI_API_KEY"
    key = os.environ.get(variable)
    if key:
        register_secret(key)
        return key
    if api_key_env:
        raise MissingAPIKey(f"no API key: the environment variable {api_key_env} ({option}) is not set")
    if base_url is None:
        raise MissingAPIKey("no API key: set the environment variable OPENAI_API_KEY")
    return "EMPTY"


def make_client(base_url: str | None, key: str, timeout: float) -> openai.AsyncOpenAI:
    """The key is read from the environment by `api_key` and never stored anywhere else."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=key, timeout=timeout, max_retries=0)


async def post_chat(client: openai.AsyncOpenAI, body: dict[str, Any]) -> ChatCompletion:
    """`client.post` rather than `chat.completions.create`: the latter first walks the whole request through
    the SDK's type-driven transform, ~3 ms of CPU per request (docs/performance.md). Errors and parsing are the
    same. A body that is not a completion (an HTML page sent with 200) raises MalformedResponse."""
    completion = await client.post("/chat/completions", cast_to=ChatCompletion, body=body)
    if not _usable(completion):
        raise MalformedResponse(f"the response is not a chat completion: {redact(str(completion))[:200]!r}")
    return completion


def _usable(completion: Any) -> bool:
    """The SDK builds the completion from the body without validating it: check the parts awbench reads (a
    first choice with a message whose content, reasoning and finish reason are text or null)."""
    choices = getattr(completion, "choices", None)
    if not isinstance(completion, ChatCompletion) or not isinstance(choices, list) or not choices:
        return False
    message = getattr(choices[0], "message", None)
    if not isinstance(message, ChatCompletionMessage):
        return False
    return all(isinstance(v, (str, type(None))) for v in (*split_reasoning(message), getattr(choices[0], "finish_reason", None)))


class MalformedResponse(ValueError):
    """A 200 response whose body is not a usable chat completion: transient, like a dropped connection."""


def is_connection_error(error: BaseException) -> bool:
    return isinstance(error, openai.APIConnectionError) and not isinstance(error, openai.APITimeoutError)


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, (openai.APIConnectionError, openai.APIResponseValidationError, json.JSONDecodeError, MalformedResponse)):
        return True  # APITimeoutError is an APIConnectionError
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return False


def retry_after_seconds(error: BaseException) -> float | None:
    if not isinstance(error, openai.APIStatusError):
        return None
    value = error.response.headers.get("retry-after")
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def backoff_seconds(attempt: int, base: float = 0.5, cap: float = 60.0) -> float:
    """Full jitter: a uniform draw up to an exponentially growing ceiling."""
    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))


def wait_before_retry(error: BaseException, attempt: int) -> float:
    server_says = retry_after_seconds(error)
    return server_says if server_says is not None else backoff_seconds(attempt)


async def with_retries(call: Callable[[], Awaitable[T]], max_retries: int) -> T:
    """Run `call` until it succeeds, fails with a non-retryable error, or `max_retries` retries are spent:
    at most 1 + max_retries calls."""
    attempt = 1
    while True:
        try:
            return await call()
        except Exception as error:
            if not is_retryable(error) or attempt > max_retries:
                raise
            await asyncio.sleep(wait_before_retry(error, attempt))
            attempt += 1


# vLLM 0.32: "This model's maximum context length is N tokens. However, your prompt contains M input tokens..."
# (or "...M characters...") and "Input length (M) exceeds model's maximum context length (N)."; older vLLM and
# OpenAI: "...maximum context length is N tokens. However, you requested M tokens..."; SGLang: "...longer than
# the model's context length..."; Anthropic-style gateways: "prompt is too long".
_CONTEXT_OVERFLOW = re.compile(r"maximum context length|model's context length|context window|prompt is too long", re.I)


def is_context_overflow(error: BaseException) -> bool:
    if not isinstance(error, openai.BadRequestError):
        return False
    return error.code == "context_length_exceeded" or bool(_CONTEXT_OVERFLOW.search(error.message))


_CONTENT_REFUSAL = re.compile(r"content[ _-]?(?:policy|filter|management)|invalid_prompt", re.I)


def is_content_refusal(error: BaseException) -> bool:
    """A 400 refusing this request's content (a content filter or policy): it fails that request only."""
    return isinstance(error, openai.APIStatusError) and error.status_code == 400 and bool(
        _CONTENT_REFUSAL.search(f"{error.code} {error.message}"))


def error_summary(error: BaseException) -> str:
    """A one-line description for records and messages: status and the server's own message, keys masked,
    lone surrogates (a server's `\\ud800` escape) replaced so that the text can always be written."""
    if isinstance(error, openai.APIStatusError):
        text = f"HTTP {error.status_code}: {error.message}"
    else:
        text = f"{type(error).__name__}: {error}"
    return redact(clean_text(text)[0] or "")


def usage_of(reported: Any) -> Usage:
    """The usage a server reported, cached prompt tokens included (priced at the cached rate)."""
    if reported is None:
        return Usage()
    prompt_details = getattr(reported, "prompt_tokens_details", None)
    completion_details = getattr(reported, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=_count(getattr(reported, "prompt_tokens", None)),
        completion_tokens=_count(getattr(reported, "completion_tokens", None)),
        cached_tokens=_count(getattr(prompt_details, "cached_tokens", None)),
        reasoning_tokens=_count(getattr(completion_details, "reasoning_tokens", None)),
    )


def _count(value: Any) -> int | None:
    """A token count as reported, or None for anything else (a malformed usage never fails the answer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def split_reasoning(message: Any) -> tuple[str | None, str | None]:
    """(content, reasoning) of a chat message. Servers running a reasoning parser return thinking in an
    extra field: vLLM 0.32 names it `reasoning`, older vLLM and some providers `reasoning_content`."""
    extra = getattr(message, "model_extra", None) or {}
    reasoning = extra.get("reasoning") or extra.get("reasoning_content")
    return message.content, reasoning


# --- Endpoints shared by the stages of one run ----------------------------------------------------------------


class SharedLimit:
    """A semaphore whose size can grow: the stages that share an endpoint each bring their own limit, and the
    endpoint's is the largest of them (each stage stays within its own)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.in_use = 0
        self._changed = asyncio.Condition()

    def grow(self, size: int) -> None:
        """Called while the stages are set up, before any request is sent."""
        self.size = max(self.size, size)

    async def __aenter__(self) -> None:
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_use < self.size)
            self.in_use += 1

    async def __aexit__(self, *exc: object) -> None:
        async with self._changed:
            self.in_use -= 1
            self._changed.notify()


class DeadEndpointWatch:
    """Stops the run when the last DEAD_WINDOW attempts to an endpoint all failed to connect."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.recent: deque[bool] = deque(maxlen=DEAD_WINDOW)

    def record(self, error: BaseException | None) -> None:
        self.recent.append(error is not None and is_connection_error(error))
        if error is not None and len(self.recent) == DEAD_WINDOW and all(self.recent):
            raise EndpointDown(
                f"{self.url} is not answering: the last {DEAD_WINDOW} requests failed to connect "
                f"(last error: {error_summary(error)}). The run is saved; run the same command again when it is back"
            )


class Endpoints:
    """Per run: one shared limit and one watch per endpoint URL."""

    def __init__(self) -> None:
        self._limits: dict[str, SharedLimit] = {}
        self._watches: dict[str, DeadEndpointWatch] = {}

    def limit(self, url: str | None, size: int) -> SharedLimit:
        key = normalize_url(url)
        if key not in self._limits:
            self._limits[key] = SharedLimit(size)
        else:
            self._limits[key].grow(size)
        return self._limits[key]

    def watch(self, url: str | None) -> DeadEndpointWatch:
        key = normalize_url(url)
        return self._watches.setdefault(key, DeadEndpointWatch(key))


def normalize_url(url: str | None) -> str:
    return (url or "https://api.openai.com/v1").rstrip("/").lower()


async def check_endpoint(client: openai.AsyncOpenAI, url: str | None, role: str) -> None:
    """Before anything is sent: the endpoint answers a models listing, and accepts the key. A server without
    the listing (404) answered, which is all this asks."""
    where = f"{role} endpoint {url or 'https://api.openai.com/v1'}"
    try:
        await asyncio.wait_for(client.models.list(), CHECK_TIMEOUT_S)
    except openai.NotFoundError:
        return
    except openai.AuthenticationError as error:
        raise FatalAPIError(f"{where} refused the key: {error_summary(error)}") from None
    except openai.PermissionDeniedError as error:
        raise FatalAPIError(f"{where} refused access: {error_summary(error)}") from None
    except (openai.APIConnectionError, asyncio.TimeoutError) as error:
        detail = "no answer within 10 s" if isinstance(error, asyncio.TimeoutError) else error_summary(error)
        raise EndpointDown(f"{where} cannot be reached ({detail}); nothing was sent") from None
    except openai.APIStatusError as error:
        if error.status_code >= 500:
            raise EndpointDown(f"{where} is failing ({error_summary(error)}); nothing was sent") from None

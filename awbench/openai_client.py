"""The one way awbench talks to OpenAI-compatible endpoints, for candidate models and LLM judges alike:
an `AsyncOpenAI` client without its own retries, wrapped in our retry policy.

Retried, with exponential backoff and jitter, honouring `Retry-After`: 429, 5xx, timeouts, connection errors.
Not retried: other 4xx (a wrong key, a retired model, a malformed request): the caller decides what they mean.
"""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

T = TypeVar("T")

MAX_RETRY_AFTER_S = 120.0


class MissingAPIKey(Exception):
    """The OpenAI API (no base URL) was asked for without a key in the named variable."""


class FatalAPIError(Exception):
    """An error that retrying cannot fix (400, 401, 403, 404): the run stops with the server's message."""


FATAL_STATUS = frozenset({400, 401, 403, 404})


def make_client(base_url: str | None, api_key_env: str | None, timeout: float) -> openai.AsyncOpenAI:
    """The key is read from the named environment variable and never stored anywhere else."""
    return openai.AsyncOpenAI(base_url=base_url, api_key=api_key(base_url, api_key_env), timeout=timeout, max_retries=0)


def api_key(base_url: str | None, api_key_env: str | None) -> str:
    """The key from the named variable. A local server usually needs none (the SDK still wants a string);
    the OpenAI API (no base URL) does."""
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        return key
    if base_url is None:
        raise MissingAPIKey(f"no API key: set the environment variable {api_key_env or 'OPENAI_API_KEY'}")
    return "EMPTY"


def is_retryable(error: BaseException) -> bool:
    # A malformed 200 body (a proxy cutting the response) is as transient as a dropped connection.
    if isinstance(error, (openai.APITimeoutError, openai.APIConnectionError, json.JSONDecodeError)):
        return True
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


def _wait(state: RetryCallState) -> float:
    error = state.outcome.exception() if state.outcome else None
    server_says = retry_after_seconds(error) if error else None
    return server_says if server_says is not None else backoff_seconds(state.attempt_number)


async def with_retries(call: Callable[[], Awaitable[T]], max_retries: int, on_retry: Callable[[BaseException], Any] | None = None) -> T:
    """Run `call` until it succeeds, fails with a non-retryable error, or `max_retries` retries are spent."""

    def before_sleep(state: RetryCallState) -> None:
        if on_retry and state.outcome:
            on_retry(state.outcome.exception())

    async for attempt in AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(max_retries + 1),
        wait=_wait,
        before_sleep=before_sleep,
        reraise=True,
    ):
        with attempt:
            return await call()
    raise AssertionError("unreachable: tenacity either returns or reraises")


# vLLM 0.32: "This model's maximum context length is N tokens. However, your prompt contains M input tokens..."
# (or "...M characters...") and "Input length (M) exceeds model's maximum context length (N)."; older vLLM and
# OpenAI: "...maximum context length is N tokens. However, you requested M tokens..."; SGLang: "...longer than
# the model's context length..."; Anthropic-style gateways: "prompt is too long".
_CONTEXT_OVERFLOW = re.compile(r"maximum context length|model's context length|context window|prompt is too long", re.I)


def is_context_overflow(error: BaseException) -> bool:
    if not isinstance(error, openai.BadRequestError):
        return False
    return error.code == "context_length_exceeded" or bool(_CONTEXT_OVERFLOW.search(error.message))


def error_summary(error: BaseException) -> str:
    """A one-line description for records and messages: status and the server's own message."""
    if isinstance(error, openai.APIStatusError):
        return f"HTTP {error.status_code}: {error.message}"
    return f"{type(error).__name__}: {error}"


def split_reasoning(message: Any) -> tuple[str | None, str | None]:
    """(content, reasoning) of a chat message. Servers running a reasoning parser return thinking in an
    extra field: vLLM 0.32 names it `reasoning`, older vLLM and some providers `reasoning_content`."""
    extra = getattr(message, "model_extra", None) or {}
    reasoning = extra.get("reasoning") or extra.get("reasoning_content")
    return message.content, reasoning

"""How awbench talks to OpenAI-compatible endpoints, for candidate models and LLM judges alike: the policy
around the HTTP client (`awbench.transport.chat_client`).

- `api_key`: the key from the environment, registered for masking.
- Transient failures (429, 5xx, timeouts, connection errors, a malformed or non-JSON body) are retried; the
  same command retries them again later. Other 4xx (a wrong key, a retired model, a malformed request) are
  permanent: the caller decides what they mean. When and after how long a call is made again (backoff with
  jitter, `Retry-After`, the attempt budget) is `awbench.transport.retry_policy`.
- Rate limits (429 `rate_limit_exceeded`, `x-ratelimit-*` headers) are paced: `SharedLimit.chat` sends
  through the endpoint's `RateControl` (`awbench.transport.rate_control`), which holds sends until the limit
  allows them; a refusal over a rate limit is sent again by the retry policy without using an attempt.
- `Endpoints`: per run, one concurrency limit and rate control per endpoint URL shared by every stage that uses
  it, the dead-endpoint watch, and the check made before the first request (`check_endpoint`), once per URL and
  key for every party that uses them (the candidate's and the judge's checks run at once).
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import os
import random
import re
import time
from collections import Counter, deque
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from awbench.errors import AwbenchError
from awbench.redact import (
    MASK,
    redact,
    register_secret,
    register_url_secrets,
    url_has_credentials,
    url_holds_mask,
    url_secrets_masked,
)
from awbench.safe_text import clean_text
from awbench.transport.chat_client import (
    ChatClient,
    Completion,
    ConnectionFailed,
    MalformedResponse,
    RequestTimeout,
    StatusError,
    endpoint_url,
)
from awbench.transport.rate_control import PROBE_S, RateControl, request_tokens

MAX_RETRY_AFTER_S = 120.0
DEAD_WINDOW = 32  # consecutive connection failures to one endpoint that stop the run
CHECK_TIMEOUT_S = 10.0  # a remote endpoint's check; a local server's may wait for a running job (llama.cpp)
LOCAL_CHECK_TIMEOUT_S = 60.0
CHECK_QUIET_S = 1.0  # a check answered sooner says nothing; one still waiting says what it waits for
CHECK_NOTE_S = 10.0  # and then how long it has waited, this often
FATAL_STATUS = frozenset({400, 401, 403, 404})


class MissingAPIKey(AwbenchError):
    """A key that is needed, or whose variable was named explicitly, is not set."""

    key = "missing_api_key"


class FatalAPIError(AwbenchError):
    """An error that retrying cannot fix (400, 401, 403, 404): the run stops with the server's message."""

    key = "api_refused"
    hint = "; retrying cannot help"


class EndpointDown(AwbenchError):
    """An endpoint refused every connection of the last DEAD_WINDOW attempts, or failed its first check."""

    key = "endpoint_down"


def api_key(base_url: str | None, api_key_env: str | None, option: str = "--api-key-env") -> str:
    """The key from the named variable. A variable named explicitly must be set; a local server usually needs
    no key (the SDK still wants a string); the OpenAI API (no base URL) does. The base URL's own secrets
    (key-like query parameters) are registered for masking; one that carries a user name or password, or a
    key masked as run.json records it, is refused."""
    if base_url is not None:
        if url_has_credentials(base_url):  # OPENAI_BASE_URL: the options are checked with the settings
            raise MissingAPIKey(
                f"the base URL {url_secrets_masked(base_url)} has a user name or password: give "
                f"the URL without it, and the key in an environment variable named with {option}"
            )
        if url_holds_mask(base_url):
            raise MissingAPIKey(
                f"the base URL {base_url} holds a key masked as the run recorded it ({MASK}): "
                "give the URL, with its key, again"
            )
        register_url_secrets(base_url)
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


def is_connection_error(error: BaseException) -> bool:
    return isinstance(error, ConnectionFailed) and not isinstance(error, RequestTimeout)


def is_retryable(error: BaseException) -> bool:
    if isinstance(error, (ConnectionFailed, MalformedResponse)):
        return True  # RequestTimeout is a ConnectionFailed
    if isinstance(error, StatusError):
        return error.status == 429 or (error.status >= 500 and not is_invalid_request(error))
    return False


# A 5xx whose message blames the request itself, not the server's state: sent again, the same request fails
# the same way. llama.cpp-style servers answer a body their schema refuses with a 500 "N validation error(s)"
# (pydantic's wording); chat templates raise "System role not supported" (Gemma) or "Conversation roles must
# alternate user/assistant/..." (Mistral, Llama 2), passed on as a 500; a server without structured output
# says that `response_format` or `json_schema` is not supported. Only these phrases: any other 5xx (an
# internal error, an overloaded or restarting server) stays transient.
_INVALID_REQUEST = re.compile(
    r"\bvalidation errors?\b|system role not supported|roles must alternate"
    r"|\b(?:response_format|json_schema)\b[^.]*\b(?:not supported|unsupported)\b"
    r"|\b(?:not supported|unsupported)\b[^.]*\b(?:response_format|json_schema)\b",
    re.I,
)


def is_invalid_request(error: BaseException) -> bool:
    """A 5xx that says the request is invalid: permanent, as a 400 would be."""
    return isinstance(error, StatusError) and error.status >= 500 and bool(_INVALID_REQUEST.search(error.message))


def is_rate_limited(error: BaseException) -> bool:
    """A 429 over a rate limit, which waiting fixes (out of credit, `insufficient_quota`, it does not)."""
    return isinstance(error, StatusError) and error.status == 429 and error.code != "insufficient_quota"


def retry_after_seconds(error: BaseException) -> float | None:
    if not isinstance(error, StatusError):
        return None
    value = error.retry_after
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:
        return None  # an HTTP date: fall back to our own backoff


def backoff_seconds(attempt: int, base: float = 0.5, cap: float = 60.0) -> float:
    """Full jitter: a uniform draw up to an exponentially growing ceiling."""
    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))


# vLLM 0.32: "This model's maximum context length is N tokens. However, your prompt contains M input tokens..."
# (or "...M characters...") and "Input length (M) exceeds model's maximum context length (N)."; older vLLM and
# OpenAI: "...maximum context length is N tokens. However, you requested M tokens..."; SGLang: "...longer than
# the model's context length..."; Anthropic-style gateways: "prompt is too long".
_CONTEXT_OVERFLOW = re.compile(r"maximum context length|model's context length|context window|prompt is too long", re.I)


def is_context_overflow(error: BaseException) -> bool:
    if not isinstance(error, StatusError) or error.status != 400:
        return False
    return error.code == "context_length_exceeded" or bool(_CONTEXT_OVERFLOW.search(error.message))


_CONTENT_REFUSAL = re.compile(r"content[ _-]?(?:policy|filter|management)|invalid_prompt", re.I)


def is_content_refusal(error: BaseException) -> bool:
    """A 400 refusing this request's content (a content filter or policy): it fails that request only."""
    return (
        isinstance(error, StatusError)
        and error.status == 400
        and bool(_CONTENT_REFUSAL.search(f"{error.code} {error.message}"))
    )


def retry_reason(error: BaseException) -> str:
    """Why a failed call was sent again, as the end of a command counts it."""
    if isinstance(error, StatusError):
        return f"HTTP {error.status}" + (" (rate limit)" if is_rate_limited(error) else "")
    if isinstance(error, RequestTimeout):
        return "a timeout"
    if isinstance(error, ConnectionFailed):
        return "a failed connection"
    if isinstance(error, MalformedResponse):
        return "a malformed answer"
    return type(error).__name__


def error_summary(error: BaseException) -> str:
    """A one-line description for records and messages: status and the server's own message, keys masked,
    lone surrogates (a server's `\ud800` escape) replaced so that the text can always be written."""
    if isinstance(error, StatusError):
        text = f"HTTP {error.status}: {error.message}"
    else:
        text = f"{type(error).__name__}: {error}"
    return redact(clean_text(text)[0] or "")


# --- Endpoints shared by the stages of one run ----------------------------------------------------------------


class SharedLimit:
    """A first-come-first-served semaphore whose size can grow: the stages that share an endpoint each bring
    their own limit, and the endpoint's is the largest of them (each stage stays within its own). A freed
    slot goes to the longest waiter, so a stage that keeps asking cannot starve the other. Within that size,
    the endpoint's rate control may allow fewer (its AIMD window)."""

    def __init__(self, size: int, rate: RateControl) -> None:
        self.size = size
        self.rate = rate
        self._probe_timer: asyncio.TimerHandle | None = None
        self.in_use = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def grow(self, size: int) -> None:
        """Called while the stages are set up, before any request is sent."""
        self.size = max(self.size, size)
        self.rate.concurrency = self.rate.window = max(self.rate.concurrency, size)

    def _allowed(self) -> int:
        return min(self.size, self.rate.allowed_in_flight())

    async def chat(self, client: ChatClient, body: dict[str, Any], sent_at: list[float] | None = None) -> Completion:
        """One call within the endpoint's limits (waiting for them first); whether a refusal is sent again is
        the retry policy's (`awbench.transport.retry_policy`). `sent_at[0]`: set to `time.perf_counter()` as it
        is sent (a latency leaves the waits out)."""
        async with self:
            if self._probe_timer is None:  # the probe: the rest wait for its answer, at most PROBE_S
                self._probe_timer = asyncio.get_running_loop().call_later(PROBE_S, self._wake)
            sent = await self.rate.admit(body)
            if sent_at is not None:
                sent_at[0] = time.perf_counter()
            try:
                completion = await client.chat(body)
            except StatusError as error:
                if is_rate_limited(error):
                    self.rate.refused_now(error.rate, retry_after_seconds(error), sent, request_tokens(body))
                    error.endpoint_answers = self.rate.answers
                else:
                    self.rate.answered(error.rate, sent)
                raise
            self.rate.answered(completion.rate, sent)  # leaving `async with` wakes whom the window now allows
            return completion

    async def __aenter__(self) -> None:
        if self.in_use < self._allowed() and not self._waiters:
            self.in_use += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # the releaser handed its slot over: in_use already counts it
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # handed over just as we were cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        self.in_use -= 1
        self._wake()

    def _wake(self) -> None:
        """Slots to the longest waiters, as many as the limit (and the rate control's window) allows now."""
        while self._waiters and self.in_use < self._allowed():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_use += 1
                waiter.set_result(None)


class DeadEndpointWatch:
    """Stops the run when the last DEAD_WINDOW attempts to an endpoint all failed to connect; counts the calls to
    it that failed and were sent again, by why (`retry`), for the end of the command."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.recent: deque[bool] = deque(maxlen=DEAD_WINDOW)
        self.retried: Counter[str] = Counter()

    def retry(self, error: BaseException) -> None:
        self.retried[retry_reason(error)] += 1

    def record(self, error: BaseException | None) -> None:
        self.recent.append(error is not None and is_connection_error(error))
        if error is not None and len(self.recent) == DEAD_WINDOW and all(self.recent):
            raise EndpointDown(
                f"{self.url} is not answering: the last {DEAD_WINDOW} requests failed to connect "
                f"(last error: {error_summary(error)}). The run is saved; run the same command again when it is back"
            )


class Endpoints:
    """Per run: one shared limit (with its rate control) and one watch per endpoint URL. `note` tells the
    user when a rate limit holds a run back."""

    def __init__(self, note: Callable[[str], None] | None = None) -> None:
        self._limits: dict[str, SharedLimit] = {}
        self._watches: dict[str, DeadEndpointWatch] = {}
        self._checks: dict[tuple[str, str], tuple[list[str], asyncio.Future[None]]] = {}
        self._note = note

    def check(self, client: ChatClient, role: str, patience: float | None) -> asyncio.Future[None]:
        """`check_endpoint`, to await; once per endpoint and key for the command: a party using the same server with
        the same key gets the check already made or under way, and is named in its lines and errors (in the order
        the parties asked)."""
        if client.caller in self._checks:
            roles, checked = self._checks[client.caller]
            roles.append(role)
        else:
            roles = [role]
            checked = asyncio.ensure_future(check_endpoint(client, roles, patience, self._note))
            self._checks[client.caller] = roles, checked
        return checked

    def limit(self, url: str | None, size: int, tpm: int | None = None, rpm: int | None = None) -> SharedLimit:
        """`tpm`/`rpm`: limits known up front (the smallest given for the URL holds until the server says)."""
        key = normalize_url(url)
        if key not in self._limits:
            tell = self._note
            note = (lambda text: tell(f"{key}: {text}")) if tell else None
            self._limits[key] = SharedLimit(size, RateControl(tpm, rpm, size, note=note))
        else:
            self._limits[key].grow(size)
            self._limits[key].rate.know(tpm, rpm)
        return self._limits[key]

    def watch(self, url: str | None) -> DeadEndpointWatch:
        key = normalize_url(url)
        return self._watches.setdefault(key, DeadEndpointWatch(key))

    def retry_report(self) -> list[str]:
        """One line per endpoint whose calls failed and were sent again: how many, and after what
        ("http://gpu:8000/v1: 21 retries (17 after HTTP 500, 4 after a timeout)")."""
        lines = []
        for url, watch in self._watches.items():
            if total := sum(watch.retried.values()):
                why = ", ".join(f"{n} after {reason}" for reason, n in watch.retried.most_common())
                lines.append(f"{url_secrets_masked(url)}: {total} {'retry' if total == 1 else 'retries'} ({why})")
        return lines


def normalize_url(url: str | None) -> str:
    return (url or "https://api.openai.com/v1").rstrip("/").lower()


def is_openai_api(url: str | None) -> bool:
    """OpenAI's own API: no base URL (the SDK's default), or one on api.openai.com."""
    return url is None or urlsplit(url).hostname == "api.openai.com"


def routes_by_cache_key(setting: bool | None, urls: list[str | None]) -> bool:
    """Whether requests carry a `prompt_cache_key`: as `setting` says, else (None) only to OpenAI's own API, which
    routes requests with the same key to the same prompt cache; other servers may refuse a field they do not know."""
    return all(is_openai_api(url) for url in urls) if setting is None else setting


def prompt_cache_key(trajectory: str) -> str:
    """The key of one trajectory's requests: its id, a hash of its system prompt and first action
    (`BenchmarkRecord.trajectory_id`), never a secret or the sample's text."""
    return f"awbench-{trajectory}"


def check_patience(base_url: str, given: float | None) -> float:
    """How long the endpoint check waits: `given`, else LOCAL_CHECK_TIMEOUT_S for a server on this machine or the
    local network (llama.cpp answers its model listing only between jobs: 8-21 s while one runs), else
    CHECK_TIMEOUT_S."""
    if given is not None:
        return given
    return LOCAL_CHECK_TIMEOUT_S if is_local(base_url) else CHECK_TIMEOUT_S


def is_local(base_url: str | None) -> bool:
    """A server on this machine or the local network (loopback, link-local and private addresses, `localhost`,
    `.local`...): a self-hosted model, with no list price and a model listing that may wait for a job."""
    host = urlsplit(base_url or "").hostname or ""
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        return host == "localhost" or host.endswith((".localhost", ".local", ".internal", ".lan"))


async def check_endpoint(
    client: ChatClient, roles: list[str], patience: float | None = None, note: Callable[[str], None] | None = None
) -> None:
    """Before anything is sent: the endpoint answers a model listing it can read, and accepts the key, within
    `check_patience` (`patience`: --check-timeout). Every OpenAI-compatible server lists its models; a base URL
    without one (a 404, or a page that is not a listing) is usually missing its `/v1`, and would fail every
    request. `roles`: the parties that use the endpoint (more may join while it waits); `note`: told what is
    being checked once the check has waited CHECK_QUIET_S, and how long it has waited every CHECK_NOTE_S."""
    waited = check_patience(client.base_url, patience)
    waiting = asyncio.ensure_future(_say_waiting(client.base_url, roles, waited, note)) if note else None
    try:
        await client.list_models(waited)
    except ConnectionFailed as error:
        detail = (
            f"no answer to GET /models within {waited:g} s; a busy server may need a longer --check-timeout"
            if isinstance(error, RequestTimeout)
            else error_summary(error)
        )
        raise EndpointDown(f"{_where(roles, client.base_url)} cannot be reached ({detail}); nothing was sent") from None
    except MalformedResponse as error:
        raise EndpointDown(no_listing(roles, client.base_url, error_summary(error)), key="no_model_listing") from None
    except StatusError as error:
        where = _where(roles, client.base_url)
        if error.status == 404:
            raise EndpointDown(
                no_listing(roles, client.base_url, error_summary(error)), key="no_model_listing"
            ) from None
        if error.status == 401:
            raise FatalAPIError(f"{where} refused the key: {error_summary(error)}") from None
        if error.status == 403:
            raise FatalAPIError(f"{where} refused access: {error_summary(error)}") from None
        if error.status >= 500:
            raise EndpointDown(f"{where} is failing ({error_summary(error)}); nothing was sent") from None
    finally:
        if waiting is not None:
            waiting.cancel()


async def _say_waiting(base_url: str, roles: list[str], patience: float, note: Callable[[str], None]) -> None:
    """What a check that has not answered yet waits for, and then how long it has waited, until cancelled."""
    started = time.monotonic()
    listing = url_secrets_masked(endpoint_url(base_url, "/models"))
    await asyncio.sleep(CHECK_QUIET_S)
    note(f"checking the {_parties(roles)} endpoint: GET {listing} (waiting up to {patience:g} s; --check-timeout)")
    for tick in itertools.count(1):
        await asyncio.sleep(max(0.0, started + tick * CHECK_NOTE_S - time.monotonic()))
        note(f"still waiting for {listing} ({tick * CHECK_NOTE_S:g} s of {patience:g} s; --check-timeout)")


def _where(roles: list[str], base_url: str) -> str:
    return f"{_parties(roles)} endpoint {url_secrets_masked(base_url)}"


def _parties(roles: list[str]) -> str:
    return " and ".join(dict.fromkeys(roles))


def no_listing(roles: list[str], base_url: str, detail: str) -> str:
    """Why a base URL without a model listing is refused, and the `/v1` it most likely lacks."""
    option = " and ".join(dict.fromkeys("--base-url" if role == "candidate" else "--judge-base-url" for role in roles))
    parts = urlsplit(base_url)
    listing = url_secrets_masked(endpoint_url(base_url, "/models"))
    message = f"the {_where(roles, base_url)} has no model listing at {listing} ({detail})"
    if not parts.path.rstrip("/").endswith("/v1"):
        with_v1 = urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/v1"))
        message += f"; OpenAI-compatible servers answer under /v1: try {option} {url_secrets_masked(with_v1)}"
    return message + "; nothing was sent"

"""An OpenAI-compatible endpoint over aiohttp: POST /chat/completions and GET /models, nothing else.

Why not the openai SDK's client: at the benchmark's size (bodies of 100-250 KB) its request path costs
about 2.8 ms of CPU per request, this one about 0.5 ms (bench/transport_cpu.py, docs/performance.md), and
one Python process sends thousands of them; importing the SDK alone takes about a second. Bodies are
encoded once with orjson and answers read with jiter. Failures are `EndpointError`s: `StatusError` (with
the status, the server's message and code), `ConnectionFailed` and its `RequestTimeout`; what is retried,
what stops a run and how it is reported is one policy (`awbench.transport.endpoints`). Proxies (`HTTPS_PROXY`,
`NO_PROXY`...) are honoured, and OpenAI's organisation and project variables are sent as the SDK sends them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

import jiter
import orjson

import awbench
from awbench.records import Usage
from awbench.redact import redact
from awbench.transport.rate_control import RateHeaders, read_rate_headers

if TYPE_CHECKING:
    import aiohttp

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_HEADER_VARIABLES = {"OPENAI_ORG_ID": "OpenAI-Organization", "OPENAI_PROJECT_ID": "OpenAI-Project"}


class EndpointError(Exception):
    """A request to an endpoint that failed."""


class StatusError(EndpointError):
    """The server answered with an error status."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        retry_after: str | None = None,
        rate: RateHeaders | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.retry_after = status, message, code, retry_after
        self.rate = rate  # the answer's rate-limit headers (a 429 usually has them)
        # On a refusal over a rate limit, set by the endpoint's limit: how many answers it had had by then (the
        # retry policy sends it again for free only if the endpoint answered others since the last refusal).
        self.endpoint_answers: int | None = None


class ConnectionFailed(EndpointError):
    """No answer: the connection could not be made, or broke."""


class RequestTimeout(ConnectionFailed):
    """No answer within the request timeout."""


class MalformedResponse(EndpointError, ValueError):
    """A 200 response whose body is not a usable chat completion: transient, like a dropped connection."""


@dataclass(frozen=True)
class Completion:
    """What awbench reads of a chat completion."""

    content: str | None
    reasoning: str | None  # thinking in a separate field (vLLM 0.32: `reasoning`; others `reasoning_content`)
    finish_reason: str | None
    usage: Usage
    rate: RateHeaders | None = None  # the answer's `x-ratelimit-*` headers, when it has them


class ChatClient:
    """One endpoint. The session is made on first use, inside the event loop that uses it."""

    def __init__(self, base_url: str | None, api_key: str, timeout: float) -> None:
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.timeout = timeout
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "User-Agent": f"awbench/{awbench.__version__}",
        }
        self._headers |= {header: os.environ[v] for v, header in _HEADER_VARIABLES.items() if os.environ.get(v)}
        self._session: aiohttp.ClientSession | None = None
        # The environment's proxy, looked up once: aiohttp's trust_env reads ~/.netrc on every request.
        self._proxy = (
            None
            if urllib.request.proxy_bypass(urlsplit(self.base_url).hostname or "")
            else urllib.request.getproxies().get(urlsplit(self.base_url).scheme)
        )

    @property
    def caller(self) -> tuple[str, str]:
        """Where it calls and with which key: one endpoint check answers for every client with the same."""
        return self.base_url.lower(), self._headers["Authorization"]

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp  # here, not at the top: commands that send nothing start 0.15 s sooner

            # No connection limit here: the callers bound what is in flight.
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers, timeout=aiohttp.ClientTimeout(total=self.timeout)
            )
        return self._session

    async def chat(self, body: dict[str, Any]) -> Completion:
        raw, rate = await self._request("POST", "/chat/completions", encode(body))
        completion = read_completion(parse_json(raw))
        return completion if rate is None else dataclasses.replace(completion, rate=rate)

    async def list_models(self, timeout: float | None = None) -> list[str]:
        """The ids the endpoint lists (`timeout`: this request's, else the client's); a body that is not a model
        listing is a `MalformedResponse`."""
        raw, _ = await self._request("GET", "/models", None, timeout)
        return model_ids(parse_json(raw))

    async def _request(
        self, method: str, path: str, data: bytes | None, timeout: float | None = None
    ) -> tuple[bytes, RateHeaders | None]:
        import aiohttp

        url = endpoint_url(self.base_url, path)
        waited = self.timeout if timeout is None else timeout
        try:
            session = self._open()
            limit = aiohttp.ClientTimeout(total=waited)
            async with session.request(method, url, data=data, proxy=self._proxy, timeout=limit) as response:
                raw = await response.read()
                rate = read_rate_headers(response.headers)
                if response.status >= 400:
                    raise status_error(response.status, response.headers.get("retry-after"), raw, rate)
                return raw, rate
        except asyncio.TimeoutError:
            raise RequestTimeout(f"no answer from {url} within {waited:g} s") from None
        except aiohttp.ClientError as error:
            raise ConnectionFailed(f"{type(error).__name__}: {error}") from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()


def endpoint_url(base_url: str, path: str) -> str:
    """`path` after the base URL's own path, its query (`?api-version=...`, a key) kept at the end."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))


def encode(body: dict[str, Any]) -> bytes:
    """orjson: 6.5 GB/s on a body it has encoded before, 6x pydantic-core and 24x json.dumps; on fresh text outside
    ASCII, CPython's UTF-8 conversion holds it to under 1 GB/s (bench/transport_cpu.py, docs/performance.md)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # text that UTF-8 cannot hold (a lone surrogate): escaped, as json.dumps does
        return json.dumps(body).encode()


def parse_json(raw: bytes) -> Any:
    """jiter first; json.loads for what jiter refuses (a lone surrogate escape, which json.loads keeps)."""
    try:
        return jiter.from_json(raw)
    except ValueError:
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            raise MalformedResponse(f"the response is not JSON: {excerpt(raw.decode('utf-8', 'replace'))}") from None


def excerpt(text: str, limit: int = 200) -> str:
    """The start of a body for a message: keys masked before it is cut, so that no part of one survives."""
    return repr(redact(text)[:limit])


def model_ids(data: Any) -> list[str]:
    """An OpenAI model listing's ids: `{"data": [{"id": ...}, ...]}`."""
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list) or not all(isinstance(m, dict) for m in listed):
        raise MalformedResponse(f"the answer is not a model listing: {excerpt(str(data))}")
    return [str(m.get("id")) for m in listed]


def read_completion(data: Any) -> Completion:
    try:
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(choice, dict) or not isinstance(message, dict):
            raise TypeError
        content = message.get("content")
        reasoning = message.get("reasoning") or message.get("reasoning_content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise MalformedResponse(f"the response is not a chat completion: {excerpt(str(data))}") from None
    finish_reason = choice.get("finish_reason")
    if not all(isinstance(v, (str, type(None))) for v in (content, reasoning, finish_reason)):
        raise MalformedResponse(
            f"the message's content, reasoning or finish reason is not text: {excerpt(str(choice))}"
        )
    usage = data.get("usage") if isinstance(data, dict) else None
    return Completion(content=content, reasoning=reasoning, finish_reason=finish_reason, usage=read_usage(usage))


def read_usage(usage: Any) -> Usage:
    """The usage a server reported, cached prompt tokens included (priced at the cached rate)."""
    if not isinstance(usage, dict):
        return Usage()
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return Usage(
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
        cached_tokens=_int(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else None,
        reasoning_tokens=_int(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else None,
    )


def _int(value: Any) -> int | None:
    """A token count as reported, or None for anything else (a malformed usage never fails the answer)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def status_error(status: int, retry_after: str | None, raw: bytes, rate: RateHeaders | None = None) -> StatusError:
    """The server's own message (`error.message` when it sends one) and code."""
    try:
        body: Any = parse_json(raw)
    except MalformedResponse:
        body = raw.decode("utf-8", "replace")
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    code = error.get("code") if isinstance(error, dict) else None
    return StatusError(
        status, str(message or body or f"status {status}"), str(code) if code is not None else None, retry_after, rate
    )

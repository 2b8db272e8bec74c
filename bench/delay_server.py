"""A minimal OpenAI-compatible chat server for benchmarks: every completion is answered after a fixed delay.

It runs in its own process (asyncio, so thousands of waiting requests cost nothing) so that the client being
measured has its interpreter to itself. Each response is written in one send with TCP_NODELAY: a response split
into header and body writes would wait ~40 ms on the client's delayed ACK, on every request.

One process plays a candidate world model, an LLM judge, or both (`--role`):

* candidate: `<predicted_observation>` holding the request's last earlier observation (the last assistant
  message, cut to `--max-reply-chars`), or a one-line output when the request has no earlier turn;
* judge: a short reasoning, then `<final_evaluation>` with a fenced JSON verdict (strengths, weaknesses and
  the five rubric scores, 2..5, drawn from a hash of the request so that they vary but repeat);
* auto (the default): a judge reply when the system prompt or the last message mentions `<final_evaluation>`
  (awbench's judge template and bench/reference_loop.py's judge prompt ask for that block; no candidate
  prompt does), a candidate reply otherwise.

`usage` has `prompt_tokens` = characters of the message texts / 4 (the messages concatenated, role and content),
`completion_tokens` = reply characters / 4, and `prompt_tokens_details.cached_tokens` from a prompt cache that
bills by OpenAI's documented rules (`PromptCache`, https://developers.openai.com/api/docs/guides/prompt-caching):
only prompts of 1,024 tokens or more, hits in steps of 128 tokens (1,024, 1,152, ...), the longest prefix an
earlier request has left; a request's prefixes are cached once it has been processed, which takes the time to
answer it (`--delay`: a request sent before an earlier one with its prefix was answered finds none of it), and a
prefix unused for `--cache-idle` seconds is evicted (OpenAI: 5 to 10 minutes of inactivity). `/stats` also
reports `ideal_cached_tokens`: what would have been cached had every request been sent after the shorter
requests sharing its prefix were answered (the requests since the last reset replayed shortest first, nothing
evicted).

Every completion is answered exactly `--delay` seconds after its request head arrived (parsing and hashing
happen inside that time). Other endpoints: `GET /v1/models` (the `--model` names), `GET /stats` (counters;
`POST /stats` returns them and resets them, the prompt cache included), anything else 404.

    python bench/delay_server.py --port 8001 --delay 0.5 --role judge       # a server on its own
    with DelayServer(delay_s=0.2, role="candidate") as server:              # from a script: own process
        ...                                                                 # server.url == "http://127.0.0.1:PORT/v1"
        server.stats()     # {"requests": n, "in_flight_max": k, "bytes_received": b, "cpu_s": s, ...}

With `--tpm` and/or `--rpm` it enforces rate limits as OpenAI counts them: a request costs its prompt tokens
(as above) plus its `max_completion_tokens` or `max_tokens` when it arrives, against buckets that refill at the
limit / 60 a second and hold at most `--burst` seconds' worth (a small burst allowance); a request that does
not fit is refused with 429 `rate_limit_exceeded` and no `Retry-After`. Every completion answer and refusal
carries `x-ratelimit-limit-*`, `x-ratelimit-remaining-*` and `x-ratelimit-reset-*` (`1.5s`, `120ms`), unless
`--no-headers`. `/stats` then also counts what was admitted and refused, and when.

Requests must carry a Content-Length (as the openai SDK's, httpx's and aiohttp's do) or be chunked; responses
are never streamed (`stream: true` is answered with one plain JSON body).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zlib
from collections.abc import Callable
from typing import Any

ROLES = ("auto", "candidate", "judge")
JUDGE_MARK = "<final_evaluation>"
MARKER = "**Environment Observation:**"
DIMENSIONS = ("format", "factuality", "consistency", "realism", "quality")
STREAM_LIMIT = 8 * 2**20  # the reader's buffer: large, so full-size bodies never pause the transport


class Counters:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = self.in_flight = self.in_flight_max = 0
        self.candidate_requests = self.judge_requests = 0
        self.bytes_received = 0
        self.prompt_tokens = self.cached_tokens = self.completion_tokens = 0
        self.prompts: list[tuple[int, list[bytes]]] = []  # every prompt's (tokens, prefix digests): the ideal
        self.errors = 0
        self.refused = self.admitted_tokens = self.admitted_requests = 0
        self.first_admitted = self.last_admitted = 0.0  # time.monotonic()

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "candidate_requests": self.candidate_requests,
            "judge_requests": self.judge_requests,
            "in_flight_max": self.in_flight_max,
            "bytes_received": self.bytes_received,
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
            "ideal_cached_tokens": ideal_cached_tokens(self.prompts),
            "completion_tokens": self.completion_tokens,
            "errors": self.errors,
            "refused": self.refused,
            "admitted_tokens": self.admitted_tokens,
            "admitted_requests": self.admitted_requests,
            "admitted_span_s": round(self.last_admitted - self.first_admitted, 4),
            "cpu_s": round(time.process_time(), 3),  # the process's own CPU, since it started
        }


def openai_duration(seconds: float) -> str:
    """OpenAI's reset format: `6m0s`, `1.5s`, `120ms`."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


class Bucket:
    """One limit per minute, refilled continuously, holding at most `burst_s` seconds' worth."""

    def __init__(self, per_minute: int, burst_s: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60
        self.capacity = self.rate * burst_s
        self.level = self.capacity
        self.updated = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def headers(self, kind: str) -> str:
        reset = (self.capacity - self.level) / self.rate
        return (
            f"x-ratelimit-limit-{kind}: {self.per_minute}\r\nx-ratelimit-remaining-{kind}: {max(0, int(self.level))}\r\n"
            f"x-ratelimit-reset-{kind}: {openai_duration(reset)}\r\n"
        )


class RateLimits:
    def __init__(self, tpm: int | None, rpm: int | None, burst_s: float, headers: bool) -> None:
        self.buckets = {kind: Bucket(limit, burst_s) for kind, limit in (("tokens", tpm), ("requests", rpm)) if limit}
        self.send_headers = headers

    def admit(self, tokens: int) -> bool:
        now = time.monotonic()
        cost = {"tokens": tokens, "requests": 1}
        for bucket in self.buckets.values():
            bucket.refill(now)
        if any(bucket.level < min(cost[kind], bucket.capacity) for kind, bucket in self.buckets.items()):
            return False
        for kind, bucket in self.buckets.items():
            bucket.level -= cost[kind]
        return True

    def headers(self) -> str:
        return "".join(b.headers(kind) for kind, b in self.buckets.items()) if self.send_headers else ""


REFUSAL = json.dumps(
    {"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}}
).encode()


MIN_CACHED_TOKENS = 1024  # OpenAI: caching starts at 1,024 tokens...
CACHE_STEP_TOKENS = 128  # ...and hits grow in steps of 128
CHARS_PER_TOKEN = 4


def prefix_digests(text: str) -> list[bytes]:
    """The digests of the text's prefixes that can be cached: at 1,024 tokens, then every 128 more, each token 4
    characters (the hash object keeps going from one to the next)."""
    digest = hashlib.blake2b(digest_size=12)
    digest.update(text[: MIN_CACHED_TOKENS * CHARS_PER_TOKEN].encode("utf-8", "surrogatepass"))
    step = CACHE_STEP_TOKENS * CHARS_PER_TOKEN
    digests = []
    for end in range(MIN_CACHED_TOKENS * CHARS_PER_TOKEN, len(text) + 1, step):
        if digests:
            digest.update(text[end - step : end].encode("utf-8", "surrogatepass"))
        digests.append(digest.digest())
    return digests


def cached_prefixes(digests: list[bytes], cached: Callable[[bytes], bool]) -> int:
    """How many of a prompt's leading prefixes are cached."""
    hits = 0
    for digest in digests:
        if not cached(digest):
            break
        hits += 1
    return hits


def tokens_of(prefixes: int) -> int:
    """The tokens of that many cacheable prefixes: 0, or 1,024 + 128k."""
    return MIN_CACHED_TOKENS + (prefixes - 1) * CACHE_STEP_TOKENS if prefixes else 0


class PromptCache:
    """Prefix digests and when each was last used; one unused for `idle_s` is gone."""

    def __init__(self, idle_s: float) -> None:
        self.idle_s = idle_s
        self.used: dict[bytes, float] = {}

    def lookup(self, digests: list[bytes], now: float) -> int:
        """The cached tokens of a prompt arriving at `now`; its cached prefixes count as used."""
        hits = cached_prefixes(digests, lambda d: d in self.used and now - self.used[d] <= self.idle_s)
        for digest in digests[:hits]:
            self.used[digest] = now
        return tokens_of(hits)

    def store(self, digests: list[bytes], now: float) -> None:
        """A processed prompt: its prefixes cached."""
        for digest in digests:
            self.used[digest] = now


def ideal_cached_tokens(prompts: list[tuple[int, list[bytes]]]) -> int:
    """The cached tokens had every prompt been sent after the shorter ones sharing its prefix were answered:
    replayed shortest first (then in arrival order), nothing evicted."""
    seen: set[bytes] = set()
    total = 0
    for _, digests in sorted(prompts, key=lambda p: p[0]):
        total += tokens_of(cached_prefixes(digests, seen.__contains__))
        seen.update(digests)
    return total


def _text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def is_judge_request(messages: list[dict[str, Any]]) -> bool:
    ends = [messages[0], messages[-1]] if messages else []
    return any(JUDGE_MARK in _text(m.get("content")) for m in ends)


def candidate_reply(messages: list[dict[str, Any]], max_chars: int) -> str:
    previous = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "assistant"), None)
    if previous is None:
        action = _text(messages[-1].get("content")) if messages else ""
        observation = (
            f"(synthetic output for: {action.strip().splitlines()[-1][:200] if action.strip() else 'no action'})"
        )
    else:
        observation = previous.removeprefix(MARKER).lstrip("\n")[:max_chars]
    return f"<predicted_observation>\n{MARKER}\n{observation}\n</predicted_observation>"


def judge_reply(body: bytes) -> str:
    h = zlib.crc32(body)
    scores = {dim: 2 + (h >> (3 * i)) % 4 for i, dim in enumerate(DIMENSIONS)}
    verdict = {
        "strengths": ["The simulated observation keeps the environment's output format."],
        "weaknesses": ["Some values differ from the real observation."] if min(scores.values()) < 4 else [],
        "scores": scores,
    }
    return (
        "Tier 1 content (fixed by the trajectory) is mostly reproduced; tier 2 content (pre-existing state) "
        "differs in places, as expected; tier 3 runtime metadata is plausible. The observation is consistent "
        "with the earlier turns and has a realistic length.\n\n"
        f"{JUDGE_MARK}\n```json\n{json.dumps(verdict)}\n```\n</final_evaluation>"
    )


def completion(model: str, content: str, prompt_tokens: int, cached_tokens: int) -> bytes:
    completion_tokens = max(1, len(content) // 4)
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
            },
        }
    ).encode()


def http_response(status: int, body: bytes, headers: str = "") -> bytes:
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests"}.get(status, "Error")
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
    )
    return head.encode() + body


class Server:
    def __init__(
        self,
        delay_s: float,
        role: str,
        models: list[str],
        cache_idle_s: float,
        max_reply_chars: int,
        limits: RateLimits | None = None,
    ) -> None:
        self.delay_s = delay_s
        self.limits = limits
        self.role = role
        self.models = models
        self.cache_idle_s = cache_idle_s
        self.cache = PromptCache(cache_idle_s)
        self.max_reply_chars = max_reply_chars
        self.counters = Counters()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        loop = asyncio.get_running_loop()
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                arrived = loop.time()
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    body = await self._read_chunked(reader)
                else:
                    body = await reader.readexactly(int(headers.get("content-length", 0)))
                self.counters.bytes_received += len(head) + len(body)
                method, path = request_line.split()[:2]
                close = headers.get("connection", "").lower() == "close"
                if path.split("?")[0].endswith("/chat/completions") and method == "POST":
                    response = await self._complete(body, arrived, loop)
                elif path.endswith("/models"):
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "bench"} for m in self.models]
                    response = http_response(200, json.dumps({"object": "list", "data": data}).encode())
                elif path.endswith("/stats"):
                    stats = self.counters.snapshot()
                    if method == "POST":  # read and reset
                        self.counters.reset()
                        self.cache = PromptCache(self.cache_idle_s)
                    response = http_response(200, json.dumps(stats).encode())
                else:
                    response = http_response(404, b'{"error": {"message": "not found"}}')
                if close:  # say so, then close after this response
                    response = response.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n", 1)
                writer.write(response)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its connection
        finally:
            writer.close()

    @staticmethod
    async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")  # no trailers are sent by the clients this serves
                return b"".join(parts)
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)

    async def _complete(self, body: bytes, arrived: float, loop: asyncio.AbstractEventLoop) -> bytes:
        counters = self.counters
        counters.requests += 1
        counters.in_flight += 1
        counters.in_flight_max = max(counters.in_flight_max, counters.in_flight)
        try:
            try:
                request = json.loads(body)
                messages = request["messages"]
                model = str(request.get("model", self.models[0]))
            except (ValueError, KeyError, TypeError):
                counters.errors += 1
                await asyncio.sleep(max(0.0, arrived + self.delay_s - loop.time()))
                return http_response(400, b'{"error": {"message": "expected a JSON body with messages"}}')
            text = "".join(f"<|{m.get('role')}|>\n{_text(m.get('content'))}\n" for m in messages)
            prompt_tokens = max(1, len(text) // 4)
            headers = ""
            if self.limits is not None:
                allowance = request.get("max_completion_tokens") or request.get("max_tokens") or 0
                admitted = self.limits.admit(prompt_tokens + int(allowance))
                headers = self.limits.headers()
                if not admitted:
                    counters.refused += 1
                    return http_response(429, REFUSAL, headers)
                now = time.monotonic()
                counters.first_admitted = counters.first_admitted or now
                counters.last_admitted = now
                counters.admitted_tokens += prompt_tokens + int(allowance)
                counters.admitted_requests += 1
            digests = prefix_digests(text)
            cached_tokens = self.cache.lookup(digests, loop.time())
            counters.prompts.append((prompt_tokens, digests))
            judge = self.role == "judge" or (self.role == "auto" and is_judge_request(messages))
            content = judge_reply(body) if judge else candidate_reply(messages, self.max_reply_chars)
            response = http_response(200, completion(model, content, prompt_tokens, cached_tokens), headers)
            counters.judge_requests += judge
            counters.candidate_requests += not judge
            counters.prompt_tokens += prompt_tokens
            counters.cached_tokens += cached_tokens
            counters.completion_tokens += max(1, len(content) // 4)
            await asyncio.sleep(max(0.0, arrived + self.delay_s - loop.time()))
            self.cache.store(digests, loop.time())  # processed: its prefixes are cached from now on
            return response
        finally:
            counters.in_flight -= 1


async def serve(port: int, server: Server) -> None:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", port, backlog=1024, limit=STREAM_LIMIT)
    bound = listener.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{bound}", flush=True)  # DelayServer reads the port from this line
    async with listener:
        await listener.serve_forever()


class DelayServer:
    """The server in a process of its own, on a free port of 127.0.0.1, for the length of a `with` block."""

    def __init__(
        self,
        delay_s: float,
        role: str = "auto",
        models: list[str] | None = None,
        cache_idle_s: float = 300.0,
        max_reply_chars: int = 8000,
        tpm: int | None = None,
        rpm: int | None = None,
        burst_s: float = 1.0,
        rate_headers: bool = True,
    ) -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        self.command = [
            sys.executable, os.path.abspath(__file__), "--port", "0", "--delay", str(delay_s), "--role", role,
            "--cache-idle", str(cache_idle_s), "--max-reply-chars", str(max_reply_chars),
            *[arg for m in (models or ["bench"]) for arg in ("--model", m)],
            *(["--tpm", str(tpm)] if tpm else []), *(["--rpm", str(rpm)] if rpm else []), "--burst", str(burst_s),
            *([] if rate_headers else ["--no-headers"]),
        ]  # fmt: skip
        self.delay_s = delay_s
        self.role = role
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.url = ""

    def __enter__(self) -> DelayServer:
        self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # blocks until the server is listening (or has died)
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"the delay server did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None

    def stats(self, reset: bool = False) -> dict[str, Any]:
        request = urllib.request.Request(f"{self.url}/stats", method="POST" if reset else "GET")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True, help="0: any free port (printed on the first line)")
    parser.add_argument("--delay", type=float, required=True, help="seconds from a request's arrival to its answer")
    parser.add_argument("--role", choices=ROLES, default="auto")
    parser.add_argument("--model", action="append", help="model names for /v1/models (repeatable; default: bench)")
    parser.add_argument(
        "--cache-idle", type=float, default=300.0, help="seconds a cached prefix stays unused before it is evicted"
    )
    parser.add_argument("--max-reply-chars", type=int, default=8000, help="longest candidate prediction")
    parser.add_argument(
        "--tpm", type=int, help="tokens per minute (prompt + max_tokens of each request); default: no limit"
    )
    parser.add_argument("--rpm", type=int, help="requests per minute; default: no limit")
    parser.add_argument("--burst", type=float, default=1.0, help="seconds of each limit that may be spent at once")
    parser.add_argument("--no-headers", action="store_true", help="send no x-ratelimit-* headers: 429s only")
    args = parser.parse_args()
    limits = RateLimits(args.tpm, args.rpm, args.burst, not args.no_headers) if args.tpm or args.rpm else None
    server = Server(args.delay, args.role, args.model or ["bench"], args.cache_idle, args.max_reply_chars, limits)
    try:
        asyncio.run(serve(args.port, server))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

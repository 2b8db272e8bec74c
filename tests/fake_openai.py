"""A real OpenAI-compatible HTTP server for tests: replies are scripted, requests are recorded.

    with FakeOpenAIServer(script=[Reply(status=429, headers={"Retry-After": "0.2"}), Reply("hi")]) as server:
        client = openai.AsyncOpenAI(base_url=server.url, api_key="x")

Replies come from `script` in order while it lasts, then from `responder(request_json)`, else `Reply()`.
Each request is handled in its own thread, so delayed replies overlap (see `in_flight_max`).

Faults beyond a status code: `Reply(close=True)` reads the request and closes the connection without an
answer; `Reply(raw_body=..., content_type="text/html")` sends any body; `Reply(gate=event)` answers only
once the test sets the event; `models=Reply(status=401)` makes the endpoint check (GET /models) fail, `models=Reply(raw_body=...)` answers it with any body, `models=Reply(delay_s=15)` late;
`stop_after_models=True` answers the check and then stops listening, so every later connection is refused.
`port=` starts on a given port (a restarted server keeps its URL).
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    content: str | None = "ok"
    reasoning: str | None = None  # sent as message.reasoning, the field vLLM 0.32 uses
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: bytes | None = None  # sent verbatim instead of JSON (a malformed body)
    error_message: str = "error"  # for non-200 statuses
    usage: dict | None = None  # default: estimated from the request and content lengths
    close: bool = False  # close the connection without any answer (a server dying mid-request)
    content_type: str = "application/json"
    gate: threading.Event | None = None  # held until the test sets it (at most 60 s): a server as slow as needed


class FakeOpenAIServer:
    def __init__(
        self,
        script: list[Reply] | None = None,
        responder: Callable[[dict], Reply] | None = None,
        delay_s: float = 0.0,
        port: int = 0,
        models: Reply | None = None,
        stop_after_models: bool = False,
    ) -> None:
        self.script = list(script or [])
        self.responder = responder
        self.delay_s = delay_s
        self.port = port
        self.models = models  # the reply to GET /models; None: the usual listing
        self.stop_after_models = stop_after_models
        self.model_checks = 0  # GET /models requests received
        self.model_checks_at: list[float] = []  # time.monotonic() of each, as it arrived
        self.requests: list[dict] = []
        self.received_at: list[float] = []  # time.monotonic() of each request
        self.answered_at: dict[int, float] = {}  # by request index: when its answer went out
        self.headers: list[dict] = []  # as sent: names keep the client's case
        self.queries: list[str] = []  # the query string of every request (a key in the base URL's query)
        self.in_flight_max = 0
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> FakeOpenAIServer:
        server = _Server(("127.0.0.1", self.port), _handler_for(self))
        self._server = server
        self.port = server.server_address[1]
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:  # called by a handler thread (stop_after_models), then again by the test
            server, thread, self._server, self._thread = self._server, self._thread, None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, body: dict, headers: dict) -> tuple[int, Reply]:
        """Record the request and pick its reply under the lock: the script is consumed in arrival order, and a
        responder with state (an iterator, a counter) is never called from two threads at once."""
        with self._lock:
            self.requests.append(body)
            self.received_at.append(time.monotonic())
            self.headers.append(headers)
            index = len(self.requests) - 1
            if self.script:
                return index, self.script.pop(0)
            return index, self.responder(body) if self.responder else Reply()

    def _answered(self, index: int) -> None:
        with self._lock:
            self.answered_at[index] = time.monotonic()

    def _enter(self) -> None:
        with self._lock:
            self._in_flight += 1
            self.in_flight_max = max(self.in_flight_max, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog; the default of 5 stalls bursts of 64+ connections for a second

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # a client that went away mid-connection (killed, timed out): nothing to report
        super().handle_error(request, client_address)


def completion_json(reply: Reply, request: dict) -> dict[str, Any]:
    usage = reply.usage
    if usage is None:
        prompt = len(json.dumps(request.get("messages", []))) // 4
        completion = len(reply.content or "") // 4
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content, "reasoning": reply.reasoning},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


_MODELS = {"object": "list", "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "fake"}]}


def _error_json(reply: Reply) -> dict[str, Any]:
    return {"error": {"message": reply.error_message, "type": "fake_error", "param": None, "code": str(reply.status)}}


def _handler_for(fake: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True  # headers and body go out in two writes: no delayed-ACK stall between
        protocol_version = "HTTP/1.1"  # keep-alive, as the client pools connections

        def log_message(self, format: str, *args: Any) -> None:  # quiet: no access log on stderr
            pass

        def _route(self) -> str:
            """The request's path without its query, which is recorded."""
            path, _, query = self.path.partition("?")
            with fake._lock:
                fake.queries.append(query)
            return path.rstrip("/")

        def do_GET(self) -> None:
            if self._route() == "/v1/models":
                with fake._lock:
                    fake.model_checks += 1
                    fake.model_checks_at.append(time.monotonic())
                time.sleep(fake.models.delay_s if fake.models is not None else 0.0)  # a server busy with a job
                listing = fake.models.raw_body if fake.models is not None else None
                if fake.models is not None and listing is not None:
                    self._send_bytes(fake.models.status, listing, fake.models.headers, fake.models.content_type)
                elif fake.models is not None and fake.models.status != 200:
                    self._send(fake.models.status, _error_json(fake.models), fake.models.headers)
                elif fake.stop_after_models:
                    fake.stop()  # before answering: every connection the client opens after the check is refused
                    self.close_connection = True
                    self._send(200, _MODELS, {"Connection": "close"})
                else:
                    self._send(200, _MODELS)
            else:
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length)
            if self._route() != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            try:
                body = json.loads(data or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}})
                return
            fake._enter()
            left = False
            try:
                index, reply = fake._record(body, dict(self.headers.items()))
                time.sleep(fake.delay_s + reply.delay_s)
                if reply.gate is not None:
                    reply.gate.wait(timeout=60)
                # Counted out before the answer goes: once the client has it, it may send its next request,
                # which must not find this one still counted in.
                fake._leave()
                fake._answered(index)
                left = True
                if reply.close:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif reply.raw_body is not None:
                    self._send_bytes(reply.status, reply.raw_body, reply.headers, reply.content_type)
                elif reply.status != 200:
                    self._send(reply.status, _error_json(reply), reply.headers)
                else:
                    self._send(200, completion_json(reply, body), reply.headers)
            except OSError:  # BrokenPipeError, ConnectionResetError
                pass  # the client gave up (e.g. its timeout passed): nothing to answer
            finally:
                if not left:
                    fake._leave()

        def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), headers)

        def _send_bytes(
            self,
            status: int,
            payload: bytes,
            headers: dict[str, str] | None = None,
            content_type: str = "application/json",
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler

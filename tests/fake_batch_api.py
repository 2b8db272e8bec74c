"""A real HTTP server for tests with the OpenAI Files and Batch API endpoints the openai SDK calls, and the chat
endpoint (for direct calls and `GET /v1/models`), on 127.0.0.1.

    with FakeBatchAPI(responder=lambda body: Reply(verdict_text())) as api:
        ...  # base URL api.url

Endpoints: `POST /v1/files` (multipart, purpose `batch`), `GET /v1/files` (list, newest first),
`GET /v1/files/{id}`, `GET /v1/files/{id}/content`, `POST /v1/batches`, `GET /v1/batches/{id}`,
`GET /v1/batches` (list, newest first, cursor pages), `POST /v1/batches/{id}/cancel`,
`POST /v1/chat/completions`, `GET /v1/models`.

A batch moves one status per look (`GET /v1/batches/{id}`): validating -> in_progress -> finalizing -> its
outcome, which `outcome(batch_number, requests)` chooses (`Outcome()`: completed; `Outcome("expired",
answered=N)`: the first N answered, the rest expired; `Outcome("failed", code=...)`: nothing ran). While `hold`
is set, batches stay in_progress; with `hold_after=N`, every batch created after the first N does.

`token_limit=N` enforces an enqueued-token limit per model as OpenAI does: a batch counts each request's
`count(body)` (by default awbench's own estimate, `request_tokens`: the prompt plus `max_tokens`; a provider's count
is its own), from its creation until it ends, and `linger_s` seconds after (a provider that frees ended batches'
tokens late); a batch that would take the model's enqueued tokens past N fails at validation with
`token_limit_exceeded` and OpenAI's message, which states the limit (`stated_limit=False`: a message without it). Each request of a batch is answered by `responder(body)` (a fake_openai
Reply; a non-200 status goes to the error file), in the Batch API's formats:
output lines `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}`, error
lines the same with the error body, or `{"id", "custom_id", "response": null, "error": {"code", "message"}}`
for requests that never ran.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_openai import Reply, completion_json

from awbench.transport.rate_control import request_tokens

STEPS = ("validating", "in_progress", "finalizing")


@dataclass
class Outcome:
    status: str = "completed"  # completed, expired, failed, cancelled
    answered: int | None = None  # expired: how many requests were answered first (None: all)
    code: str = "invalid_request"  # failed: the batch's error code
    message: str = "the batch could not be validated"


@dataclass
class FakeBatch:
    id: str
    input_file_id: str
    metadata: dict[str, str]
    created_at: int
    outcome: Outcome
    step: int = 0  # index into STEPS, then len(STEPS): ended
    status: str = "validating"
    model: str = ""
    tokens: int = 0  # enqueued while it runs
    ended_at: float | None = None  # time.monotonic() when it ended
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: list[dict[str, Any]] | None = None
    counts: dict[str, int] = field(default_factory=lambda: {"total": 0, "completed": 0, "failed": 0})
    cancel_requested: bool = False

    def json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "input_file_id": self.input_file_id,
            "status": self.status,
            "created_at": self.created_at,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "request_counts": dict(self.counts),
            "metadata": self.metadata,
            "expires_at": self.created_at + 86400,
            "in_progress_at": None,
            "completed_at": None,
        }


class FakeBatchAPI:
    def __init__(
        self,
        responder: Callable[[dict], Reply] | None = None,
        outcome: Callable[[int, int], Outcome] | None = None,
        hold: bool = False,
        chat_responder: Callable[[dict], Reply] | None = None,
        upload_status: int = 200,
        token_limit: int | None = None,
        stated_limit: bool = True,
        hold_after: int | None = None,
        count: Callable[[dict], int] = request_tokens,
        linger_s: float = 0.0,
    ) -> None:
        self.responder = responder or (lambda body: Reply())
        self.chat_responder = chat_responder or self.responder
        self.outcome = outcome or (lambda number, requests: Outcome())
        self.hold = hold
        self.hold_after = hold_after
        self.token_limit = token_limit
        self.stated_limit = stated_limit
        self.count = count
        self.linger_s = linger_s
        self.refused: list[str] = []  # batch ids refused for the enqueued-token limit
        self.peak_enqueued = 0  # the most tokens enqueued at once for one model
        self.upload_status = upload_status  # another status refuses every upload (e.g. 401)
        self.fail_looks = 0  # the next N looks at a batch answer 503
        self.lose_creations = 0  # the next N batches are created, but the connection drops before the answer
        self.files: dict[str, dict[str, Any]] = {}  # id -> {"json": file object, "content": bytes}
        self.batches: dict[str, FakeBatch] = {}
        self.uploads: list[str] = []  # file ids, in order
        self.created: list[str] = []  # batch ids, in order
        self.cancelled: list[str] = []
        self.looked_at: list[str] = []  # batch ids of every GET /v1/batches/{id}
        self.listed = 0  # GET /v1/batches
        self.files_listed = 0  # GET /v1/files
        self.chat_requests: list[dict] = []  # direct chat completions
        self.answered: list[dict] = []  # every request body answered inside a batch
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # --- what tests read ----------------------------------------------------------------------------------

    def uploaded_lines(self, file_id: str | None = None) -> list[dict]:
        """The JSONL lines of one uploaded file, or of every upload in order."""
        ids = [file_id] if file_id else self.uploads
        return [json.loads(line) for i in ids for line in self.files[i]["content"].splitlines() if line.strip()]

    # --- the server ---------------------------------------------------------------------------------------

    def start(self) -> FakeBatchAPI:
        server = _Server(("127.0.0.1", 0), _handler_for(self))
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeBatchAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _add_file(self, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        info = {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
            "expires_at": None,
            "status_details": None,
        }
        self.files[file_id] = {"json": info, "content": content}
        return info

    def _create_batch(self, body: dict) -> tuple[int, dict]:
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return 400, _error(f"no file {file_id}")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return 400, _error("unsupported endpoint or completion window")
        lines = [json.loads(line) for line in self.files[file_id]["content"].splitlines() if line.strip()]
        batch = FakeBatch(
            id=f"batch_{uuid.uuid4().hex[:24]}",
            input_file_id=file_id,
            metadata=body.get("metadata") or {},
            created_at=int(time.time()),
            outcome=self.outcome(len(self.created) + 1, len(lines)),
            model=str(lines[0]["body"].get("model", "")) if lines else "",
            tokens=sum(self.count(line["body"]) for line in lines),
        )
        batch.counts["total"] = len(lines)
        if self.token_limit is not None:
            enqueued = self.enqueued(batch.model)
            if enqueued + batch.tokens > self.token_limit:
                stated = f" Limit: {self.token_limit:,} enqueued tokens." if self.stated_limit else ""
                message = (
                    f"Enqueued token limit reached for {batch.model} in organization org-fake.{stated} "
                    "Please try again once some in_progress batches have been completed."
                )
                batch.outcome, batch.tokens = Outcome("failed", code="token_limit_exceeded", message=message), 0
                self.refused.append(batch.id)
            self.peak_enqueued = max(self.peak_enqueued, enqueued + batch.tokens)
        self.batches[batch.id] = batch
        self.created.append(batch.id)
        return 200, batch.json()

    def enqueued(self, model: str) -> int:
        """The tokens of the model's batches that have not ended, or ended within the last `linger_s`."""
        ended = ("completed", "expired", "failed", "cancelled")
        now = time.monotonic()
        return sum(
            b.tokens
            for b in self.batches.values()
            if b.model == model
            and (b.status not in ended or (b.ended_at is not None and now - b.ended_at < self.linger_s))
        )

    def _advance(self, batch: FakeBatch) -> None:
        """One look moves a batch one step on; at the end its outcome is written."""
        if batch.status in ("completed", "expired", "failed", "cancelled"):
            return
        if batch.cancel_requested:
            self._finish(batch, Outcome("cancelled", answered=0))
            return
        held = self.hold or (self.hold_after is not None and self.created.index(batch.id) >= self.hold_after)
        if held and batch.status == "in_progress":
            return
        if batch.outcome.status == "failed" and batch.status == "validating":
            batch.status = "failed"
            batch.errors = [{"code": batch.outcome.code, "message": batch.outcome.message, "line": None, "param": None}]
            return
        batch.step += 1
        if batch.step < len(STEPS):
            batch.status = STEPS[batch.step]
            if batch.status == "in_progress":
                batch.counts["completed"] = batch.counts["total"] // 2
        else:
            self._finish(batch, batch.outcome)

    def _finish(self, batch: FakeBatch, outcome: Outcome) -> None:
        lines = [json.loads(line) for line in self.files[batch.input_file_id]["content"].splitlines() if line.strip()]
        answered = len(lines) if outcome.answered is None else outcome.answered
        output, errors = [], []
        for number, line in enumerate(lines):
            if number >= answered:
                code = "batch_expired" if outcome.status == "expired" else "batch_cancelled"
                errors.append(
                    {
                        "id": f"batch_req_{uuid.uuid4().hex[:16]}",
                        "custom_id": line["custom_id"],
                        "response": None,
                        "error": {
                            "code": code,
                            "message": "This request could not be executed before the completion window expired.",
                        },
                    }
                )
                continue
            reply = self.responder(line["body"])
            self.answered.append(line["body"])
            if reply.status == 200:
                body = completion_json(reply, line["body"])
                output.append(
                    {
                        "id": f"batch_req_{uuid.uuid4().hex[:16]}",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": 200, "request_id": uuid.uuid4().hex, "body": body},
                        "error": None,
                    }
                )
            else:
                body = {"error": {"message": reply.error_message, "type": "fake_error", "param": None, "code": None}}
                errors.append(
                    {
                        "id": f"batch_req_{uuid.uuid4().hex[:16]}",
                        "custom_id": line["custom_id"],
                        "response": {"status_code": reply.status, "request_id": uuid.uuid4().hex, "body": body},
                        "error": None,
                    }
                )
        if output:
            batch.output_file_id = self._add_file(f"{batch.id}_output.jsonl", "batch_output", _jsonl(output))["id"]
        if errors:
            batch.error_file_id = self._add_file(f"{batch.id}_error.jsonl", "batch_output", _jsonl(errors))["id"]
        batch.counts = {"total": len(lines), "completed": len(output), "failed": len(errors)}
        batch.status = outcome.status
        batch.ended_at = time.monotonic()


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _error(message: str, type_: str = "invalid_request_error") -> dict:
    return {"error": {"message": message, "type": type_, "param": None, "code": None}}


def _page(items: list[dict], query: dict[str, list[str]]) -> dict:
    """Newest first; `after` an id, `limit` (default 20)."""
    limit = int(query.get("limit", ["20"])[0])
    after = query.get("after", [None])[0]
    if after is not None:
        ids = [i["id"] for i in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    page = items[:limit]
    return {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


def _handler_for(api: FakeBatchAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            path, query = url.path.rstrip("/"), parse_qs(url.query)
            parts = path.split("/")[2:]  # after /v1
            with api._lock:
                if parts == ["models"]:
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "fake"}],
                        },
                    )
                elif parts == ["files"]:
                    api.files_listed += 1
                    files = [
                        f["json"]
                        for f in reversed(api.files.values())
                        if "purpose" not in query or f["json"]["purpose"] == query["purpose"][0]
                    ]
                    self._send(200, _page(files, query))
                elif len(parts) == 2 and parts[0] == "files" and parts[1] in api.files:
                    self._send(200, api.files[parts[1]]["json"])
                elif len(parts) == 3 and parts[0] == "files" and parts[2] == "content" and parts[1] in api.files:
                    self._send_bytes(200, api.files[parts[1]]["content"], "application/octet-stream")
                elif parts == ["batches"]:
                    api.listed += 1
                    self._send(200, _page([api.batches[i].json() for i in reversed(api.created)], query))
                elif len(parts) == 2 and parts[0] == "batches" and api.fail_looks > 0:
                    api.fail_looks -= 1
                    self._send(503, _error("temporarily unavailable", "server_error"), {"retry-after-ms": "10"})
                elif len(parts) == 2 and parts[0] == "batches" and parts[1] in api.batches:
                    batch = api.batches[parts[1]]
                    api.looked_at.append(batch.id)
                    api._advance(batch)
                    self._send(200, batch.json())
                else:
                    self._send(404, _error(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length)
            path = urlsplit(self.path).path.rstrip("/")
            parts = path.split("/")[2:]
            if parts == ["chat", "completions"]:
                body = json.loads(data or b"{}")
                with api._lock:
                    api.chat_requests.append(body)
                    reply = api.chat_responder(body)
                if reply.status != 200:
                    self._send(reply.status, _error(reply.error_message, "fake_error"))
                else:
                    self._send(200, completion_json(reply, body))
                return
            with api._lock:
                if parts == ["files"] and api.upload_status != 200:
                    self._send(api.upload_status, _error("Incorrect API key provided", "invalid_request_error"))
                elif parts == ["files"]:
                    fields = _multipart(self.headers.get("Content-Type", ""), data)
                    if fields.get("purpose", (None, b""))[1] != b"batch" or "file" not in fields:
                        self._send(400, _error("expected a file with purpose batch"))
                        return
                    filename, content = fields["file"]
                    info = api._add_file(filename or "upload.jsonl", "batch", content)
                    api.uploads.append(info["id"])
                    self._send(200, info)
                elif parts == ["batches"]:
                    status, payload = api._create_batch(json.loads(data or b"{}"))
                    if api.lose_creations > 0 and status == 200:
                        api.lose_creations -= 1
                        self.close_connection = True  # no answer: the client sees the connection drop
                        return
                    self._send(status, payload)
                elif len(parts) == 3 and parts[0] == "batches" and parts[2] == "cancel" and parts[1] in api.batches:
                    batch = api.batches[parts[1]]
                    api.cancelled.append(batch.id)
                    if batch.status not in ("completed", "expired", "failed", "cancelled"):
                        batch.cancel_requested, batch.status = True, "cancelling"
                    self._send(200, batch.json())
                else:
                    self._send(404, _error(f"no route {self.path}", "not_found"))

        def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
            self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

        def _send_bytes(
            self, status: int, payload: bytes, content_type: str, headers: dict[str, str] | None = None
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def _multipart(content_type: str, data: bytes) -> dict[str, tuple[str | None, bytes]]:
    """name -> (filename, content) of a multipart/form-data body."""
    message = BytesParser(policy=default_policy).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + data)
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = str(part.get_param("name", header="content-disposition"))
        payload = part.get_payload(decode=True)
        fields[name] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return fields

"""The one way requests travel through the OpenAI Batch API, for any judge: the rubric judge
(`awbench.judging.llm.batch_judge`) and the two-choice questions (`awbench.judging.choice.senders`) hand the
runner their requests (`BatchRequest`: a custom_id the judge can read back, the chat-completions body, the cost
its `--max-cost` holds while the request is in flight) and read each ended batch's result lines back by
custom_id; the runner does everything between.

- Submitting (`submission`): requests go as JSONL lines `{"custom_id", "method": "POST", "url":
  "/v1/chat/completions", "body"}` into files under the API's limits (50,000 requests, 200 MB per file) and
  under the enqueued-token limit (`awbench.judging.batch.limit`); each file is one batch entry, recorded,
  uploaded (purpose `batch`) and created (completion window 24h), each step saved in batches.json before the
  next (`awbench.judging.batch.state`). An upload refused or unanswered leaves nothing behind.
- Resuming (`resume`): open batches none of whose requests is wanted any more are cancelled; an interrupted
  submission's file and batch are found again (`files.list`, `batches.list`), else uploaded or created now:
  never a second batch for one file.
- Waiting (`wait`): the open batches are polled until one ends. One refused for the enqueued-token limit is
  recorded so (nothing ran, no attempt spent: its requests go out again as room frees up); the others' output
  and error files are read (`lines`, `outcome` per line), and the judge marks each `collected` once it has
  kept what it read.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging import Notes
from awbench.judging.batch.api import ENDPOINT, TERMINAL, BatchAPI
from awbench.judging.batch.limit import EnqueuedLimit, refusal, too_large
from awbench.judging.batch.state import BatchEntry, BatchFiles
from awbench.judging.cost import Budget
from awbench.redact import redact
from awbench.transport.chat_client import (
    Completion,
    MalformedResponse,
    StatusError,
    encode,
    parse_json,
    read_completion,
)
from awbench.transport.endpoints import EndpointDown, FatalAPIError
from awbench.transport.rate_control import request_tokens

# The Batch API's limits (openai SDK, `batches.create`: "The file can contain up to 50,000 requests, and can
# be up to 200 MB in size"); files are kept under 190 MB, whether MB means 10^6 or 2^20 bytes.
MAX_REQUESTS_PER_BATCH = 50_000
MAX_FILE_BYTES = 190_000_000
QUEUED = "queued"  # `Submission.add`: in a batch
WAITING = "waiting"  # `Submission.add`: no room under the enqueued-token limit now


class Quiet:
    """Notes that go nowhere, until `bind` gives the run's."""

    def note(self, text: str) -> None:
        return None

    def warn(self, text: str) -> None:
        return None


@dataclass(frozen=True)
class BatchRequest:
    custom_id: str
    body: dict[str, Any]
    cost_usd: float = 0.0  # estimated, at the batch price: what --max-cost holds while the request is in flight


@dataclass(frozen=True)
class Ended:
    """A batch that ended, as the API describes it (`batch`)."""

    entry: BatchEntry
    batch: Any
    refused: bool  # for the enqueued-token limit: nothing ran, no attempt spent, its requests go out again


class NotRun(Exception):
    """A request its batch did not answer: the batch expired, failed or was cancelled first, or the error file
    says why. Transient: it is asked again."""


class BatchRunner:
    """One judge's batches. `key`: read when the SDK client is made (on first use)."""

    def __init__(self, judge_id: str, base_url: str | None, key: Callable[[], str], settings: JudgeSettings) -> None:
        self.judge_id = judge_id
        self.api = BatchAPI(judge_id, base_url, key, settings.request_timeout, settings.batch_poll_interval, Quiet())
        self.notes: Notes = Quiet()
        self.limit = EnqueuedLimit(settings.batch_tokens, judge_id)
        self.max_requests_per_batch = MAX_REQUESTS_PER_BATCH
        self.max_file_bytes = MAX_FILE_BYTES
        self._files: BatchFiles | None = None

    def bind(self, directory: Path, notes: Notes) -> None:
        """The batches are kept in the evaluation's directory."""
        self._files = BatchFiles(directory, self.judge_id)
        self.notes = self.api.notes = notes

    @property
    def files(self) -> BatchFiles:
        if self._files is None:
            raise RuntimeError("the Batch API runner needs its evaluation's directory (bind) before sending")
        return self._files

    async def aclose(self) -> None:
        await self.api.aclose()

    def token_limit(self) -> int | None:
        """The enqueued-token limit no request may pass alone (`EnqueuedLimit.value`)."""
        return self.limit.value(self.files)

    def token_budget(self) -> int | None:
        """What batches are enqueued with at most, by awbench's count (`EnqueuedLimit.budget`)."""
        return self.limit.budget(self.files)

    def holding(self) -> bool:
        """Whether new batches wait for one of ours in flight to end (after a refusal for the limit)."""
        return self.limit.holding(self.files)

    def open_entries(self) -> list[BatchEntry]:
        """The batches submitted and not ended (or not collected) yet."""
        return [e for e in self.files.state.batches if e.open and e.batch_id]

    # --- Resuming ------------------------------------------------------------------------------------------

    async def resume(self, wanted: Callable[[str], bool]) -> None:
        """batches.json read; then what an earlier run left open: batches of which no request (custom_id) is
        wanted now are cancelled, interrupted submissions finished."""
        self.files.load()
        await self._cancel_unwanted(wanted)
        await self._finish_submissions()

    async def _cancel_unwanted(self, wanted: Callable[[str], bool]) -> None:
        """Open batches none of whose requests is wanted now are cancelled (their answers would be thrown away);
        entries never submitted with nothing wanted are dropped."""
        changed = False
        for entry in self.files.state.batches:
            if not entry.open or any(wanted(cid) for cid in entry.custom_ids):
                continue
            if entry.batch_id is None and entry.file_id is not None and (found := await self.api.find_batch(entry)):
                entry.batch_id, entry.status = found.id, found.status
            if entry.batch_id is not None and entry.status not in TERMINAL:
                batch = await self.api.cancel(entry.batch_id)
                entry.status = batch.status
                self.notes.note(
                    f"judge {self.judge_id}: cancelled batch {entry.batch_id}: none of its requests is wanted any more"
                )
            entry.abandoned, changed = True, True
        if changed:
            self.files.save()

    async def _finish_submissions(self) -> None:
        """Entries an interruption left between the upload and the batch: find their file and batch again,
        else upload or create them now. Never a second batch for one file."""
        state = self.files.state
        for entry in [e for e in state.batches if e.open and e.batch_id is None]:
            if entry.file_id is None:
                file_id = await self.api.find_file(entry)
                if file_id is None:  # never uploaded: its requests go out again with the next submission
                    state.batches.remove(entry)
                    self.files.save()
                    continue
                entry.file_id, entry.status = file_id, "uploaded"
                self.files.save()
            batch = await self.api.find_batch(entry)
            if batch is None:
                batch = await self.api.create(entry)
            entry.batch_id, entry.status = batch.id, batch.status
            self.files.save()
            self.notes.note(
                f"judge {self.judge_id}: resumed the submission of batch {batch.id} ({len(entry.custom_ids)} requests)"
            )

    # --- Submitting ----------------------------------------------------------------------------------------

    @asynccontextmanager
    async def submission(self, budget: Budget | None = None) -> AsyncIterator[Submission]:
        """One round of submitting (`Submission.add` each request); the last file goes out at the end, and what
        was sent is said. After refusals with none of ours in flight, it begins with a wait that grows. `budget`
        holds the estimated cost of the batches in flight, this round's as they are added."""
        submission = Submission(self, budget or Budget(None))
        if not submission.holding:
            await self.limit.pause(self.api.poll_interval)
        yield submission
        await submission.close()

    async def create(self, lines: list[bytes], ids: list[str], cost: float, tokens: int) -> str:
        """Record the entry, upload its file, create its batch: each step saved before the next."""
        state = self.files.state
        entry = BatchEntry(token=uuid.uuid4().hex, custom_ids=ids, estimated_cost_usd=cost, tokens=tokens)
        state.batches.append(entry)
        self.files.save()
        try:
            uploaded = await self.api.upload(entry, b"".join(lines))
        except (FatalAPIError, EndpointDown):  # refused or unreachable: nothing was uploaded, nothing is left behind
            state.batches.remove(entry)
            self.files.save()
            raise
        entry.file_id, entry.status = uploaded.id, "uploaded"
        self.files.save()
        batch = await self.api.create(entry)
        entry.batch_id, entry.status = batch.id, batch.status
        self.files.save()
        return str(batch.id)

    # --- Waiting and collecting ----------------------------------------------------------------------------

    async def wait(self) -> list[Ended]:
        """Poll the open batches until at least one has ended. A refusal for the enqueued-token limit is recorded
        (EndpointDown after too many in a row, `EnqueuedLimit.refused`); another end than `completed` is said."""
        ended = []
        for entry, batch in await self.api.poll(self.open_entries(), self.files.save):
            entry.errors = [
                redact(f"{e.code}: {e.message}") for e in ((batch.errors.data or []) if batch.errors else [])
            ]
            messages = refusal(batch)
            if messages is not None:
                self.limit.refused(self.files, entry, messages, self.notes, self.api.poll_interval)
            else:
                self.limit.ended()
                if batch.status != "completed":
                    reason = "; ".join(entry.errors) or "no reason given"
                    self.notes.warn(
                        f"judge {self.judge_id}: batch {entry.batch_id} ended {batch.status} ({reason}); "
                        "its unanswered requests are asked again"
                    )
            ended.append(Ended(entry, batch, refused=messages is not None))
        return ended

    async def lines(self, ended: Ended) -> dict[str, dict[str, Any]]:
        """An ended batch's output and error files -> their lines by custom_id (a line that is not JSON left out)."""
        batch = ended.batch
        contents = [await self.api.download(f) for f in (batch.output_file_id, batch.error_file_id) if f]
        lines: dict[str, dict[str, Any]] = {}
        for content in contents:
            for raw in content.split(b"\n"):
                if raw.strip():
                    try:
                        line = parse_json(raw)
                    except MalformedResponse:
                        continue
                    if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
                        lines[line["custom_id"]] = line
        return lines

    def collected(self, ended: Ended) -> None:
        """The judge has kept what it read of the batch: it is done with."""
        ended.entry.collected, ended.entry.status = True, ended.batch.status
        self.files.save()


class Submission:
    """Requests added one by one go into files under the API's limits and the enqueued-token limit; each full
    file is submitted at once, the last when the submission closes. `budget` holds what --max-cost reserves
    for the batches in flight, this submission's included."""

    def __init__(self, runner: BatchRunner, budget: Budget) -> None:
        self.runner = runner
        self.budget = budget
        state = runner.files.state
        self.holding = runner.holding()
        self.limit = runner.token_limit()
        self.budget_tokens = runner.token_budget()
        self.enqueued = sum(e.tokens for e in state.batches if e.open)
        budget.reserved += sum(e.estimated_cost_usd for e in state.batches if e.open)
        self.sent = 0
        self.batch_ids: list[str] = []
        self._lines: list[bytes] = []
        self._ids: list[str] = []
        self._size, self._cost, self._tokens = 0, 0.0, 0

    async def add(self, request: BatchRequest) -> str:
        """QUEUED (in a batch), WAITING (no room under the enqueued-token limit now: offered again once a batch
        of ours has ended), or else why no batch can ever hold it (the request fails, not transiently)."""
        if self.holding:
            return WAITING
        counted = request_tokens(request.body)
        if self.limit is not None and counted > self.limit:
            return too_large(counted, self.limit)
        budget = self.budget_tokens
        if budget is not None and self.enqueued and self.enqueued + counted > budget:
            return WAITING  # a request alone goes whatever the budget: down to one a batch
        line = encode({"custom_id": request.custom_id, "method": "POST", "url": ENDPOINT, "body": request.body}) + b"\n"
        runner = self.runner
        if self._lines and (
            len(self._lines) >= runner.max_requests_per_batch or self._size + len(line) > runner.max_file_bytes
        ):
            await self._submit()
        self._lines.append(line)
        self._ids.append(request.custom_id)
        self._size += len(line)
        self._cost += request.cost_usd
        self._tokens += counted
        self.enqueued += counted
        self.budget.reserved += request.cost_usd
        self.sent += 1
        return QUEUED

    async def _submit(self) -> None:
        self.batch_ids.append(await self.runner.create(self._lines, self._ids, self._cost, self._tokens))
        self._lines, self._ids = [], []
        self._size, self._cost, self._tokens = 0, 0.0, 0

    async def close(self) -> None:
        if self._lines:
            await self._submit()
        if self.batch_ids:
            runner = self.runner
            limit = self.limit
            under = f", ~{self.enqueued:,} of the {limit:,} tokens the model may have enqueued" if limit else ""
            if self.budget_tokens is not None and self.budget_tokens != limit:
                under += f" (at most ~{self.budget_tokens:,} at once, as refusals taught)"
            runner.notes.note(
                f"judge {runner.judge_id}: sent {self.sent} requests in {len(self.batch_ids)} batch(es) of the OpenAI "
                f"Batch API ({', '.join(self.batch_ids)}{under}); results within 24 h, checked every "
                f"{runner.api.poll_interval:g} s. Interrupting is safe: the same command resumes these batches."
            )


def outcome(line: dict[str, Any] | None, entry: BatchEntry, status: str) -> Completion | Exception:
    """A request's result line (None: its batch ended `status` without it) as a direct call's outcome: the
    completion, or the error the call failed with (MalformedResponse, StatusError, or NotRun), which the judge
    reads by its own error rules."""
    response = line.get("response") if line else None
    if isinstance(response, dict) and response.get("status_code") == 200:
        try:
            return read_completion(response.get("body"))
        except MalformedResponse as malformed:
            return malformed
    if isinstance(response, dict):
        return _status_error(response)
    error = line.get("error") if line else None
    if isinstance(error, dict):
        why = f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
    else:
        why = f"no answer: the batch ended {status}" + (f" ({'; '.join(entry.errors)})" if entry.errors else "")
    return NotRun(redact(f"batch {entry.batch_id}: {why}")[:500])


def _status_error(response: dict[str, Any]) -> StatusError:
    body = response.get("body")
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = response.get("status_code")
    return StatusError(
        status if isinstance(status, int) else 500,
        str(message or body or f"status {status}"),
        str(code) if code is not None else None,
    )

"""The OpenAI Batch API as the batch judge uses it: submitting a batch entry (upload its file, create its
batch, each step saved before the next), finding what an interrupted submission made, polling, cancelling
and downloading, every call retried with backoff. Through the openai SDK, imported on first use."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from awbench.judging import Notes
from awbench.judging.batch.state import BatchEntry
from awbench.redact import redact
from awbench.transport.chat_client import DEFAULT_BASE_URL
from awbench.transport.endpoints import FATAL_STATUS, EndpointDown, FatalAPIError, backoff_seconds

T = TypeVar("T")

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
FILE_PREFIX = "awbench-"
TERMINAL = frozenset({"completed", "expired", "failed", "cancelled"})
LOOKBACK_S = 3600.0  # looking for a lost file or batch: back to this long before our entry was made (clock skew)
API_ATTEMPTS = 8  # per Batch API call (the SDK retries twice more inside each), backing off up to a minute
POLL_ATTEMPTS = 60  # looking at a batch while waiting: an outage of most of an hour is waited out
NOTE_EVERY_S = 60.0  # counts that change within one status are noted at most this often
TOKEN_LIMIT_CODE = "token_limit_exceeded"  # a batch refused: the model's enqueued tokens would pass the limit
# OpenAI's refusal states the limit: "Enqueued token limit reached for gpt-... in organization org-....
# Limit: 90,000 enqueued tokens. Please try again once some in_progress batches have been completed."
_STATED_LIMIT = re.compile(r"Limit:\s*(\d[\d,]*)\s*enqueued tokens", re.IGNORECASE)


class BatchAPI:
    """One judge's client of the Batch API. `key`: read when the SDK client is made (on first use)."""

    def __init__(
        self,
        judge_id: str,
        base_url: str | None,
        key: Callable[[], str],
        timeout: float,
        poll_interval: float,
        notes: Notes,
    ) -> None:
        self.judge_id = judge_id
        self.poll_interval = poll_interval
        self.retry_base_s = 1.0  # the first wait before trying a Batch API call again (at most; doubling)
        self.notes = notes
        self._base_url, self._key, self._timeout = base_url, key, timeout
        self._sdk: Any = None

    @property
    def sdk(self) -> Any:
        """The openai SDK's client, made on first use (importing the SDK takes about a second)."""
        if self._sdk is None:
            import openai

            self._sdk = openai.AsyncOpenAI(
                api_key=self._key(), base_url=self._base_url or DEFAULT_BASE_URL, timeout=self._timeout, max_retries=2
            )
        return self._sdk

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

    # --- Submitting ----------------------------------------------------------------------------------------

    async def upload(self, entry: BatchEntry, data: bytes) -> Any:
        name = f"{FILE_PREFIX}{entry.token}.jsonl"
        return await self._api(
            lambda: self.sdk.files.create(file=(name, data, "application/jsonl"), purpose="batch"),
            "upload a batch file",
        )

    async def create(self, entry: BatchEntry) -> Any:
        """A batch for the entry's file. The API takes no idempotency key, so a creation whose answer was lost
        (a dropped connection, a timeout, a 5xx) is looked for before it is tried again: never two batches for
        one file. (The SDK's own retries are off for this call, for the same reason.)"""
        metadata = {"awbench_token": entry.token, "awbench_judge": self.judge_id[:512]}

        def create() -> Awaitable[Any]:
            return self.sdk.with_options(max_retries=0).batches.create(
                input_file_id=entry.file_id, endpoint=ENDPOINT, completion_window=COMPLETION_WINDOW, metadata=metadata
            )

        return await self._api(create, "create a batch", made_meanwhile=lambda: self._search_batch(entry))

    async def find_file(self, entry: BatchEntry) -> str | None:
        """The file an interrupted submission may have uploaded before saving its id."""
        name, bound = f"{FILE_PREFIX}{entry.token}.jsonl", entry.created_at - LOOKBACK_S

        async def find() -> str | None:
            async for file in self.sdk.files.list(purpose="batch"):
                if file.filename == name:
                    return file.id
                if file.created_at < bound:
                    return None
            return None

        return await self._api(find, "list the batch files")

    async def find_batch(self, entry: BatchEntry) -> Any:
        """The batch an interrupted submission may have created before saving its id."""
        return await self._api(lambda: self._search_batch(entry), "list the batches")

    async def _search_batch(self, entry: BatchEntry) -> Any:
        """Newest first, back to a little before the entry was made: the batch made from its file, if any."""
        bound = entry.created_at - LOOKBACK_S
        async for batch in self.sdk.batches.list(limit=100):
            if batch.input_file_id == entry.file_id or (batch.metadata or {}).get("awbench_token") == entry.token:
                return batch
            if batch.created_at < bound:
                return None
        return None

    async def cancel(self, batch_id: str) -> Any:
        return await self._api(lambda: self.sdk.batches.cancel(batch_id), "cancel a batch")

    # --- Polling and downloading ---------------------------------------------------------------------------

    async def poll(self, entries: list[BatchEntry], save: Callable[[], None]) -> list[tuple[BatchEntry, Any]]:
        """Look at the open batches until at least one has ended; each entry's status and counts kept up to
        date (`save` after a change). Returns the ended ones, with the batch as the API describes it."""
        last_note: dict[str, float] = {}
        while True:
            ended = []
            for number, entry in enumerate(entries, start=1):
                batch = await self._api(
                    lambda: self.sdk.batches.retrieve(entry.batch_id),  # noqa: B023 (awaited here)
                    "look at a batch",
                    attempts=POLL_ATTEMPTS,
                )
                counts = batch.request_counts
                new_counts = (
                    {"total": counts.total, "completed": counts.completed, "failed": counts.failed} if counts else {}
                )
                status_changed = batch.status != entry.status
                if status_changed or (
                    new_counts != entry.counts and time.monotonic() - last_note.get(entry.token, 0.0) >= NOTE_EVERY_S
                ):
                    self.notes.note(self._describe(entry, batch.status, new_counts, number, len(entries)))
                    last_note[entry.token] = time.monotonic()
                if status_changed or new_counts != entry.counts:
                    entry.status, entry.counts = batch.status, new_counts
                    save()
                if batch.status in TERMINAL:
                    ended.append((entry, batch))
            if ended:
                return ended
            await asyncio.sleep(self.poll_interval)

    def _describe(self, entry: BatchEntry, status: str, counts: dict[str, int], number: int, of: int) -> str:
        done = f", {counts.get('completed', 0)} of {counts.get('total', len(entry.custom_ids))} done" if counts else ""
        failed = f", {counts['failed']} failed" if counts.get("failed") else ""
        return f"judge {self.judge_id}: batch {entry.batch_id} ({number} of {of}): {status}{done}{failed}"

    async def download(self, file_id: str) -> bytes:
        content = await self._api(lambda: self.sdk.files.content(file_id), "download a batch's results")
        return bytes(content.content)

    # --- Every call ----------------------------------------------------------------------------------------

    async def _api(
        self,
        call: Callable[[], Awaitable[T]],
        what: str,
        attempts: int = API_ATTEMPTS,
        made_meanwhile: Callable[[], Awaitable[T | None]] | None = None,
    ) -> T:
        """One Batch API call. 429, 5xx, timeouts and connection errors are tried again with backoff (a wait of
        hours should outlast a network blip); 400/401/403/404 stop the run with the server's message.
        `made_meanwhile`: before trying again, whether the failed call took effect after all."""
        import openai

        for attempt in range(1, attempts + 1):
            try:
                return await call()
            except openai.APIStatusError as error:
                message = redact(f"HTTP {error.status_code}: {_sdk_message(error)}")
                if error.status_code in FATAL_STATUS or not (error.status_code == 429 or error.status_code >= 500):
                    raise FatalAPIError(f"the Batch API refused to {what}: {message}") from None
            except (openai.APIConnectionError, openai.APITimeoutError) as error:
                message = redact(f"{type(error).__name__}: {error}")
            if made_meanwhile is not None:
                try:
                    found = await made_meanwhile()
                except (openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError):
                    found = None
                if found is not None:
                    return found
            if attempt == attempts:
                raise EndpointDown(
                    f"the Batch API did not answer when asked to {what}: {message}; "
                    "the run is resumable: run the same command again"
                )
            self.notes.warn(f"judge {self.judge_id}: could not {what} ({message}); trying again")
            await asyncio.sleep(backoff_seconds(attempt, base=self.retry_base_s, cap=60.0))
        raise AssertionError("unreachable")


def _sdk_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))


def stated_limit(message: str) -> int | None:
    """The enqueued-token limit a `token_limit_exceeded` message states, if it does."""
    found = _STATED_LIMIT.search(message)
    return int(found.group(1).replace(",", "")) if found else None

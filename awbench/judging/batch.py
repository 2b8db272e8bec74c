"""The LLM judge through the OpenAI Batch API (`--judge-batch`): half the price, results within 24 hours.

The Batch API is how the calls travel, not what they are: the requests are the direct judge's bodies
(`LLMJudge._request_body`: the same messages, seeds, token limit and response format), and the judge has the
direct judge's id and verdict cache keys, so verdicts made either way mix in one evaluation and resume each
other. The judge collects its requests until the feed closes (in a pipelined `awbench run`, when inference is
done), writes them as JSONL lines `{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`
split under the API's limits (50,000 requests, 200 MB per file), uploads each file (purpose `batch`),
creates a batch for it (completion window 24h), polls, and downloads the output and error files.

Each verdict keeps the direct judge's budget of 1 + max_retries attempts. An attempt is one line of a batch,
named by its custom_id `{sample key}|{generation}|{verdict index}|{attempt}|{cache key prefix}`, with the
seed the direct judge gives that attempt. An answer that is unusable (no verdict, partial, truncated), a
request that failed transiently (429, 5xx, a malformed body) or never ran (the batch expired, failed or was
cancelled) uses an attempt and is asked again: in a new batch, or with `batch_fallback="direct"` through the
chat endpoint at the full price, by the direct judge's own loop for the rest of the budget.

Resuming. Everything needed to go on is in the evaluation's directory, written before the next step:
`batches.json` (atomically replaced) lists every batch entry with its custom_ids, our token, the uploaded
file's id and the batch's id, each saved as soon as it exists; `batch_answers.jsonl` holds each attempt's
parsed answer as it is downloaded (appended before its batch is marked collected). A crash or Ctrl-C while
waiting leaves them on disk, and the next run of the same command polls the same batches. The token names
the uploaded file (`awbench-{token}.jsonl`) and goes into the batch's metadata, so a crash between the upload
and saving its file id finds the file again (`files.list`), and a crash between creating the batch and
saving its id finds the batch again (`batches.list`, by input file id or token): a batch is never submitted
twice. A batch of which no request is wanted any more (judged directly meanwhile, or for other inputs) is
cancelled.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from awbench.config import JudgeSettings
from awbench.files import JsonlTable, read_json, write_atomic
from awbench.judging import BudgetExhausted
from awbench.judging.cost import (
    OUTPUT_TOKENS_PER_VERDICT,
    CostEstimate,
    Price,
    batch_price,
    call_cost,
    estimate_prompt_tokens,
    tokens_for_chars,
    usage_cost,
)
from awbench.judging.llm import LLMJudge, Messages, require_key
from awbench.judging.prompts import PromptSet, render_messages
from awbench.judging.verdicts import add_usage, better, combine, settled, verdict_record
from awbench.records import JudgeRequest, JudgmentRecord, Usage, VerdictRecord
from awbench.redact import redact
from awbench.transport.chat_client import (
    DEFAULT_BASE_URL,
    MalformedResponse,
    StatusError,
    encode,
    parse_json,
    read_completion,
)
from awbench.transport.openai_client import (
    FATAL_STATUS,
    EndpointDown,
    Endpoints,
    FatalAPIError,
    backoff_seconds,
)

T = TypeVar("T")
GenKey = tuple[str, int]

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# The Batch API's limits (openai SDK, `batches.create`: "The file can contain up to 50,000 requests, and can
# be up to 200 MB in size"); files are kept under 190 MB, whether MB means 10^6 or 2^20 bytes.
MAX_REQUESTS_PER_BATCH = 50_000
MAX_FILE_BYTES = 190_000_000
STATE_FILE = "batches.json"
ANSWERS_FILE = "batch_answers.jsonl"
FILE_PREFIX = "awbench-"
DIRECT_SUFFIX = "|direct"  # a verdict finished by direct re-asks (batch_fallback="direct")
RECORDED_SUFFIX = "|recorded"  # a request whose judgment was recorded
TERMINAL = frozenset({"completed", "expired", "failed", "cancelled"})
LOOKBACK_S = 3600.0  # looking for a lost file or batch: back to this long before our entry was made (clock skew)
API_ATTEMPTS = 8  # per Batch API call (the SDK retries twice more inside each), backing off up to a minute
POLL_ATTEMPTS = 60  # looking at a batch while waiting: an outage of most of an hour is waited out
NOTE_EVERY_S = 60.0  # counts that change within one status are noted at most this often


class BatchEntry(BaseModel):
    """One batch: what it asks, and how far its submission went."""

    token: str  # ours: names the uploaded file and is in the batch's metadata
    custom_ids: list[str]
    estimated_cost_usd: float = 0.0  # of its requests, at the batch price (what --max-cost reserves)
    created_at: float = Field(default_factory=time.time)
    file_id: str | None = None
    batch_id: str | None = None
    status: str = "preparing"  # preparing, uploaded, then the batch's own status
    counts: dict[str, int] = Field(default_factory=dict)
    collected: bool = False  # its output and error files are read (or it ended without any)
    abandoned: bool = False  # none of its requests was wanted any more: cancelled, never read
    errors: list[str] = Field(default_factory=list)  # a failed batch's reasons

    @property
    def open(self) -> bool:
        return not self.collected and not self.abandoned


class BatchState(BaseModel):
    """batches.json"""

    schema_version: int = 1
    judge_id: str
    batches: list[BatchEntry] = Field(default_factory=list)


class BatchAnswer(BaseModel):
    """One attempt's answer, as parsed from a batch's output or error file. `final`: the outcome of re-asks sent
    directly (`batch_fallback="direct"`), with the attempts, usage and cost of the whole verdict."""

    custom_id: str
    batch_id: str | None = None
    verdict: VerdictRecord | None = None  # None: `recorded`
    cost_usd: float = 0.0
    final: bool = False
    # The request's judgment was recorded: the answers above this line are spent. When the same request is
    # offered again (a judgment that failed transiently), its verdicts start afresh, as the direct judge's do.
    recorded: bool = False


def custom_id(cache_key: str, key: str, generation: int, index: int, attempt: int) -> str:
    return f"{key}|{generation}|{index}|{attempt}|{cache_key[:16]}"


def parse_custom_id(text: str) -> tuple[str, int, int, int, str] | None:
    """(sample key, generation, verdict index, attempt, cache key prefix); None for what is not ours."""
    parts = text.rsplit("|", 4)
    if len(parts) != 5:
        return None
    key, generation, index, attempt, prefix = parts
    try:
        return key, int(generation), int(index), int(attempt), prefix
    except ValueError:
        return None


def pending_batches(directory: Path) -> int:
    """How many batches recorded in an evaluation's directory are still open (submitted, not collected)."""
    path = directory / STATE_FILE
    if not path.exists():
        return 0
    try:
        state = BatchState.model_validate(read_json(path))
    except Exception:
        return 0
    return sum(1 for e in state.batches if e.open and e.file_id is not None)


def bind_run(judge: Any, directory: Path, progress: Any) -> None:
    """Called by the pipeline for each judge of a run: a batch judge keeps its batches in `directory` (the
    evaluation's, `judges/<judge id>/`) and reports through `progress`; a direct LLM judge of an evaluation
    with batches still open is warned that it does not wait for them."""
    if isinstance(judge, BatchJudge):
        judge.bind(directory, progress)
    elif getattr(judge, "kind", None) == "llm" and (open_ := pending_batches(directory)):
        progress.warn(f"judge {judge.id}: {open_} batch(es) of an earlier --judge-batch run are still open in "
                      f"{directory / STATE_FILE}; these direct calls do not wait for them (add --judge-batch to collect them)")


class _Quiet:
    def note(self, text: str) -> None:
        return None

    def warn(self, text: str) -> None:
        return None


@dataclass
class _Verdict:
    """One verdict of one request: its attempts answered and in flight."""

    index: int
    answers: dict[int, BatchAnswer] = field(default_factory=dict)  # attempt -> answer
    in_flight: set[int] = field(default_factory=set)
    final_answer: BatchAnswer | None = None

    def attempts(self) -> int:
        return max([*self.answers, *self.in_flight, 0])

    def best(self) -> VerdictRecord | None:
        best = None
        for attempt in sorted(self.answers):
            best = better(best, self.answers[attempt].verdict)
        return best

    def done(self, budget: int) -> bool:
        """As the direct judge stops: a complete answer, an error that retrying cannot fix, or no budget left."""
        if self.final_answer is not None:
            return True
        if self.in_flight:
            return False
        verdicts = [a.verdict for a in self.answers.values()]
        best = self.best()
        if (best is not None and settled(best, self.attempts())) or any(v.status == "error" and not v.transient for v in verdicts):
            return True
        return self.attempts() >= budget

    def usage(self) -> Usage:
        usage = Usage()
        for answer in self.answers.values():
            usage = add_usage(usage, answer.verdict.usage)
        return usage

    def cost(self) -> float:
        return sum(a.cost_usd for a in self.answers.values())

    def outcome(self) -> tuple[VerdictRecord, float]:
        if self.final_answer is not None:
            return self.final_answer.verdict, self.final_answer.cost_usd
        best = self.best()
        assert best is not None
        return best.model_copy(update={"attempts": self.attempts(), "usage": self.usage()}), self.cost()


@dataclass
class _Item:
    request: JudgeRequest
    cache_key: str
    verdicts: list[_Verdict]
    yielded: bool = False
    prompt_tokens: int | None = None  # estimated, once rendered

    def fresh(self) -> bool:
        return not any(v.answers or v.in_flight or v.final_answer for v in self.verdicts)


class BatchJudge(LLMJudge):
    """The LLM judge, its calls sent as batches. Same id, cache keys, description and requests as LLMJudge;
    `price` stays the list price (direct re-asks pay it), `batch_price` is half of it."""

    def __init__(self, settings: JudgeSettings, prompt_set: PromptSet, price: Price | None, endpoints: Endpoints) -> None:
        super().__init__(settings, prompt_set, price, endpoints)
        self.batch_price = batch_price(price) if price is not None else None
        self.poll_interval = settings.batch_poll_interval
        self.max_requests_per_batch = MAX_REQUESTS_PER_BATCH
        self.max_file_bytes = MAX_FILE_BYTES
        self.retry_base_s = 1.0  # the first wait before trying a Batch API call again (at most; doubling)
        self._directory: Path | None = None
        self._progress: Any = _Quiet()
        self._sdk: Any = None
        self._state: BatchState | None = None
        self._items: dict[GenKey, _Item] = {}
        self._hold = False  # a batch was refused for the enqueued-token limit: submit again after one ends

    # --- The judge protocol ---------------------------------------------------------------------------------

    def bind(self, directory: Path, progress: Any) -> None:
        self._directory, self._progress = directory, progress

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """As the direct judge's, priced at the Batch API's rate."""
        estimate = super().estimate(requests)
        cost = usage_cost(self.batch_price, estimate.prompt_tokens, estimate.completion_tokens) if self.batch_price else None
        return estimate.model_copy(update={"cost_usd": cost})

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
        await super().aclose()

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Take every request (until the feed closes), then submit, poll and collect; yield each prediction's
        record once all its verdicts are final. With `max_cost`, no new prediction is submitted once the spend
        so far, plus the estimates of the batches in flight and of this one, would pass the cap: what is in
        flight is collected and yielded, then BudgetExhausted is raised."""
        if self._directory is None:
            raise RuntimeError("a batch judge needs its evaluation's directory (bind) before judging")
        async for request in requests:
            key = self.cache_key(request)
            verdicts = [_Verdict(i) for i in range(self.settings.samples)]
            self._items[(request.key, request.generation)] = _Item(request, key, verdicts)
        self._state = self._load_state()
        self._restore_answers()
        stopped = False
        await self._settle_stale()
        while True:
            records = self._finished()  # on the first round, those answered before an interruption
            for record in records:
                yield record
            self._mark_recorded(records)
            await self._finish_submissions()
            stopped = await self._submit_new(stopped) or stopped
            if self.settings.batch_fallback == "direct":
                await self._reask_directly()
                records = self._finished()
                for record in records:
                    yield record
                self._mark_recorded(records)
            open_entries = [e for e in self._state.batches if e.open and e.batch_id]
            if not open_entries:  # everything was answered, or the cap keeps the rest back
                break
            await self._wait_for_one(open_entries)
        records = self._finished()
        for record in records:
            yield record
        self._mark_recorded(records)
        if stopped:
            raise BudgetExhausted(
                f"judge spend would pass the cap: spent ${self._spent():.4f} of --max-cost ${self.settings.max_cost:.4f}"
            )

    # --- State ---------------------------------------------------------------------------------------------

    @property
    def _state_path(self) -> Path:
        assert self._directory is not None
        return self._directory / STATE_FILE

    @property
    def _answers(self) -> JsonlTable[BatchAnswer]:
        assert self._directory is not None
        return JsonlTable(self._directory / ANSWERS_FILE, BatchAnswer, lambda a: a.custom_id)

    def _read_answers(self) -> list[BatchAnswer]:
        """Every line of batch_answers.jsonl in order (a torn last line, from a crash mid-write, left out)."""
        try:
            data = self._answers.path.read_bytes()
        except FileNotFoundError:
            return []
        return [BatchAnswer.model_validate_json(line) for line in data.split(b"\n")[:-1] if line.strip()]

    def _mark_recorded(self, records: list[JudgmentRecord]) -> None:
        """After the consumer took these records (and saved them): their answers are spent."""
        items = [self._items[(r.key, r.generation)] for r in records]
        if not items:
            return
        with self._answers.appender() as append:
            for item in items:
                cid = custom_id(item.cache_key, item.request.key, item.request.generation, 0, 0) + RECORDED_SUFFIX
                append(BatchAnswer(custom_id=cid, recorded=True))

    def _load_state(self) -> BatchState:
        if self._state_path.exists():
            return BatchState.model_validate(read_json(self._state_path))
        return BatchState(judge_id=self.id)

    def _save(self) -> None:
        """batches.json, atomically. With no batch in it, none: an evaluation whose first upload failed leaves no
        file behind (nor its directory, when nothing else is in it)."""
        assert self._state is not None and self._directory is not None
        if not self._state.batches:
            self._state_path.unlink(missing_ok=True)
            if self._directory.is_dir() and not any(self._directory.iterdir()):
                self._directory.rmdir()
            return
        self._directory.mkdir(parents=True, exist_ok=True)
        write_atomic(self._state_path, self._state.model_dump_json(indent=1) + "\n")

    def _lookup(self, cid: str) -> tuple[_Item, _Verdict, int] | None:
        """The current request's verdict and attempt a custom_id stands for; None when it is not wanted now."""
        parsed = parse_custom_id(cid)
        if parsed is None:
            return None
        key, generation, index, attempt, prefix = parsed
        item = self._items.get((key, generation))
        if item is None or not item.cache_key.startswith(prefix) or not 0 <= index < len(item.verdicts):
            return None
        return item, item.verdicts[index], attempt

    def _restore_answers(self) -> None:
        """What earlier runs of this evaluation asked and were answered, for the requests wanted now."""
        assert self._state is not None
        for answer in self._read_answers():
            found = self._lookup(answer.custom_id.removesuffix(DIRECT_SUFFIX).removesuffix(RECORDED_SUFFIX))
            if found is None:
                continue
            item, verdict, attempt = found
            if answer.recorded:
                item.verdicts = [_Verdict(v.index) for v in item.verdicts]
            elif answer.final:
                verdict.final_answer = answer
            else:
                verdict.answers[attempt] = answer
        for entry in self._state.batches:
            if entry.open and entry.file_id is not None:
                for cid in entry.custom_ids:
                    found = self._lookup(cid)
                    if found is not None and found[2] not in found[1].answers:
                        found[1].in_flight.add(found[2])

    def _finished(self) -> list[JudgmentRecord]:
        budget = self.settings.max_retries + 1
        records = []
        for item in self._items.values():
            if item.yielded or not all(v.done(budget) for v in item.verdicts):
                continue
            outcomes = [v.outcome() for v in item.verdicts]
            cost = sum(c for _, c in outcomes) if self.price else None
            self.spent_usd += cost or 0.0
            item.yielded = True
            records.append(combine(item.request, item.cache_key, [v for v, _ in outcomes], cost))
        return records

    def _needing_attempt(self) -> list[tuple[_Item, _Verdict]]:
        budget = self.settings.max_retries + 1
        return [(item, v) for item in self._items.values() if not item.yielded
                for v in item.verdicts if not v.done(budget) and not v.in_flight]

    def _spent(self) -> float:
        """Recorded spend (`spent_usd`: earlier records and those yielded) and answers not yet recorded."""
        pending = sum(v.final_answer.cost_usd if v.final_answer else v.cost()  # a final answer's cost is the whole verdict's
                      for item in self._items.values() if not item.yielded for v in item.verdicts)
        return self.spent_usd + pending

    # --- Submitting ----------------------------------------------------------------------------------------

    async def _settle_stale(self) -> None:
        """Open batches none of whose requests is wanted now are cancelled (their answers would be thrown away);
        entries never submitted with nothing wanted are dropped."""
        assert self._state is not None
        changed = False
        for entry in self._state.batches:
            if not entry.open or any(self._lookup(cid) is not None for cid in entry.custom_ids):
                continue
            if entry.batch_id is None and entry.file_id is not None and (found := await self._find_batch(entry)):
                entry.batch_id, entry.status = found.id, found.status
            if entry.batch_id is not None and entry.status not in TERMINAL:
                batch = await self._api(lambda: self.sdk.batches.cancel(entry.batch_id), "cancel a batch")
                entry.status = batch.status
                self._progress.note(f"judge {self.id}: cancelled batch {entry.batch_id}: none of its requests is "
                                    "wanted any more")
            entry.abandoned, changed = True, True
        if changed:
            self._save()

    async def _finish_submissions(self) -> None:
        """Entries an interruption left between the upload and the batch: find their file and batch again,
        else upload or create them now. Never a second batch for one file."""
        assert self._state is not None
        for entry in [e for e in self._state.batches if e.open and e.batch_id is None]:
            if entry.file_id is None:
                file_id = await self._find_file(entry)
                if file_id is None:  # never uploaded: its requests go out again with the next submission
                    self._drop(entry)
                    continue
                entry.file_id, entry.status = file_id, "uploaded"
                self._save()
                for cid in entry.custom_ids:
                    if (found := self._lookup(cid)) is not None:
                        found[1].in_flight.add(found[2])
            batch = await self._find_batch(entry)
            if batch is None:
                batch = await self._create(entry)
            entry.batch_id, entry.status = batch.id, batch.status
            self._save()
            self._progress.note(f"judge {self.id}: resumed the submission of batch {batch.id} ({len(entry.custom_ids)} requests)")

    def _drop(self, entry: BatchEntry) -> None:
        assert self._state is not None
        self._state.batches.remove(entry)
        self._save()
        for cid in entry.custom_ids:
            if (found := self._lookup(cid)) is not None:
                found[1].in_flight.discard(found[2])

    async def _submit_new(self, stopped: bool) -> bool:
        """Submit every verdict that needs an attempt (first ones, and re-asks unless they go directly), in
        files under the API's limits. Returns whether the cap stopped new predictions."""
        if self._hold and self._state and any(e.open and e.batch_id for e in self._state.batches):
            return False  # the enqueued-token limit: wait for a batch of ours to end
        self._hold = False
        direct_reasks = self.settings.batch_fallback == "direct"
        wanted: dict[GenKey, list[_Verdict]] = {}
        for item, verdict in self._needing_attempt():
            if direct_reasks and verdict.attempts() > 0:
                continue
            wanted.setdefault((item.request.key, item.request.generation), []).append(verdict)
        if not wanted:
            return False
        cap = self.settings.max_cost
        reserved = sum(e.estimated_cost_usd for e in self._state.batches if e.open) if self._state else 0.0
        chunk: list[bytes] = []
        ids: list[str] = []
        size, estimate, sent, batches = 0, 0.0, 0, []
        hit_cap = False
        for gen_key, verdicts in wanted.items():
            item = self._items[gen_key]
            if item.fresh() and (stopped or hit_cap):
                continue
            messages = render_messages(self.prompt_set, item.request)
            item.prompt_tokens = estimate_prompt_tokens(messages)
            each = usage_cost(self.batch_price, item.prompt_tokens, OUTPUT_TOKENS_PER_VERDICT) if self.batch_price else 0.0
            if cap is not None and item.fresh() and self._spent() + reserved + estimate + each * self.settings.samples > cap:
                hit_cap = True
                continue
            for verdict in verdicts:
                attempt = verdict.attempts() + 1
                cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, attempt)
                body = self._request_body(messages, self.seed(item.cache_key, verdict.index, attempt))
                line = encode({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body}) + b"\n"
                if chunk and (len(chunk) >= self.max_requests_per_batch or size + len(line) > self.max_file_bytes):
                    batches.append(await self._submit(chunk, ids, estimate))
                    reserved += estimate
                    chunk, ids, size, estimate = [], [], 0, 0.0
                chunk.append(line)
                ids.append(cid)
                size += len(line)
                estimate += each
                verdict.in_flight.add(attempt)
                sent += 1
        if chunk:
            batches.append(await self._submit(chunk, ids, estimate))
        if batches:
            self._progress.note(
                f"judge {self.id}: sent {sent} requests in {len(batches)} batch(es) of the OpenAI Batch API "
                f"({', '.join(batches)}); results within 24 h, checked every {self.poll_interval:g} s. "
                "Interrupting is safe: the same command resumes these batches."
            )
        return hit_cap

    async def _submit(self, lines: list[bytes], ids: list[str], estimate: float) -> str:
        """Record the entry, upload its file, create its batch: each step saved before the next."""
        assert self._state is not None
        entry = BatchEntry(token=uuid.uuid4().hex, custom_ids=ids, estimated_cost_usd=estimate)
        self._state.batches.append(entry)
        self._save()
        try:
            uploaded = await self._upload(entry, b"".join(lines))
        except (FatalAPIError, EndpointDown):  # refused or unreachable: nothing was uploaded, nothing is left behind
            self._state.batches.remove(entry)
            self._save()
            raise
        entry.file_id, entry.status = uploaded.id, "uploaded"
        self._save()
        batch = await self._create(entry)
        entry.batch_id, entry.status = batch.id, batch.status
        self._save()
        return batch.id

    async def _upload(self, entry: BatchEntry, data: bytes) -> Any:
        name = f"{FILE_PREFIX}{entry.token}.jsonl"
        return await self._api(lambda: self.sdk.files.create(file=(name, data, "application/jsonl"), purpose="batch"),
                               "upload a batch file")

    async def _create(self, entry: BatchEntry) -> Any:
        """A batch for the entry's file. The API takes no idempotency key, so a creation whose answer was lost
        (a dropped connection, a timeout, a 5xx) is looked for before it is tried again: never two batches for
        one file. (The SDK's own retries are off for this call, for the same reason.)"""
        metadata = {"awbench_token": entry.token, "awbench_judge": self.id[:512]}

        def create() -> Awaitable[Any]:
            return self.sdk.with_options(max_retries=0).batches.create(
                input_file_id=entry.file_id, endpoint=ENDPOINT, completion_window=COMPLETION_WINDOW, metadata=metadata)

        return await self._api(create, "create a batch", made_meanwhile=lambda: self._search_batch(entry))

    async def _find_file(self, entry: BatchEntry) -> str | None:
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

    async def _find_batch(self, entry: BatchEntry) -> Any:
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

    # --- Waiting and collecting ----------------------------------------------------------------------------

    async def _wait_for_one(self, entries: list[BatchEntry]) -> None:
        """Poll the open batches until at least one has ended; collect those that have."""
        last_note: dict[str, float] = {}
        while True:
            ended = []
            for number, entry in enumerate(entries, start=1):
                batch = await self._api(lambda: self.sdk.batches.retrieve(entry.batch_id), "look at a batch",
                                        attempts=POLL_ATTEMPTS)
                counts = batch.request_counts
                new_counts = {"total": counts.total, "completed": counts.completed, "failed": counts.failed} if counts else {}
                status_changed = batch.status != entry.status
                if status_changed or (new_counts != entry.counts and time.monotonic() - last_note.get(entry.token, 0.0) >= NOTE_EVERY_S):
                    self._progress.note(self._describe(entry, batch.status, new_counts, number, len(entries)))
                    last_note[entry.token] = time.monotonic()
                if status_changed or new_counts != entry.counts:
                    entry.status, entry.counts = batch.status, new_counts
                    self._save()
                if batch.status in TERMINAL:
                    ended.append((entry, batch))
            if ended:
                fatal: FatalAPIError | None = None
                for entry, batch in ended:
                    try:
                        await self._collect(entry, batch)
                    except FatalAPIError as error:
                        fatal = fatal or error
                if fatal is not None:
                    raise fatal
                return
            await asyncio.sleep(self.poll_interval)

    def _describe(self, entry: BatchEntry, status: str, counts: dict[str, int], number: int, of: int) -> str:
        done = f", {counts.get('completed', 0)} of {counts.get('total', len(entry.custom_ids))} done" if counts else ""
        failed = f", {counts['failed']} failed" if counts.get("failed") else ""
        return f"judge {self.id}: batch {entry.batch_id} ({number} of {of}): {status}{done}{failed}"

    async def _collect(self, entry: BatchEntry, batch: Any) -> None:
        """Read a finished batch's output and error files; record every attempt's answer (requests without one
        never ran: the batch expired, failed or was cancelled), then mark the batch collected."""
        lines: dict[str, dict[str, Any]] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await self._api(lambda: self.sdk.files.content(file_id), "download a batch's results")
                for raw in content.content.split(b"\n"):
                    if raw.strip():
                        try:
                            line = parse_json(raw)
                        except MalformedResponse:
                            continue
                        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
                            lines[line["custom_id"]] = line
        codes = [e.code for e in ((batch.errors.data or []) if batch.errors else [])]
        errors = [f"{e.code}: {e.message}" for e in ((batch.errors.data or []) if batch.errors else [])]
        entry.errors = [redact(e) for e in errors]
        others = [e for e in self._state.batches if e.open and e.batch_id and e is not entry] if self._state else []
        if batch.status == "failed" and codes and all(c == "token_limit_exceeded" for c in codes) and others:
            # Over the organisation's limit of tokens enqueued at once: no attempt is spent; its requests go out
            # again once one of our other batches has ended.
            self._progress.note(f"judge {self.id}: batch {entry.batch_id} was refused (token_limit_exceeded); its "
                                "requests are sent again when another batch has ended")
            for cid in entry.custom_ids:
                if (found := self._lookup(cid)) is not None:
                    found[1].in_flight.discard(found[2])
            entry.collected, entry.status = True, batch.status
            self._hold = True
            self._save()
            return
        if batch.status != "failed":
            self._hold = False
        if batch.status != "completed":
            reason = "; ".join(entry.errors) or "no reason given"
            self._progress.warn(f"judge {self.id}: batch {entry.batch_id} ended {batch.status} ({reason}); "
                                "its unanswered requests are asked again")
        fatal: FatalAPIError | None = None
        answers = []
        written = {(a.batch_id, a.custom_id) for a in self._read_answers() if a.verdict is not None}
        for cid in entry.custom_ids:
            found = self._lookup(cid)
            if found is None:
                continue
            item, verdict, attempt = found
            verdict.in_flight.discard(attempt)
            if (entry.batch_id, cid) in written:  # an interrupted collection wrote it already (restored)
                continue
            try:
                answer = self._answer(cid, entry, batch, lines.get(cid), item, verdict.index, attempt)
            except FatalAPIError as error:  # not recorded: asked again by the next run, after the fix
                fatal = fatal or error
                continue
            verdict.answers[attempt] = answer
            answers.append(answer)
        if answers:
            with self._answers.appender() as append:
                for answer in answers:
                    append(answer)
        entry.collected, entry.status = True, batch.status
        self._save()
        if fatal is not None:
            raise fatal

    def _answer(self, cid: str, entry: BatchEntry, batch: Any, line: dict[str, Any] | None, item: _Item,
                index: int, attempt: int) -> BatchAnswer:
        seed = self.seed(item.cache_key, index, attempt)
        response = line.get("response") if line else None
        error = line.get("error") if line else None
        cost = 0.0
        if isinstance(response, dict) and response.get("status_code") == 200:
            try:
                completion = read_completion(response.get("body"))
            except MalformedResponse as malformed:
                verdict = self._failed_call(malformed, seed)
            else:
                verdict = verdict_record(completion.content, completion.reasoning, completion.finish_reason, seed,
                                         self.shown(item.request), self.reference_protocol, attempt,
                                         ).model_copy(update={"usage": completion.usage})
                if self.batch_price:
                    chars = len(completion.content or "") + len(completion.reasoning or "")
                    cost = call_cost(self.batch_price, completion.usage, self._prompt_tokens(item), tokens_for_chars(chars))
        elif isinstance(response, dict):
            verdict = self._failed_call(_status_error(response), seed)  # FatalAPIError for 400/401/403/404
        else:
            if isinstance(error, dict):
                why = f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
            else:
                why = f"no answer: the batch ended {batch.status}" + (f" ({'; '.join(entry.errors)})" if entry.errors else "")
            verdict = VerdictRecord(status="error", error=redact(f"batch {entry.batch_id}: {why}")[:500], transient=True, seed=seed)
        return BatchAnswer(custom_id=cid, batch_id=entry.batch_id, verdict=verdict.model_copy(update={"attempts": 1}), cost_usd=cost)

    def _prompt_tokens(self, item: _Item) -> int:
        if item.prompt_tokens is None:
            item.prompt_tokens = estimate_prompt_tokens(render_messages(self.prompt_set, item.request))
        return item.prompt_tokens

    # --- Re-asks sent directly -----------------------------------------------------------------------------

    async def _reask_directly(self) -> None:
        """`batch_fallback="direct"`: the verdicts a batch left unusable go on through the chat endpoint, by the
        direct judge's loop, from their next attempt to the end of their budget (at the list price)."""
        todo = [(item, v) for item, v in self._needing_attempt() if v.attempts() > 0]
        if not todo:
            return
        self._progress.note(f"judge {self.id}: asking {len(todo)} verdict(s) again directly (--judge-batch-fallback direct)")

        async def one(item: _Item, verdict: _Verdict) -> BatchAnswer:
            messages: Messages = render_messages(self.prompt_set, item.request)
            attempt = verdict.attempts() + 1
            record, cost = await self._verdict(messages, item.cache_key, verdict.index, self.shown(item.request),
                                               first_attempt=attempt, best=verdict.best(), usage=verdict.usage(),
                                               cost=verdict.cost())
            cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, record.attempts)
            return BatchAnswer(custom_id=cid + DIRECT_SUFFIX, verdict=record, cost_usd=cost, final=True)

        tasks = [asyncio.ensure_future(one(item, v)) for item, v in todo]
        try:
            with self._answers.appender() as append:
                for (_, verdict), task in zip(todo, tasks):
                    answer = await task
                    verdict.final_answer = answer
                    append(answer)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    # --- The Batch API -------------------------------------------------------------------------------------

    @property
    def sdk(self) -> Any:
        """The openai SDK's client, made on first use (importing the SDK takes about a second)."""
        if self._sdk is None:
            import openai

            self._sdk = openai.AsyncOpenAI(api_key=require_key(self.settings), base_url=self._base_url or DEFAULT_BASE_URL,
                                           timeout=self.settings.request_timeout, max_retries=2)
        return self._sdk

    async def _api(self, call: Callable[[], Awaitable[T]], what: str, attempts: int = API_ATTEMPTS,
                   made_meanwhile: Callable[[], Awaitable[T | None]] | None = None) -> T:
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
                raise EndpointDown(f"the Batch API did not answer when asked to {what}: {message}; "
                                   "the run is resumable: run the same command again")
            self._progress.warn(f"judge {self.id}: could not {what} ({message}); trying again")
            await asyncio.sleep(backoff_seconds(attempt, base=self.retry_base_s, cap=60.0))
        raise AssertionError("unreachable")


def _status_error(response: dict[str, Any]) -> StatusError:
    body = response.get("body")
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = response.get("status_code")
    return StatusError(status if isinstance(status, int) else 500, str(message or body or f"status {status}"),
                       str(code) if code is not None else None)


def _sdk_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", error))

"""The LLM judge through the OpenAI Batch API (`--judge-batch`): half the price, results within 24 hours.

The Batch API is how the calls travel, not what they are: the requests are the direct judge's bodies
(`LLMJudge.request_body`: the same messages, seeds, token limit and response format), and the judge has the
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

The enqueued-token limit. The API holds, per organisation and model, the tokens of the batches not ended yet
(each request's prompt plus its `max_tokens`), and fails a batch that would pass the limit
(`token_limit_exceeded`, nothing run). Batches are filled up to the limit less what is in flight (counted with
the rate control's estimate, `request_tokens`), the rest waiting for a batch to end; the limit is
`--judge-batch-tokens`, or the one the first refusal's message states (kept in batches.json). A refused batch
spends no attempt; a request that alone counts more than the limit fails its verdict.

Resuming. Everything needed to go on is in the evaluation's directory (`awbench.judging.batch_state`),
written before the next step: `batches.json` (atomically replaced) lists every batch entry with its
custom_ids, our token, the uploaded file's id and the batch's id, each saved as soon as it exists;
`batch_answers.jsonl` holds each attempt's parsed answer as it is downloaded (appended before its batch is
marked collected). A crash or Ctrl-C while
waiting leaves them on disk, and the next run of the same command polls the same batches. The token names
the uploaded file (`awbench-{token}.jsonl`) and goes into the batch's metadata, so a crash between the upload
and saving its file id finds the file again (`files.list`), and a crash between creating the batch and
saving its id finds the batch again (`batches.list`, by input file id or token): a batch is never submitted
twice. A batch of which no request is wanted any more (judged directly meanwhile, or for other inputs) is
cancelled.

The judge is composed of parts with one job each: the direct judge (`LLMJudge`: id, requests, bodies, seeds,
the verdict loop of re-asks), its files (`batch_state`), the Batch API's calls, submission and polling
(`batch_api`), and the reading of answers (`batch_answers`); this module keeps each request's verdicts and
decides what to send.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from awbench.judging import BudgetExhausted, JudgeBase, Notes
from awbench.judging.batch_answers import PendingRequest, VerdictAttempts, read_answer, result_lines
from awbench.judging.batch_api import ENDPOINT, TERMINAL, BatchAPI
from awbench.judging.batch_limit import EnqueuedLimit, refusal, too_large
from awbench.judging.batch_state import (
    DIRECT_SUFFIX,
    RECORDED_SUFFIX,
    BatchAnswer,
    BatchEntry,
    BatchFiles,
    custom_id,
    parse_custom_id,
)
from awbench.judging.cost import (
    OUTPUT_TOKENS_PER_VERDICT,
    CostEstimate,
    batch_price,
    estimate_prompt_tokens,
    usage_cost,
)
from awbench.judging.llm import LLMJudge
from awbench.judging.prompts import render_messages
from awbench.judging.verdict_records import combine
from awbench.records import JudgeRequest, JudgmentRecord, PredictionRecord, Sample, VerdictRecord
from awbench.redact import redact
from awbench.transport.chat_client import encode
from awbench.transport.openai_client import EndpointDown, FatalAPIError
from awbench.transport.rate_control import request_tokens

GenKey = tuple[str, int]

# The Batch API's limits (openai SDK, `batches.create`: "The file can contain up to 50,000 requests, and can
# be up to 200 MB in size"); files are kept under 190 MB, whether MB means 10^6 or 2^20 bytes.
MAX_REQUESTS_PER_BATCH = 50_000
MAX_FILE_BYTES = 190_000_000


class Quiet:
    """Notes that go nowhere, until `bind` gives the run's."""

    def note(self, text: str) -> None:
        return None

    def warn(self, text: str) -> None:
        return None


class BatchJudge(JudgeBase):
    """The LLM judge `direct`, its calls sent as batches: the same id, cache keys, description and requests.
    `direct.price` stays the list price (direct re-asks pay it); `batch_price` is half of it."""

    kind = "llm"

    def __init__(self, direct: LLMJudge) -> None:
        self.direct = direct
        self.settings = direct.settings
        self.id = direct.id
        self.spent_usd = 0.0
        self.batch_price = batch_price(direct.price) if direct.price is not None else None
        self.max_requests_per_batch = MAX_REQUESTS_PER_BATCH
        self.max_file_bytes = MAX_FILE_BYTES
        self.api = BatchAPI(
            direct.id,
            direct.base_url,
            direct.key,
            self.settings.request_timeout,
            self.settings.batch_poll_interval,
            Quiet(),
        )
        self._notes: Notes = Quiet()
        self._files: BatchFiles | None = None
        self._items: dict[GenKey, PendingRequest] = {}
        self._limit = EnqueuedLimit(self.settings.batch_tokens, self.id)

    # --- The judge protocol ---------------------------------------------------------------------------------

    def bind(self, directory: Path, notes: Notes) -> None:
        """The batches are kept in the evaluation's directory."""
        self._files = BatchFiles(directory, self.id)
        self._notes = self.api.notes = notes

    def describe(self) -> dict[str, Any]:
        return self.direct.describe()

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        return self.direct.request(sample, prediction)

    def cache_key(self, request: JudgeRequest) -> str:
        return self.direct.cache_key(request)

    async def check(self) -> None:
        await self.direct.check()

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """As the direct judge's, priced at the Batch API's rate."""
        estimate = self.direct.estimate(requests)
        cost = (
            usage_cost(self.batch_price, estimate.prompt_tokens, estimate.completion_tokens)
            if self.batch_price
            else None
        )
        return estimate.model_copy(update={"cost_usd": cost})

    async def aclose(self) -> None:
        await self.api.aclose()
        await self.direct.aclose()

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Take every request (until the feed closes), then submit, poll and collect; yield each prediction's
        record once all its verdicts are final. With `max_cost`, no new prediction is submitted once the spend
        so far, plus the estimates of the batches in flight and of this one, would pass the cap: what is in
        flight is collected and yielded, then BudgetExhausted is raised."""
        if self._files is None:
            raise RuntimeError("a batch judge needs its evaluation's directory (bind) before judging")
        files = self._files
        async for request in requests:
            key = self.cache_key(request)
            verdicts = [VerdictAttempts(i) for i in range(self.settings.samples)]
            self._items[(request.key, request.generation)] = PendingRequest(request, key, verdicts)
        files.load()
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
            open_entries = [e for e in files.state.batches if e.open and e.batch_id]
            if not open_entries:  # everything was answered, or the cap keeps the rest back
                break
            await self._collect_ended(await self.api.poll(open_entries, files.save))
        records = self._finished()
        for record in records:
            yield record
        self._mark_recorded(records)
        if stopped:
            raise BudgetExhausted(
                f"judge spend would pass the cap: spent ${self._spent():.4f} of --max-cost ${self.settings.max_cost:.4f}"
            )

    # --- Each request's verdicts ---------------------------------------------------------------------------

    @property
    def files(self) -> BatchFiles:
        assert self._files is not None
        return self._files

    def _mark_recorded(self, records: list[JudgmentRecord]) -> None:
        """After the consumer took these records (and saved them): their answers are spent."""
        items = [self._items[(r.key, r.generation)] for r in records]
        if not items:
            return
        with self.files.appender() as append:
            for item in items:
                cid = custom_id(item.cache_key, item.request.key, item.request.generation, 0, 0) + RECORDED_SUFFIX
                append(BatchAnswer(custom_id=cid, recorded=True))

    def _lookup(self, cid: str) -> tuple[PendingRequest, VerdictAttempts, int] | None:
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
        for answer in self.files.read_answers():
            found = self._lookup(answer.custom_id.removesuffix(DIRECT_SUFFIX).removesuffix(RECORDED_SUFFIX))
            if found is None:
                continue
            item, verdict, attempt = found
            if answer.recorded:
                item.verdicts = [VerdictAttempts(v.index) for v in item.verdicts]
            elif answer.final:
                verdict.final_answer = answer
            else:
                verdict.answers[attempt] = answer
        for entry in self.files.state.batches:
            if entry.open and entry.file_id is not None:
                self._set_in_flight(entry, True)

    def _set_in_flight(self, entry: BatchEntry, flying: bool) -> None:
        """Mark the attempts an entry asks (those not answered yet) as in flight, or no longer."""
        for cid in entry.custom_ids:
            if (found := self._lookup(cid)) is not None:
                if not flying:
                    found[1].in_flight.discard(found[2])
                elif found[2] not in found[1].answers:
                    found[1].in_flight.add(found[2])

    def _finished(self) -> list[JudgmentRecord]:
        budget = self.settings.max_retries + 1
        records = []
        for item in self._items.values():
            if item.yielded or not all(v.done(budget) for v in item.verdicts):
                continue
            outcomes = [v.outcome() for v in item.verdicts]
            cost = sum(c for _, c in outcomes) if self.direct.price else None
            self.spent_usd += cost or 0.0
            item.yielded = True
            records.append(combine(item.request, item.cache_key, [v for v, _ in outcomes], cost))
        return records

    def _needing_attempt(self) -> list[tuple[PendingRequest, VerdictAttempts]]:
        budget = self.settings.max_retries + 1
        return [
            (item, v)
            for item in self._items.values()
            if not item.yielded
            for v in item.verdicts
            if not v.done(budget) and not v.in_flight
        ]

    def _spent(self) -> float:
        """Recorded spend (`spent_usd`: earlier records and those yielded) and answers not yet recorded."""
        pending = sum(
            v.final_answer.cost_usd if v.final_answer else v.cost()  # a final answer's cost is the whole verdict's
            for item in self._items.values()
            if not item.yielded
            for v in item.verdicts
        )
        return self.spent_usd + pending

    # --- Submitting ----------------------------------------------------------------------------------------

    async def _settle_stale(self) -> None:
        """Open batches none of whose requests is wanted now are cancelled (their answers would be thrown away);
        entries never submitted with nothing wanted are dropped."""
        changed = False
        for entry in self.files.state.batches:
            if not entry.open or any(self._lookup(cid) is not None for cid in entry.custom_ids):
                continue
            if entry.batch_id is None and entry.file_id is not None and (found := await self.api.find_batch(entry)):
                entry.batch_id, entry.status = found.id, found.status
            if entry.batch_id is not None and entry.status not in TERMINAL:
                batch = await self.api.cancel(entry.batch_id)
                entry.status = batch.status
                self._notes.note(
                    f"judge {self.id}: cancelled batch {entry.batch_id}: none of its requests is wanted any more"
                )
            entry.abandoned, changed = True, True
        if changed:
            self.files.save()

    async def _finish_submissions(self) -> None:
        """Entries an interruption left between the upload and the batch: find their file and batch again,
        else upload or create them now. Never a second batch for one file."""
        for entry in [e for e in self.files.state.batches if e.open and e.batch_id is None]:
            if entry.file_id is None:
                file_id = await self.api.find_file(entry)
                if file_id is None:  # never uploaded: its requests go out again with the next submission
                    self._drop(entry)
                    continue
                entry.file_id, entry.status = file_id, "uploaded"
                self.files.save()
                self._set_in_flight(entry, True)
            batch = await self.api.find_batch(entry)
            if batch is None:
                batch = await self.api.create(entry)
            entry.batch_id, entry.status = batch.id, batch.status
            self.files.save()
            self._notes.note(
                f"judge {self.id}: resumed the submission of batch {batch.id} ({len(entry.custom_ids)} requests)"
            )

    def _drop(self, entry: BatchEntry) -> None:
        self.files.state.batches.remove(entry)
        self.files.save()
        self._set_in_flight(entry, False)

    async def _submit_new(self, stopped: bool) -> bool:
        """Submit every verdict that needs an attempt (first ones, and re-asks unless they go directly), in
        files under the API's limits. Returns whether the cap stopped new predictions."""
        state = self.files.state
        if self._limit.holding(self.files):
            return False  # the enqueued-token limit: wait for a batch of ours to end
        direct_reasks = self.settings.batch_fallback == "direct"
        wanted: dict[GenKey, list[VerdictAttempts]] = {}
        for item, verdict in self._needing_attempt():
            if direct_reasks and verdict.attempts() > 0:
                continue
            wanted.setdefault((item.request.key, item.request.generation), []).append(verdict)
        if not wanted:
            return False
        await self._limit.pause(self.api.poll_interval)
        cap = self.settings.max_cost
        reserved = sum(e.estimated_cost_usd for e in state.batches if e.open)
        limit = self.token_limit()
        enqueued = sum(e.tokens for e in state.batches if e.open)
        chunk: list[bytes] = []
        ids: list[str] = []
        size, estimate, tokens, sent, batches = 0, 0.0, 0, 0, []
        hit_cap = False
        for gen_key, verdicts in wanted.items():
            item = self._items[gen_key]
            if item.fresh() and (stopped or hit_cap):
                continue
            messages = render_messages(self.direct.prompt_set, item.request)
            item.prompt_tokens = estimate_prompt_tokens(messages)
            each = (
                usage_cost(self.batch_price, item.prompt_tokens, OUTPUT_TOKENS_PER_VERDICT) if self.batch_price else 0.0
            )
            if (
                cap is not None
                and item.fresh()
                and self._spent() + reserved + estimate + each * self.settings.samples > cap
            ):
                hit_cap = True
                continue
            for verdict in verdicts:
                attempt = verdict.attempts() + 1
                cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, attempt)
                body = self.direct.request_body(messages, self.direct.seed(item.cache_key, verdict.index, attempt))
                counted = request_tokens(body)
                if limit is not None and counted > limit:
                    verdict.final_answer = self._too_large(cid, verdict, counted, limit)
                    continue
                if limit is not None and enqueued + counted > limit:
                    continue  # no room now: sent once a batch of ours has ended
                line = encode({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": body}) + b"\n"
                if chunk and (len(chunk) >= self.max_requests_per_batch or size + len(line) > self.max_file_bytes):
                    batches.append(await self._submit(chunk, ids, estimate, tokens))
                    reserved += estimate
                    chunk, ids, size, estimate, tokens = [], [], 0, 0.0, 0
                chunk.append(line)
                ids.append(cid)
                size += len(line)
                estimate += each
                tokens += counted
                enqueued += counted
                verdict.in_flight.add(attempt)
                sent += 1
        if chunk:
            batches.append(await self._submit(chunk, ids, estimate, tokens))
        if batches:
            under = f", ~{enqueued:,} of the {limit:,} tokens the model may have enqueued" if limit else ""
            self._notes.note(
                f"judge {self.id}: sent {sent} requests in {len(batches)} batch(es) of the OpenAI Batch API "
                f"({', '.join(batches)}{under}); results within 24 h, checked every {self.api.poll_interval:g} s. "
                "Interrupting is safe: the same command resumes these batches."
            )
        return hit_cap

    def token_limit(self) -> int | None:
        """The enqueued-token limit batches are split under (`batch_limit.EnqueuedLimit`)."""
        return self._limit.value(self.files)

    def _too_large(self, cid: str, verdict: VerdictAttempts, counted: int, limit: int) -> BatchAnswer:
        """A request that alone counts more than the limit: no batch can hold it, so its verdict fails."""
        record = VerdictRecord(
            status="error", error=too_large(counted, limit), transient=False, attempts=verdict.attempts()
        )
        return BatchAnswer(custom_id=cid, verdict=record, final=True)

    async def _submit(self, lines: list[bytes], ids: list[str], estimate: float, tokens: int) -> str:
        """Record the entry, upload its file, create its batch: each step saved before the next."""
        state = self.files.state
        entry = BatchEntry(token=uuid.uuid4().hex, custom_ids=ids, estimated_cost_usd=estimate, tokens=tokens)
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
        return batch.id

    # --- Collecting ----------------------------------------------------------------------------------------

    async def _collect_ended(self, ended: list[tuple[BatchEntry, Any]]) -> None:
        """Collect every batch that ended; the first refusal that retrying cannot fix is raised after all."""
        fatal: FatalAPIError | None = None
        for entry, batch in ended:
            try:
                await self._collect(entry, batch)
            except FatalAPIError as error:
                fatal = fatal or error
        if fatal is not None:
            raise fatal

    async def _collect(self, entry: BatchEntry, batch: Any) -> None:
        """Read a finished batch's output and error files; record every attempt's answer (requests without one
        never ran: the batch expired, failed or was cancelled), then mark the batch collected."""
        lines = result_lines([await self.api.download(f) for f in (batch.output_file_id, batch.error_file_id) if f])
        batch_errors = (batch.errors.data or []) if batch.errors else []
        entry.errors = [redact(f"{e.code}: {e.message}") for e in batch_errors]
        if (messages := refusal(batch)) is not None:
            self._set_in_flight(entry, False)  # nothing ran: no attempt spent, the requests go out again
            self._limit.refused(self.files, entry, messages, self._notes)
            return
        self._limit.ended()
        if batch.status != "completed":
            reason = "; ".join(entry.errors) or "no reason given"
            self._notes.warn(
                f"judge {self.id}: batch {entry.batch_id} ended {batch.status} ({reason}); "
                "its unanswered requests are asked again"
            )
        fatal: FatalAPIError | None = None
        answers = []
        written = {(a.batch_id, a.custom_id) for a in self.files.read_answers() if a.verdict is not None}
        for cid in entry.custom_ids:
            found = self._lookup(cid)
            if found is None:
                continue
            item, verdict, attempt = found
            verdict.in_flight.discard(attempt)
            if (entry.batch_id, cid) in written:  # an interrupted collection wrote it already (restored)
                continue
            try:
                answer = read_answer(
                    self.direct,
                    self.batch_price,
                    cid,
                    entry,
                    batch.status,
                    lines.get(cid),
                    item,
                    verdict.index,
                    attempt,
                )
            except FatalAPIError as error:  # not recorded: asked again by the next run, after the fix
                fatal = fatal or error
                continue
            verdict.answers[attempt] = answer
            answers.append(answer)
        if answers:
            with self.files.appender() as append:
                for answer in answers:
                    append(answer)
        entry.collected, entry.status = True, batch.status
        self.files.save()
        if fatal is not None:
            raise fatal

    # --- Re-asks sent directly -----------------------------------------------------------------------------

    async def _reask_directly(self) -> None:
        """`batch_fallback="direct"`: the verdicts a batch left unusable go on through the chat endpoint, by the
        direct judge's loop, from their next attempt to the end of their budget (at the list price)."""
        todo = [(item, v) for item, v in self._needing_attempt() if v.attempts() > 0]
        if not todo:
            return
        self._notes.note(
            f"judge {self.id}: asking {len(todo)} verdict(s) again directly (--judge-batch-fallback direct)"
        )

        async def one(item: PendingRequest, verdict: VerdictAttempts) -> BatchAnswer:
            messages = render_messages(self.direct.prompt_set, item.request)
            attempt = verdict.attempts() + 1
            record, cost = await self.direct.ask(
                messages,
                item.cache_key,
                verdict.index,
                item.request,
                first_attempt=attempt,
                best=verdict.best(),
                usage=verdict.usage(),
                cost=verdict.cost(),
            )
            cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, record.attempts)
            return BatchAnswer(custom_id=cid + DIRECT_SUFFIX, verdict=record, cost_usd=cost, final=True)

        tasks = [asyncio.ensure_future(one(item, v)) for item, v in todo]
        try:
            with self.files.appender() as append:
                for (_, verdict), task in zip(todo, tasks):
                    answer = await task
                    verdict.final_answer = answer
                    append(answer)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

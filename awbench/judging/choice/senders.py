"""Two-choice questions through the OpenAI Batch API (`--judge-batch`): the transport of the batch judge
(`awbench.judging.llm.batch_judge`) for `awbench.judging.choice.judge`, with its parts: the direct judge's request bodies and
error rules, `BatchAPI` for uploading, creating, polling and downloading, `BatchFiles` for the state that makes
an interrupted run resume the same batches (batches.json in the evaluation's directory, each step saved before
the next). A round's calls go out as one or more batches (under the API's limits), and each reply is handed
back as its batch ends; an answer goes to the choice table (`answers.jsonl`) before its batch is marked
collected. A request that never ran (the batch expired, failed or was cancelled) used an attempt and is asked
again in the next round, as an unusable answer is; except a batch refused for the enqueued-token limit
(`awbench.judging.batch.limit`, `--judge-batch-tokens`): nothing ran, no attempt is spent, and its questions go
out again in batches under the limit as room frees up. A question that alone counts more than the limit fails.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awbench.judging import Notes
from awbench.judging.batch.api import ENDPOINT, TERMINAL, BatchAPI
from awbench.judging.batch.limit import EnqueuedLimit, refusal, too_large
from awbench.judging.batch.state import BatchEntry, BatchFiles
from awbench.judging.choice.calls import Call, Reply
from awbench.judging.cost import call_cost, estimate_prompt_tokens, tokens_for_chars
from awbench.judging.llm.batch_answers import result_lines, status_error
from awbench.judging.llm.batch_judge import MAX_FILE_BYTES, MAX_REQUESTS_PER_BATCH, Quiet
from awbench.judging.llm.direct import LLMJudge
from awbench.redact import redact
from awbench.transport.chat_client import MalformedResponse, encode, read_completion
from awbench.transport.rate_control import request_tokens

if TYPE_CHECKING:
    from awbench.judging.choice.judge import ChoiceJudge


class BatchSender:
    def __init__(self, judge: ChoiceJudge, direct: LLMJudge) -> None:
        self.judge, self.direct = judge, direct
        settings = judge.settings
        self.api = BatchAPI(
            judge.id, direct.base_url, direct.key, settings.request_timeout, settings.batch_poll_interval, Quiet()
        )
        self.notes: Notes = Quiet()
        self._files: BatchFiles | None = None
        self._limit = EnqueuedLimit(settings.batch_tokens, judge.id)

    def bind(self, directory: Path, notes: Notes) -> None:
        self._files = BatchFiles(directory, self.judge.id)
        self.notes = self.api.notes = notes

    async def check(self) -> None:
        await self.direct.check()

    async def aclose(self) -> None:
        await self.api.aclose()
        await self.direct.aclose()

    @property
    def files(self) -> BatchFiles:
        if self._files is None:
            raise RuntimeError("the Batch API sender needs its evaluation's directory (bind) before sending")
        return self._files

    async def send(self, calls: list[Call]) -> AsyncIterator[tuple[Call, Reply]]:
        files = self.files
        files.load()
        wanted = {custom_id(call): call for call in calls}
        await self._resume(wanted)
        flying = {cid for e in files.state.batches if e.open and e.batch_id for cid in e.custom_ids}
        waiting = [call for cid, call in wanted.items() if cid not in flying]
        while True:
            waiting, too_large_replies = await self._submit(waiting)
            for item in too_large_replies:
                yield item
            open_entries = [e for e in files.state.batches if e.open and e.batch_id]
            if not open_entries:
                if not waiting:
                    break
                continue  # refused with none of ours in flight: submitted again after a wait
            for entry, batch in await self.api.poll(open_entries, files.save):
                entry.errors = [
                    redact(f"{e.code}: {e.message}") for e in (batch.errors.data or [] if batch.errors else [])
                ]
                if (messages := refusal(batch)) is not None:  # nothing ran: no attempt spent, asked again
                    self._limit.refused(files, entry, messages, self.notes)
                    waiting += [wanted[cid] for cid in entry.custom_ids if cid in wanted]
                    continue
                self._limit.ended()
                lines = result_lines(
                    [await self.api.download(f) for f in (batch.output_file_id, batch.error_file_id) if f]
                )
                for cid in entry.custom_ids:
                    if (call := wanted.get(cid)) is not None:
                        yield call, self.reply(call, lines.get(cid), entry, batch.status)
                entry.collected, entry.status = True, batch.status
                files.save()

    async def _resume(self, wanted: dict[str, Call]) -> None:
        """Open entries of an earlier run: an interrupted submission finished (its file and batch found again,
        or the batch made), never a second batch for one file; then cancelled when none of their requests is
        wanted now."""
        for entry in [e for e in self.files.state.batches if e.open]:
            needed = any(cid in wanted for cid in entry.custom_ids)
            if entry.batch_id is None:
                if entry.file_id is None:
                    entry.file_id = await self.api.find_file(entry)
                if entry.file_id is None:  # never uploaded: what is wanted of it goes out with this round
                    self.files.state.batches.remove(entry)
                    self.files.save()
                    continue
                batch = await self.api.find_batch(entry)
                if batch is None and needed:
                    batch = await self.api.create(entry)
                if batch is not None:
                    entry.batch_id, entry.status = batch.id, batch.status
            if not needed:
                if entry.batch_id is not None and entry.status not in TERMINAL:
                    entry.status = (await self.api.cancel(entry.batch_id)).status
                entry.abandoned = True
            self.files.save()

    async def _submit(self, calls: list[Call]) -> tuple[list[Call], list[tuple[Call, Reply]]]:
        """Send the calls in batches under the API's limits and the enqueued-token limit (`batch_limit`). Returns
        the calls left waiting for room, and the replies of those no batch can hold."""
        if not calls or self._limit.holding(self.files):
            return calls, []
        await self._limit.pause(self.api.poll_interval)
        limit = self._limit.value(self.files)
        enqueued = sum(e.tokens for e in self.files.state.batches if e.open)
        chunk: list[bytes] = []
        ids: list[str] = []
        made, left, failed = [], [], []
        tokens = 0
        for call in calls:
            seed = self.judge.seed(call.hash, call.first)
            body = self.direct.request_body(call.question.messages, seed)
            counted = request_tokens(body)
            if limit is not None and counted > limit:
                failed.append((call, Reply(call.first, seed, error=too_large(counted, limit), transient=False)))
                continue
            if limit is not None and enqueued + counted > limit:
                left.append(call)  # no room now: sent once a batch of ours has ended
                continue
            line = encode({"custom_id": custom_id(call), "method": "POST", "url": ENDPOINT, "body": body}) + b"\n"
            if chunk and (len(chunk) >= MAX_REQUESTS_PER_BATCH or sum(map(len, chunk)) + len(line) > MAX_FILE_BYTES):
                made.append(await self._create(chunk, ids, tokens))
                chunk, ids, tokens = [], [], 0
            chunk.append(line)
            ids.append(custom_id(call))
            tokens += counted
            enqueued += counted
        if chunk:
            made.append(await self._create(chunk, ids, tokens))
        if made:
            under = f", ~{enqueued:,} of the {limit:,} tokens the model may have enqueued" if limit else ""
            self.notes.note(
                f"judge {self.judge.id}: sent {len(calls) - len(left) - len(failed)} questions in {len(made)} "
                f"batch(es) of the OpenAI Batch API ({', '.join(made)}{under}); interrupting is safe: the same "
                "command resumes them"
            )
        return left, failed

    async def _create(self, lines: list[bytes], ids: list[str], tokens: int) -> str:
        """Record the entry, upload its file, create its batch: each step saved before the next."""
        entry = BatchEntry(token=uuid.uuid4().hex, custom_ids=ids, tokens=tokens)
        self.files.state.batches.append(entry)
        self.files.save()
        uploaded = await self.api.upload(entry, b"".join(lines))
        entry.file_id, entry.status = uploaded.id, "uploaded"
        self.files.save()
        batch = await self.api.create(entry)
        entry.batch_id, entry.status = batch.id, batch.status
        self.files.save()
        return str(batch.id)

    def reply(self, call: Call, line: dict[str, Any] | None, entry: BatchEntry, status: str) -> Reply:
        """A result line read as the direct judge reads a completion, priced at the Batch API's rate."""
        seed = self.judge.seed(call.hash, call.first)
        response = line.get("response") if line else None
        if isinstance(response, dict) and response.get("status_code") == 200:
            try:
                completion = read_completion(response.get("body"))
            except MalformedResponse as malformed:
                failed = self.direct.failed_call(malformed, seed)
                return Reply(call.first, seed, error=failed.error, transient=failed.transient)
            cost = 0.0
            if (price := self.judge.call_price) is not None:
                chars = len(completion.content or "") + len(completion.reasoning or "")
                prompt = estimate_prompt_tokens(call.question.messages)
                cost = call_cost(price, completion.usage, prompt, tokens_for_chars(chars))
            return Reply(call.first, seed, completion=completion, usage=completion.usage, cost_usd=cost)
        if isinstance(response, dict):
            failed = self.direct.failed_call(status_error(response), seed)  # raises what stops the run
            return Reply(call.first, seed, error=failed.error, transient=failed.transient)
        error = line.get("error") if line else None
        why = (
            f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
            if isinstance(error, dict)
            else f"no answer: the batch ended {status}"
        )
        return Reply(call.first, seed, error=redact(f"batch {entry.batch_id}: {why}")[:500], transient=True)


def custom_id(call: Call) -> str:
    return f"{call.question.key}|{call.first}|{call.hash[:16]}"

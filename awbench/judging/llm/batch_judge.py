"""The LLM judge through the OpenAI Batch API (`--judge-batch`): half the price, results within 24 hours.

The Batch API is how the calls travel, not what they are: the requests are the direct judge's bodies
(`LLMJudge.request_body`: the same messages, seeds, token limit and response format), and the judge has the
direct judge's id and verdict cache keys, so verdicts made either way mix in one evaluation and resume each
other. The judge collects its requests until the feed closes (in a pipelined `awbench run`, when inference is
done), then hands them to the Batch API runner (`awbench.judging.batch.runner`: files under the API's limits
and the enqueued-token limit, upload, batch, polling, downloads, resuming) and reads what comes back.

Each verdict keeps the direct judge's budget of 1 + max_retries attempts. An attempt is one line of a batch,
named by its custom_id `{sample key}|{generation}|{verdict index}|{attempt}|{cache key prefix}`, with the
seed the direct judge gives that attempt. An answer that is unusable (no verdict, partial, truncated), a
request that failed transiently (429, 5xx, a malformed body) or never ran (the batch expired, failed or was
cancelled) uses an attempt and is asked again: in a new batch, or with `batch_fallback="direct"` through the
chat endpoint at the full price, by the direct judge's own loop for the rest of the budget. A batch refused
for the enqueued-token limit spends no attempt; a request that alone counts more than the limit fails its
verdict.

Resuming. Everything needed to go on is in the evaluation's directory, written before the next step:
`batches.json` (the runner's: every batch, found again after a crash, never submitted twice; one of which no
request is wanted any more is cancelled) and `batch_answers.jsonl` (`awbench.judging.llm.batch_answers`: each
attempt's parsed answer as it is read, appended before its batch is marked collected). A crash or Ctrl-C while
waiting leaves them on disk, and the next run of the same command polls the same batches.

The judge is composed of parts with one job each: the direct judge (`LLMJudge`: id, requests, bodies, seeds,
the verdict loop of re-asks), the runner (how requests travel as batches), and the reading of answers
(`batch_answers`); this module keeps each request's verdicts, decides what to send and keeps to --max-cost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from awbench.judging import BudgetExhausted, JudgeBase, Notes
from awbench.judging.batch.runner import QUEUED, WAITING, BatchRequest, BatchRunner, Ended, Quiet
from awbench.judging.batch.state import TYPICAL_BATCH_TURNAROUND_S, BatchEntry, batches_in_turn, learnt_token_limit
from awbench.judging.cost import (
    Budget,
    CostEstimate,
    batch_price,
    estimate_prompt_tokens,
    usage_cost,
)
from awbench.judging.llm.batch_answers import (
    DIRECT_SUFFIX,
    RECORDED_SUFFIX,
    AnswerFile,
    BatchAnswer,
    PendingRequest,
    VerdictAttempts,
    custom_id,
    parse_custom_id,
    read_answer,
)
from awbench.judging.llm.direct import LLMJudge, recorded_spend
from awbench.judging.llm.prompts import render_messages
from awbench.judging.llm.verdict_records import combine
from awbench.records import JudgeRequest, JudgmentRecord, PredictionRecord, Sample, VerdictRecord
from awbench.transport.endpoints import FatalAPIError

GenKey = tuple[str, int]


class BatchJudge(JudgeBase):
    """The LLM judge `direct`, its calls sent as batches: the same id, cache keys, description and requests.
    `direct.price` stays the list price (direct re-asks pay it); `batch_price` is half of it."""

    kind = "llm"

    def __init__(self, direct: LLMJudge) -> None:
        self.direct = direct
        self.settings = direct.settings
        self.id = direct.id
        self.recorded_usd = 0.0  # the evaluation's recorded spend: earlier records (`bind`) and those yielded
        self.batch_price = batch_price(direct.price) if direct.price is not None else None
        self.runner = BatchRunner(direct.id, direct.base_url, direct.key, self.settings)
        self._notes: Notes = Quiet()
        self._directory: Path | None = None
        self._answers: AnswerFile | None = None
        self._items: dict[GenKey, PendingRequest] = {}

    # --- The judge protocol ---------------------------------------------------------------------------------

    @property
    def spent_usd(self) -> float:
        return self._spent()

    def bind(self, directory: Path, notes: Notes, recorded: Iterable[JudgmentRecord] = ()) -> None:
        """The batches and their answers are kept in the evaluation's directory; the cap covers its earlier spend."""
        self.runner.bind(directory, notes)
        self._directory, self._notes = directory, notes
        self._answers = AnswerFile(directory)
        self.recorded_usd = recorded_spend(recorded)

    def describe(self) -> dict[str, Any]:
        return self.direct.describe()

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        return self.direct.request(sample, prediction)

    def cache_key(self, request: JudgeRequest) -> str:
        return self.direct.cache_key(request)

    async def check(self) -> None:
        await self.direct.check()

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """As the direct judge's, priced at the Batch API's rate and without the prompt cache (the API, not awbench,
        orders a batch's requests: docs/batch.md); its wall time is the batches one after another under the
        enqueued-token limit (given, or learnt by the evaluation), at a typical turnaround each."""
        estimate = self.direct.estimate(requests)
        cost = (
            usage_cost(self.batch_price, estimate.prompt_tokens, estimate.completion_tokens)
            if self.batch_price
            else None
        )
        learnt = learnt_token_limit(self._directory) if self._directory is not None else None
        known = [n for n in (self.settings.batch_tokens, learnt) if n]
        limit = min(known) if known else None
        batches = batches_in_turn(estimate.limit_tokens, limit) if limit else None
        return estimate.model_copy(
            update={
                "cost_usd": cost,
                "cached_tokens": 0,
                "uncached_cost_usd": cost,
                "batch_price": True,
                "wall_s": batches * TYPICAL_BATCH_TURNAROUND_S if batches else None,
                "batches": batches,
                "batch_tokens": limit,
            }
        )

    async def aclose(self) -> None:
        await self.runner.aclose()
        await self.direct.aclose()

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Take every request (until the feed closes), then submit, poll and collect; yield each prediction's
        record once all its verdicts are final. With `max_cost`, no new prediction is submitted once the spend
        so far, plus the estimates of the batches in flight and of this one, would pass the cap: what is in
        flight is collected and yielded, then BudgetExhausted is raised."""
        if self._answers is None:
            raise RuntimeError("a batch judge needs its evaluation's directory (bind) before judging")
        async for request in requests:
            key = self.cache_key(request)
            verdicts = [VerdictAttempts(i) for i in range(self.settings.samples)]
            self._items[(request.key, request.generation)] = PendingRequest(request, key, verdicts)
        await self.runner.resume(lambda cid: self._lookup(cid) is not None)
        self._restore_answers()
        stopped = False
        while True:
            async for record in self._finished():  # on the first round, those answered before an interruption
                yield record
            stopped = await self._submit_new(stopped) or stopped
            if self.settings.batch_fallback == "direct":
                await self._reask_directly()
                async for record in self._finished():
                    yield record
            if not self.runner.open_entries():  # everything was answered, or the cap keeps the rest back
                break
            await self._collect_ended(await self.runner.wait())
        async for record in self._finished():
            yield record
        if stopped:
            raise BudgetExhausted(Budget(self.settings.max_cost, self._spent()).why())

    # --- Each request's verdicts ---------------------------------------------------------------------------

    @property
    def answers(self) -> AnswerFile:
        assert self._answers is not None
        return self._answers

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
        """What earlier runs of this evaluation asked and were answered, for the requests wanted now; the
        attempts of the batches still open, in flight."""
        for answer in self.answers.read():
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
        for entry in self.runner.open_entries():
            self._set_in_flight(entry, True)

    def _set_in_flight(self, entry: BatchEntry, flying: bool) -> None:
        """Mark the attempts an entry asks (those not answered yet) as in flight, or no longer."""
        for cid in entry.custom_ids:
            if (found := self._lookup(cid)) is not None:
                if not flying:
                    found[1].in_flight.discard(found[2])
                elif found[2] not in found[1].answers:
                    found[1].in_flight.add(found[2])

    async def _finished(self) -> AsyncIterator[JudgmentRecord]:
        """The records of the requests whose verdicts are all final; once the consumer has taken (and saved)
        them, their answers are marked spent."""
        budget = self.settings.max_retries + 1
        items = []
        for item in self._items.values():
            if item.yielded or not all(v.done(budget) for v in item.verdicts):
                continue
            outcomes = [v.outcome() for v in item.verdicts]
            cost = sum(c for _, c in outcomes) if self.direct.price else None
            self.recorded_usd += cost or 0.0
            item.yielded = True
            items.append(item)
            yield combine(item.request, item.cache_key, [v for v, _ in outcomes], cost)
        if items:
            with self.answers.appender() as append:
                for item in items:
                    cid = custom_id(item.cache_key, item.request.key, item.request.generation, 0, 0)
                    append(BatchAnswer(custom_id=cid + RECORDED_SUFFIX, recorded=True))

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
        """Recorded spend (earlier records and those yielded) and answers not yet recorded."""
        pending = sum(
            v.final_answer.cost_usd if v.final_answer else v.cost()  # a final answer's cost is the whole verdict's
            for item in self._items.values()
            if not item.yielded
            for v in item.verdicts
        )
        return self.recorded_usd + pending

    # --- Submitting ----------------------------------------------------------------------------------------

    async def _submit_new(self, stopped: bool) -> bool:
        """Submit every verdict that needs an attempt (first ones, and re-asks unless they go directly). Returns
        whether the cap stopped new predictions."""
        if self.runner.holding():
            return False  # the enqueued-token limit: the cap is weighed once a batch of ours has ended
        direct_reasks = self.settings.batch_fallback == "direct"
        wanted: dict[GenKey, list[VerdictAttempts]] = {}
        for item, verdict in self._needing_attempt():
            if direct_reasks and verdict.attempts() > 0:
                continue
            wanted.setdefault((item.request.key, item.request.generation), []).append(verdict)
        if not wanted:
            return False
        hit_cap = False
        budget = Budget(self.settings.max_cost, self._spent())
        async with self.runner.submission(budget) as submission:
            for gen_key, verdicts in wanted.items():
                item = self._items[gen_key]
                fresh = item.fresh()
                if fresh and (stopped or hit_cap):
                    continue
                messages = render_messages(self.direct.prompt_set, item.request)
                item.prompt_tokens = estimate_prompt_tokens(messages)
                each = (  # the most each can be billed, held by --max-cost while its batch runs
                    usage_cost(self.batch_price, item.prompt_tokens, self.settings.max_tokens)
                    if self.batch_price
                    else 0.0
                )
                if fresh and not budget.affords(each * len(verdicts)):  # a re-ask of a begun prediction goes out
                    hit_cap = True
                    continue
                for verdict in verdicts:
                    attempt = verdict.attempts() + 1
                    cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, attempt)
                    seed = self.direct.seed(item.cache_key, verdict.index, attempt)
                    body = self.direct.request_body(messages, seed, None)
                    placed = await submission.add(BatchRequest(cid, body, each))
                    if placed == QUEUED:
                        verdict.in_flight.add(attempt)
                    elif placed != WAITING:  # no batch can hold it: its verdict fails
                        verdict.final_answer = self._failed(cid, verdict, placed)
        return hit_cap

    def _failed(self, cid: str, verdict: VerdictAttempts, why: str) -> BatchAnswer:
        record = VerdictRecord(status="error", error=why, transient=False, attempts=verdict.attempts())
        return BatchAnswer(custom_id=cid, verdict=record, final=True)

    # --- Collecting ----------------------------------------------------------------------------------------

    async def _collect_ended(self, ended: list[Ended]) -> None:
        """Collect every batch that ended; the first refusal that retrying cannot fix is raised after all."""
        fatal: FatalAPIError | None = None
        for batch in ended:
            try:
                await self._collect(batch)
            except FatalAPIError as error:
                fatal = fatal or error
        if fatal is not None:
            raise fatal

    async def _collect(self, ended: Ended) -> None:
        """Read an ended batch's result lines; record every attempt's answer (requests without one never ran:
        the batch expired, failed or was cancelled), then mark the batch collected. A refused batch ran nothing:
        no attempt spent, its requests go out again."""
        entry = ended.entry
        if ended.refused:
            self._set_in_flight(entry, False)
            return
        lines = await self.runner.lines(ended)
        fatal: FatalAPIError | None = None
        answers = []
        written = {(a.batch_id, a.custom_id) for a in self.answers.read() if a.verdict is not None}
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
                    ended.batch.status,
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
            with self.answers.appender() as append:
                for answer in answers:
                    append(answer)
        self.runner.collected(ended)
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
                item.request.sample.record.trajectory_id,
                first_attempt=attempt,
                best=verdict.best(),
                usage=verdict.usage(),
                cost=verdict.cost(),
            )
            cid = custom_id(item.cache_key, item.request.key, item.request.generation, verdict.index, record.attempts)
            return BatchAnswer(custom_id=cid + DIRECT_SUFFIX, verdict=record, cost_usd=cost, final=True)

        tasks = [asyncio.ensure_future(one(item, v)) for item, v in todo]
        try:
            with self.answers.appender() as append:
                for (_, verdict), task in zip(todo, tasks):
                    answer = await task
                    verdict.final_answer = answer
                    append(answer)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

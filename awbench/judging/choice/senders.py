"""How a two-choice question's calls travel: through the judge backends' own transports, not a second one.
`--judge-backend openai` sends each call through the direct judge's rate-limited client (`HTTPSender`:
`LLMJudge.complete`, `LLMJudge.request_body`, its error rules `LLMJudge.failed_call`) or, with `batch`, through
the Batch API runner (`BatchSender`, `awbench.judging.batch.runner`); `--judge-backend vllm` through the
in-process engine (`EngineSender`, `VLLMJudge.complete`). Each sender yields every call's reply, in any order.

Through the Batch API, a round's calls go out as one or more batches, and each reply is handed back as its batch
ends; an answer goes to the choice table (`answers.jsonl`) before its batch is marked collected. A request that
never ran (the batch expired, failed or was cancelled) used an attempt and is asked again in the next round, as
an unusable answer is; except a batch refused for the enqueued-token limit (`--judge-batch-tokens`): nothing
ran, no attempt is spent, and its questions go out again in batches under the limit as room frees up. A
question that alone counts more than the limit fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from awbench.config import JudgeSettings
from awbench.errors import SettingsError
from awbench.judging import Notes
from awbench.judging.batch.runner import QUEUED, WAITING, BatchRequest, BatchRunner, NotRun, outcome
from awbench.judging.batch.state import BatchEntry
from awbench.judging.choice.calls import Call, Reply, Sender, choice_seed
from awbench.judging.cost import Price, batch_price, completion_cost, estimate_prompt_tokens
from awbench.judging.llm.direct import LLMJudge
from awbench.judging.llm.prompts import PromptSet
from awbench.prefix_order import Place, prefix_sorted
from awbench.records import Usage
from awbench.transport.chat_client import Completion
from awbench.transport.endpoints import Endpoints
from awbench.transport.retry_policy import Attempts
from awbench.workers import in_prefix_order


def make_sender(
    settings: JudgeSettings,
    prompt_set: PromptSet,
    judge_id: str,
    price: Price | None,
    endpoints: Endpoints,
    role: str = "judge",
) -> Sender:
    """The sender of a judge backend; `price`: the judge model's list price (the Batch API's is half); `role`: whose
    endpoint it checks ("Turing judge", "pairwise judge")."""
    if settings.backend == "vllm":
        from awbench.judging.llm.vllm_judge import engine_judge

        return EngineSender(engine_judge(settings, prompt_set), settings.engine.batch_size)
    if settings.backend != "openai":
        raise SettingsError(
            f"--judge-backend {settings.backend}: two-choice questions go through the openai or the vllm judge backend"
        )
    direct = LLMJudge(settings, prompt_set, price, endpoints, role)
    if settings.batch:
        return BatchSender(direct, batch_price(price) if price else None, judge_id)
    return HTTPSender(direct, price, settings.concurrency)


class Through:
    """A sender through a rubric judge of the same backend: checked and closed with it, keeping no state."""

    def __init__(self, judge: Any) -> None:
        self.judge = judge

    def bind(self, directory: Path, notes: Notes) -> None:
        return None

    async def check(self) -> None:
        await self.judge.check()

    async def aclose(self) -> None:
        await self.judge.aclose()


class HTTPSender(Through):
    """Direct calls through the LLM judge's client, `concurrency` at a time, in prefix order (a trajectory's
    questions turn after turn, a sample's after its first: `awbench.prefix_order`)."""

    def __init__(self, direct: LLMJudge, price: Price | None, concurrency: int) -> None:
        super().__init__(direct)
        self.direct, self.price, self.concurrency = direct, price, concurrency

    def send(self, calls: list[Call]) -> AsyncIterator[tuple[Call, Reply]]:
        return in_prefix_order(calls, self.one, call_place, self.concurrency)

    async def one(self, call: Call, place: Place) -> tuple[Call, Reply]:
        """One call; a transient error is tried again (after the server's wait) within the call's attempts, by
        the policy every endpoint shares."""
        messages = call.question.messages
        attempts = Attempts(call.last, call.first, on_retry=self.direct.retried)

        async def send(attempt: int) -> Completion:
            return await self.direct.complete(messages, choice_seed(call.hash, attempt), place.trajectory)

        try:
            completion = await attempts.run(send)
        except Exception as error:
            seed = choice_seed(call.hash, attempts.number)
            failed = self.direct.failed_call(error, seed)  # raises what stops the run
            return call, Reply(attempts.number, seed, error=failed.error, transient=failed.transient, usage=Usage())
        cost = completion_cost(self.price, completion, estimate_prompt_tokens(messages)) if self.price else 0.0
        seed = choice_seed(call.hash, attempts.number)
        return call, Reply(attempts.number, seed, completion=completion, usage=completion.usage, cost_usd=cost)


class EngineSender(Through):
    """The in-process vLLM engine: a round's calls in prefix order, in batches of `batch_size`, in a worker
    thread."""

    def __init__(self, engine_judge: Any, batch_size: int) -> None:
        super().__init__(engine_judge)
        self.batch_size = batch_size

    async def send(self, calls: list[Call]) -> AsyncIterator[tuple[Call, Reply]]:
        calls = prefix_sorted(calls, call_place)
        for start in range(0, len(calls), self.batch_size):
            batch = calls[start : start + self.batch_size]
            seeds = [choice_seed(c.hash, c.first) for c in batch]
            results = await asyncio.to_thread(self.judge.complete, [c.question.messages for c in batch], seeds)
            for call, seed, result in zip(batch, seeds, results, strict=True):
                if isinstance(result, str):
                    yield call, Reply(call.first, seed, error=result)
                else:
                    yield call, Reply(call.first, seed, completion=result, usage=result.usage)


class BatchSender(Through):
    """The calls as requests of the Batch API runner, with the direct judge's bodies and error rules; `price`:
    the Batch API's."""

    def __init__(self, direct: LLMJudge, price: Price | None, judge_id: str) -> None:
        super().__init__(direct)
        self.direct, self.price = direct, price
        self.runner = BatchRunner(judge_id, direct.base_url, direct.key, direct.settings)

    def bind(self, directory: Path, notes: Notes) -> None:
        self.runner.bind(directory, notes)

    async def aclose(self) -> None:
        await self.runner.aclose()
        await super().aclose()

    async def send(self, calls: list[Call]) -> AsyncIterator[tuple[Call, Reply]]:
        runner = self.runner
        wanted = {custom_id(call): call for call in calls}
        await runner.resume(wanted.__contains__)
        flying = {cid for e in runner.open_entries() for cid in e.custom_ids}
        waiting = [call for cid, call in wanted.items() if cid not in flying]
        while True:
            waiting, failed = await self._submit(waiting)
            for item in failed:
                yield item
            if not runner.open_entries():
                if not waiting:
                    break
                continue  # refused with none of ours in flight: submitted again after a wait
            for ended in await runner.wait():
                if ended.refused:  # nothing ran: no attempt spent, asked again
                    waiting += [wanted[cid] for cid in ended.entry.custom_ids if cid in wanted]
                    continue
                lines = await runner.lines(ended)
                for cid in ended.entry.custom_ids:
                    if (call := wanted.get(cid)) is not None:
                        yield call, self.reply(call, lines.get(cid), ended.entry, ended.batch.status)
                runner.collected(ended)

    async def _submit(self, calls: list[Call]) -> tuple[list[Call], list[tuple[Call, Reply]]]:
        """The calls handed to the runner. Returns those left waiting for room under the enqueued-token limit,
        and the replies of those no batch can hold."""
        left: list[Call] = []
        failed: list[tuple[Call, Reply]] = []
        if not calls:
            return left, failed
        async with self.runner.submission() as submission:
            for call in calls:
                seed = choice_seed(call.hash, call.first)
                body = self.direct.request_body(call.question.messages, seed, None)  # the Batch API takes no key
                placed = await submission.add(BatchRequest(custom_id(call), body))
                if placed == WAITING:
                    left.append(call)
                elif placed != QUEUED:
                    failed.append((call, Reply(call.first, seed, error=placed, transient=False)))
        return left, failed

    def reply(self, call: Call, line: dict[str, Any] | None, entry: BatchEntry, status: str) -> Reply:
        """A result line read as the direct judge reads a call's outcome, priced at the Batch API's rate."""
        seed = choice_seed(call.hash, call.first)
        result = outcome(line, entry, status)
        if isinstance(result, Completion):
            prompt = estimate_prompt_tokens(call.question.messages)
            cost = completion_cost(self.price, result, prompt) if self.price else 0.0
            return Reply(call.first, seed, completion=result, usage=result.usage, cost_usd=cost)
        if isinstance(result, NotRun):
            return Reply(call.first, seed, error=str(result), transient=True)
        failed = self.direct.failed_call(result, seed)  # raises what stops the run
        return Reply(call.first, seed, error=failed.error, transient=failed.transient)


def call_place(call: Call) -> Place:
    return call.question.place


def custom_id(call: Call) -> str:
    return f"{call.question.key}|{call.first}|{call.hash[:16]}"

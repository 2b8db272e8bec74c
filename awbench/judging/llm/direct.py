"""The LLM judge: prompts to an OpenAI-compatible chat endpoint, verdicts parsed into 1..5 scores.

Per prediction it asks for `samples` independent verdicts. Each verdict has one budget of 1 + max_retries
calls, shared by transport retries (429, 5xx, timeouts, connection errors, malformed bodies) and re-asks of
unusable answers (no verdict, a verdict missing a dimension, an answer cut off by the token limit): a judge
returning malformed bodies costs at most that many calls. A refusal that retrying cannot fix (FATAL_STATUS)
stops the whole run at once, except a prompt too long for the judge's context window or refused for its
content, which fails that prediction only, as does a 5xx that says the request is invalid (`is_invalid_request`). How verdicts become a score: `awbench.judging.llm.verdict_records`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import aclosing
from operator import itemgetter
from pathlib import Path
from typing import Any

from awbench.backends.openai_api import refusal
from awbench.config import JudgeSettings
from awbench.domains import DIMENSIONS
from awbench.judging import BudgetExhausted, JudgeBase, Notes, llm_identity, llm_judge_id, request_place
from awbench.judging.batch.state import STATE_FILE, pending_batches
from awbench.judging.cost import (
    OUTPUT_TOKENS_PER_VERDICT,
    Budget,
    CacheEstimate,
    CostEstimate,
    Price,
    completion_cost,
    estimate_prompt_tokens,
    paced,
    usage_cost,
)
from awbench.judging.llm.prompts import (
    BUILTIN_SETS,
    PromptSet,
    protocol_request,
    reference_reader,
    render_messages,
    shown_prediction,
)
from awbench.judging.llm.verdict_parsing import PARSER_VERSION
from awbench.judging.llm.verdict_records import add_usage, better, combine, settled, verdict_record, verdict_seed
from awbench.prefix_order import prefix_sorted
from awbench.records import (
    JudgeRequest,
    JudgmentRecord,
    PredictionRecord,
    Sample,
    Usage,
    VerdictRecord,
    content_hash,
)
from awbench.transport.chat_client import ChatClient, Completion, EndpointError, StatusError
from awbench.transport.endpoints import (
    FATAL_STATUS,
    Endpoints,
    FatalAPIError,
    api_key,
    error_summary,
    is_content_refusal,
    is_context_overflow,
    is_openai_api,
    is_retryable,
    prompt_cache_key,
    routes_by_cache_key,
)
from awbench.transport.retry_policy import Attempts
from awbench.workers import PrefixQueue, worker_results

MAX_TEXT_CHARS = 300  # per strength/weakness in the structured-output schema
MAX_ITEMS = 5
KEY_OPTION = "--judge-api-key-env"

Messages = list[dict[str, str]]


def judge_base_url(settings: JudgeSettings) -> str | None:
    return settings.base_url or os.environ.get("OPENAI_BASE_URL")


def require_key(settings: JudgeSettings) -> str:
    """The judge's key, or MissingAPIKey: before any inference, not at the first judge call."""
    return api_key(judge_base_url(settings), settings.api_key_env, KEY_OPTION)


def prompt_label(prompt_set: PromptSet) -> str:
    if prompt_set.protocol == "reference":
        return "reference"
    return prompt_set.name if prompt_set.name in BUILTIN_SETS else "custom"


class LLMJudge(JudgeBase):
    kind = "llm"

    def __init__(
        self,
        settings: JudgeSettings,
        prompt_set: PromptSet,
        price: Price | None,
        endpoints: Endpoints,
        role: str = "judge",
    ) -> None:
        self.settings = settings
        self.role = role  # whose endpoint it is, in the check's lines and errors: "judge", "Turing judge"...
        self.prompt_set = prompt_set
        self.price = price
        self.budget = Budget(settings.max_cost)  # `bind` counts the evaluation's earlier spend in
        self.id = llm_judge_id(settings, prompt_label(prompt_set), prompt_set.sha256)
        self._identity = llm_identity(settings, prompt_set.sha256)
        self._base_url = judge_base_url(settings)
        self._official_api = is_openai_api(self._base_url)
        self._cache_keys = routes_by_cache_key(settings.prompt_cache_key, [self._base_url])
        self._limit = endpoints.limit(self._base_url, settings.concurrency, settings.tpm, settings.rpm)
        self._watch = endpoints.watch(self._base_url)
        self._endpoints = endpoints
        self._client: ChatClient | None = None

    @property
    def client(self) -> ChatClient:
        if self._client is None:
            self._client = ChatClient(self._base_url, self.key(), self.settings.request_timeout)
        return self._client

    def key(self) -> str:
        return require_key(self.settings)

    @property
    def base_url(self) -> str | None:
        return self._base_url

    def retried(self, error: BaseException) -> None:
        """A call that failed is sent again: counted for the endpoint (`Endpoints.retry_report`)."""
        self._watch.retry(error)

    @property
    def spent_usd(self) -> float:
        return self.budget.spent

    def bind(self, directory: Path, notes: Notes, recorded: Iterable[JudgmentRecord] = ()) -> None:
        """The cap covers the evaluation's earlier spend. Direct calls do not wait for the batches an earlier
        `--judge-batch` run of this evaluation left open."""
        self.budget = Budget(self.settings.max_cost, spent=recorded_spend(recorded))
        if open_ := pending_batches(directory):
            notes.warn(
                f"judge {self.id}: {open_} batch(es) of an earlier --judge-batch run are still open in "
                f"{directory / STATE_FILE}; these direct calls do not wait for them (add --judge-batch to collect them)"
            )

    async def check(self) -> None:
        """The judge's endpoint answers and takes the key, before anything is spent."""
        await self._endpoints.check(self.client, self.role, self.settings.check_timeout)

    def describe(self) -> dict[str, Any]:
        return prompt_description(self.prompt_set)

    def cache_key(self, request: JudgeRequest) -> str:
        return verdict_cache_key(self._identity, request)

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        return protocol_request(self.prompt_set, sample, prediction)

    def seed(self, key: str, index: int, attempt: int) -> int | None:
        """None under the reference protocol, whose judge stage sends no seed."""
        return None if self.prompt_set.protocol == "reference" else verdict_seed(key, index, attempt)

    def shown(self, request: JudgeRequest) -> str:
        """The prediction as the judge sees it: what the parser tells its quotes by."""
        return shown_prediction(self.prompt_set, request)

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """What judging `requests` would take, without sending anything (first attempts only, no re-asks), with
        what the provider's prompt cache would serve of them, sent in prefix order (`CacheEstimate`)."""
        samples = self.settings.samples
        prompt = 0
        cache = CacheEstimate()
        for place, request in prefix_sorted([(request_place(r), r) for r in requests], itemgetter(0)):
            messages = render_messages(self.prompt_set, request)
            prompt += estimate_prompt_tokens(messages) * samples
            cache.add(place, messages, samples)
        calls = len(requests) * samples
        completion = calls * OUTPUT_TOKENS_PER_VERDICT
        estimate = CostEstimate(
            calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=usage_cost(self.price, prompt, completion, cache.cached_tokens) if self.price else None,
            cached_tokens=cache.cached_tokens,
            uncached_cost_usd=usage_cost(self.price, prompt, completion) if self.price else None,
        )
        return paced(estimate, self.settings.max_tokens, self.settings.tpm, self.settings.rpm)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Yield records in completion order, the requests sent in prefix order as they come (`PrefixQueue`: a
        trajectory's turns one after another). With `max_cost`, no request starts once the spend so far, plus
        the most the requests in flight and this one can be billed (`_request_ceiling`), would pass the cap: the
        ones in flight finish and are yielded, then BudgetExhausted is raised."""
        queue: PrefixQueue[JudgeRequest] = PrefixQueue(request_place)
        stopped = False

        async def work(put: Callable[[JudgmentRecord], None]) -> None:
            nonlocal stopped
            while (entry := await queue.get()) is not None:
                request = entry.item
                messages = render_messages(self.prompt_set, request)  # rendered once, when sent
                ceiling = self._request_ceiling(messages)
                if not self.budget.reserve(ceiling):
                    stopped = True
                    queue.stop()
                    queue.done(entry)
                    return
                cost = 0.0
                try:
                    record = await self._judge_one(request, messages, entry.place.trajectory)
                    cost = record.cost_usd or 0.0
                finally:
                    self.budget.settle(ceiling, cost)
                    queue.done(entry)
                put(record)

        filling = asyncio.ensure_future(queue.fill(requests))
        try:
            async with aclosing(worker_results(self.settings.concurrency, work)) as records:
                async for record in records:  # closed at once when the caller stops early: the workers cancelled
                    yield record
            if filling.done():
                filling.result()  # the feed's own failure, if any
        finally:
            filling.cancel()
            await asyncio.gather(filling, return_exceptions=True)
        if stopped:
            raise BudgetExhausted(self.budget.why())

    def _request_ceiling(self, messages: Messages) -> float:
        """The most a request's first calls can be billed: each verdict's prompt uncached and a completion up to
        --judge-max-tokens (a reasoning judge's thinking may take it all; a typical one would let calls in flight
        pass the cap together: 15 answers of 20,000 tokens at once spent 3.45 times it)."""
        if self.price is None:
            return 0.0
        return self.settings.samples * usage_cost(
            self.price, estimate_prompt_tokens(messages), self.settings.max_tokens
        )

    async def _judge_one(self, request: JudgeRequest, messages: Messages, trajectory: str) -> JudgmentRecord:
        """The request's verdicts: the first alone, then the others together, which find its prompt cached."""
        key = self.cache_key(request)
        outcomes = [await self.ask(messages, key, 0, request, trajectory)]
        tasks = [
            asyncio.ensure_future(self.ask(messages, key, i, request, trajectory))
            for i in range(1, self.settings.samples)
        ]
        try:
            outcomes += await asyncio.gather(*tasks)
        except BaseException:  # the first failure (a FatalAPIError) is the one to report; the others stop
            for task in tasks:
                task.cancel()
            raise
        cost = sum(c for _, c in outcomes) if self.price else None
        return combine(request, key, [v for v, _ in outcomes], cost)

    async def ask(
        self,
        messages: Messages,
        key: str,
        index: int,
        request: JudgeRequest,
        trajectory: str,
        first_attempt: int = 1,
        best: VerdictRecord | None = None,
        usage: Usage | None = None,
        cost: float = 0.0,
    ) -> tuple[VerdictRecord, float]:
        """One verdict within its call budget. Returns it with the cost of all its calls; its usage is their
        sum, and it keeps the best answer (complete > partial > unparsed or truncated > error). A verdict whose
        first attempts were made elsewhere (the batch judge's re-asks sent directly) goes on from
        `first_attempt`, with the best answer, usage and cost of those attempts."""
        total = usage or Usage()
        prompt_estimate = estimate_prompt_tokens(messages)
        shown, reader = self.shown(request), reference_reader(self.prompt_set, request)
        attempts = Attempts(self.settings.max_retries + 1, first_attempt, on_retry=self.retried)

        async def call(attempt: int) -> VerdictRecord:
            """One call's verdict, added to the best so far; a transient failure is raised for the policy."""
            nonlocal best, total, cost
            seed = self.seed(key, index, attempt)
            try:
                completion = await self.complete(messages, seed, trajectory)
            except Exception as error:
                verdict = self.failed_call(error, seed)
                if verdict.transient:
                    raise
                call_usage, call_cost = Usage(), 0.0
            else:
                verdict = verdict_record(
                    completion.content,
                    completion.reasoning,
                    completion.finish_reason,
                    seed,
                    shown,
                    reader,
                    attempt,
                )
                call_usage = completion.usage
                call_cost = completion_cost(self.price, completion, prompt_estimate) if self.price else 0.0
            total = add_usage(total, call_usage)
            if verdict.status != "error":
                cost += call_cost
            best = better(best, verdict)
            return verdict

        def again(verdict: VerdictRecord) -> bool:
            assert best is not None  # the call that made `verdict` kept the better of the two
            return not settled(best, attempts.number) and verdict.status != "error"  # an error here is permanent

        try:
            await attempts.run(call, again)
        except EndpointError as error:  # a transient failure at the end of the budget
            best = better(best, self.failed_call(error, self.seed(key, index, attempts.number)))
        assert best is not None
        update = {"attempts": attempts.number, "usage": total, "same_error_attempts": attempts.same_error}
        return best.model_copy(update=update), cost

    def failed_call(self, error: Exception, seed: int | None) -> VerdictRecord:
        """A call that brought no answer: transient ones are retried within the budget; a context overflow
        or a content refusal fails this prediction; other refusals stop the run."""
        if isinstance(error, StatusError) and not is_retryable(error):
            if is_context_overflow(error) or is_content_refusal(error):
                return VerdictRecord(status="error", error=error_summary(error), seed=seed)
            if error.status in FATAL_STATUS:
                raise FatalAPIError(refusal("judge", self.client.base_url, error)) from None
            return VerdictRecord(status="error", error=error_summary(error), seed=seed)
        if is_retryable(error):
            return VerdictRecord(status="error", error=error_summary(error)[:500], transient=True, seed=seed)
        raise error  # EndpointDown stopping the run, or a bug

    async def complete(self, messages: Messages, seed: int | None, trajectory: str) -> Completion:
        """One call through the shared rate limit, watched for a dead endpoint (the choice judge sends by it too)."""
        try:
            completion = await self._limit.chat(self.client, self.request_body(messages, seed, trajectory))
        except Exception as error:
            self._watch.record(error)
            raise
        self._watch.record(None)
        return completion

    def request_body(self, messages: Messages, seed: int | None, trajectory: str | None) -> dict[str, Any]:
        """The chat body of a request about `trajectory` (its prompt_cache_key, when they are sent; None for the
        Batch API's requests, which take none: docs/batch.md)."""
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature}
        if seed is not None:
            body["seed"] = seed
        if self._cache_keys and trajectory is not None:
            body["prompt_cache_key"] = prompt_cache_key(trajectory)
        # The OpenAI API's reasoning models refuse `max_tokens` and want `max_completion_tokens`; other
        # OpenAI-compatible servers (vLLM, SGLang, most providers) all take `max_tokens`.
        body["max_completion_tokens" if self._official_api else "max_tokens"] = s.max_tokens
        if s.reasoning_effort:
            body["reasoning_effort"] = s.reasoning_effort
        if s.stop:
            body["stop"] = s.stop
        if s.structured:
            schema = verdict_schema(bounded_strings=not self._official_api)
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": schema},
            }
        return body | s.extra_body


def recorded_spend(records: Iterable[JudgmentRecord]) -> float:
    """What an evaluation's records cost: where `--max-cost` starts from when it is resumed."""
    return sum(record.cost_usd or 0.0 for record in records)


def prompt_description(prompt_set: PromptSet) -> dict[str, Any]:
    """What an LLM judge's judge.json records of its prompts and parser (HTTP, batch or in-process alike)."""
    return {**prompt_set.described(), "parser_version": PARSER_VERSION}


def verdict_cache_key(identity: dict[str, Any], request: JudgeRequest) -> str:
    """The judge's identity, the parser, and the inputs the prompt is rendered from (the sample's content hash
    and the prediction): no prompt needs rendering to know whether a verdict can be reused."""
    prediction = hashlib.sha256(request.prediction.encode()).hexdigest()
    return content_hash(
        {"judge": identity, "parser": PARSER_VERSION, "sample": request.sample.hash, "prediction": prediction}
    )


def verdict_schema(bounded_strings: bool = True) -> dict[str, Any]:
    """The verdict as a strict JSON schema. OpenAI's strict mode rejects `maxLength`, so the OpenAI API
    gets strings bounded only by the prompt; constrained decoders (vLLM) take the bound."""
    text: dict[str, Any] = {"type": "string", "maxLength": MAX_TEXT_CHARS} if bounded_strings else {"type": "string"}
    texts = {"type": "array", "items": text, "maxItems": MAX_ITEMS}
    score = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    scores = {
        "type": "object",
        "properties": {d: score for d in DIMENSIONS},
        "required": list(DIMENSIONS),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"strengths": texts, "weaknesses": texts, "scores": scores},
        "required": ["strengths", "weaknesses", "scores"],
        "additionalProperties": False,
    }

"""The LLM judge: rubric prompts to an OpenAI-compatible chat endpoint, verdicts parsed into 1..5 scores.

Per prediction it asks for `samples` independent verdicts; each verdict is re-asked up to `max_retries`
times while the answer is unusable (no parseable verdict, only some dimensions, a malformed response body).
Transport failures (429, 5xx, timeouts, connection errors) are retried underneath by `with_retries`;
a refusal that retrying cannot fix (FATAL_STATUS) stops the whole run at once, except a prompt too long for
the judge's context window, which fails that prediction only.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import os
import statistics
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import urlparse

import openai

from awbench.config import JudgeSettings
from awbench.domains import DIMENSIONS
from awbench.judging import BudgetExhausted
from awbench.judging.cost import (
    OUTPUT_TOKENS_PER_VERDICT,
    CostEstimate,
    Price,
    call_cost,
    estimate_prompt_tokens,
    price_for,
    tokens_for_chars,
    usage_cost,
)
from awbench.judging.prompts import PromptSet, load_prompt_set, render_messages
from awbench.judging.verdict import PARSER_VERSION, parse_verdict
from awbench.openai_client import (
    FATAL_STATUS,
    FatalAPIError,
    error_summary,
    is_context_overflow,
    make_client,
    split_reasoning,
    with_retries,
)
from awbench.records import JudgeRequest, JudgmentRecord, Usage, VerdictRecord, content_hash

TRANSPORT_RETRIES = 6
MAX_TEXT_CHARS = 300  # per strength/weakness in the structured-output schema
MAX_ITEMS = 5


class CostUnknown(ValueError):
    """`max_cost` was given but the judge model's price is not known, so the cap cannot be enforced."""


def create(settings: JudgeSettings) -> LLMJudge:
    """Raises MissingAPIKey when the OpenAI API (no base URL) is used without a key, PromptError for bad prompts."""
    prompt_set = load_prompt_set(settings.prompts, settings.template)
    base_url = settings.base_url or os.environ.get("OPENAI_BASE_URL")
    price = price_for(settings.model, settings.price_in, settings.price_out)
    if settings.max_cost is not None and price is None:
        raise CostUnknown(
            f"--max-cost needs the price of judge model {settings.model!r}: "
            "give --judge-price-in and --judge-price-out (USD per million tokens)"
        )
    # The client is made on first use, so a dry run (estimate only) needs no API key.
    connect = functools.partial(make_client, base_url, settings.api_key_env, settings.request_timeout)
    return LLMJudge(settings, prompt_set, connect, official_api=_is_official_openai(base_url), price=price)


def _is_official_openai(base_url: str | None) -> bool:
    return base_url is None or urlparse(base_url).hostname == "api.openai.com"


class LLMJudge:
    kind = "llm"

    def __init__(
        self,
        settings: JudgeSettings,
        prompt_set: PromptSet,
        connect: Callable[[], openai.AsyncOpenAI],
        official_api: bool,
        price: Price | None,
    ) -> None:
        self.settings = settings
        self.prompt_set = prompt_set
        self.price = price
        self.spent_usd = 0.0  # over this judge's lifetime; set it to earlier spend to make max_cost cover a resumed run
        self._connect = connect
        self._client: openai.AsyncOpenAI | None = None
        self._official_api = official_api
        self._semaphore = asyncio.Semaphore(settings.concurrency)

    @property
    def client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            self._client = self._connect()
        return self._client

    def describe(self) -> dict[str, Any]:
        return {"prompt_set": self.prompt_set.name, "prompt_sha256": self.prompt_set.sha256, "parser_version": PARSER_VERSION}

    def cache_key(self, request: JudgeRequest) -> str:
        return self._cache_key(render_messages(self.prompt_set, request))

    def _cache_key(self, messages: list[dict[str, str]]) -> str:
        s = self.settings
        return content_hash(
            {
                "model": s.model,
                "temperature": s.temperature,
                "max_tokens": s.max_tokens,
                "reasoning_effort": s.reasoning_effort,
                "extra_body": s.extra_body,
                "structured": s.structured,
                "samples": s.samples,
                "prompt_sha256": self.prompt_set.sha256,
                "parser_version": PARSER_VERSION,
                "messages": messages,
            }
        )

    def estimate(self, requests: list[JudgeRequest]) -> CostEstimate:
        """What judging `requests` would take, without sending anything (first attempts only, no re-asks)."""
        prompt = sum(estimate_prompt_tokens(render_messages(self.prompt_set, r)) for r in requests) * self.settings.samples
        calls = len(requests) * self.settings.samples
        completion = calls * OUTPUT_TOKENS_PER_VERDICT
        cost = usage_cost(self.price, prompt, completion) if self.price else None
        return CostEstimate(calls=calls, prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()

    async def judge(self, requests: list[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Yield records in completion order. With `max_cost`, no request starts once the spend so far, plus
        the estimates of requests in flight and of this one, would pass the cap: the ones in flight finish
        and are yielded, then BudgetExhausted is raised."""
        pending = deque(requests)
        results: asyncio.Queue[JudgmentRecord | BaseException | None] = asyncio.Queue()
        reserved = 0.0
        stopped = False

        async def worker() -> None:
            nonlocal reserved, stopped
            try:
                while pending and not stopped:
                    request = pending[0]
                    messages = render_messages(self.prompt_set, request)
                    estimate = self._request_estimate(messages)
                    cap = self.settings.max_cost
                    if cap is not None and self.spent_usd + reserved + estimate > cap:
                        stopped = True
                        break
                    pending.popleft()
                    reserved += estimate
                    try:
                        record = await self._judge_one(request, messages)
                    finally:
                        reserved -= estimate
                    self.spent_usd += record.cost_usd or 0.0
                    results.put_nowait(record)
            except Exception as error:  # FatalAPIError, or a bug: the consumer re-raises it
                results.put_nowait(error)
            finally:
                results.put_nowait(None)

        workers = [asyncio.create_task(worker()) for _ in range(min(self.settings.concurrency, len(requests)))]
        try:
            running = len(workers)
            while running:
                item = await results.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    raise item
                else:
                    yield item
        finally:  # on error, or when the caller stops iterating early
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
        if stopped:
            raise BudgetExhausted(
                f"judge spend would pass the cap: spent ${self.spent_usd:.4f} of --max-cost ${self.settings.max_cost:.4f}; "
                f"{len(pending)} of {len(requests)} predictions not judged yet"
            )

    def _request_estimate(self, messages: list[dict[str, str]]) -> float:
        if self.price is None:
            return 0.0
        return self.settings.samples * usage_cost(self.price, estimate_prompt_tokens(messages), OUTPUT_TOKENS_PER_VERDICT)

    async def _judge_one(self, request: JudgeRequest, messages: list[dict[str, str]]) -> JudgmentRecord:
        key = self._cache_key(messages)
        tasks = [asyncio.ensure_future(self._verdict(messages, key, index)) for index in range(self.settings.samples)]
        try:
            outcomes = await asyncio.gather(*tasks)
        except BaseException:  # the first failure (a FatalAPIError) is the one to report; the others stop
            for task in tasks:
                task.cancel()
            raise
        verdicts = [verdict for verdict, _ in outcomes]
        costs = [cost for _, cost in outcomes]
        return combine(request.key, request.domain, key, verdicts, sum(costs) if self.price else None)

    async def _verdict(self, messages: list[dict[str, str]], key: str, index: int) -> tuple[VerdictRecord, float]:
        """One verdict, re-asked while unusable. Returns it with the cost of all its attempts; its usage is
        their sum, and it keeps the best attempt (complete > partial with most dimensions > unparsed > error)."""
        best: VerdictRecord | None = None
        usage = Usage()
        cost = 0.0
        prompt_estimate = estimate_prompt_tokens(messages)
        for attempt in range(1, self.settings.max_retries + 2):
            seed = _seed(key, index, attempt)
            try:
                completion = await self._complete(messages, seed)
                choice = completion.choices[0]
                content, reasoning = split_reasoning(choice.message)
                if not isinstance(content, (str, type(None))):
                    raise TypeError(f"message content is {type(content).__name__}, not text")
            except openai.APIError as error:  # transport retries are spent: asking again would not help
                verdict = VerdictRecord(status="error", error=self._scrub(error_summary(error)), seed=seed)
                return self._finish(verdict, best, attempt, usage), cost
            except (ValueError, TypeError, AttributeError, IndexError) as error:  # a malformed body: ask again
                verdict, call_usage, output_chars = self._malformed(error, seed), Usage(), 0
            else:
                verdict = verdict_record(content, reasoning, choice.finish_reason, seed)
                call_usage, output_chars = _usage(completion.usage), len(content or "") + len(reasoning or "")
            usage = _add_usage(usage, call_usage)
            if self.price:
                cost += call_cost(self.price, call_usage, prompt_estimate, tokens_for_chars(output_chars))
            if best is None or _rank(verdict) >= _rank(best):
                best = verdict
            if best.status == "complete":
                break
        assert best is not None
        return best.model_copy(update={"attempts": attempt, "usage": usage}), cost

    def _finish(self, verdict: VerdictRecord, best: VerdictRecord | None, attempt: int, usage: Usage) -> VerdictRecord:
        """Stop on a transport error: an earlier usable attempt still beats the error."""
        kept = best if best is not None and _rank(best) > _rank(verdict) else verdict
        return kept.model_copy(update={"attempts": attempt, "usage": usage})

    def _malformed(self, error: Exception, seed: int) -> VerdictRecord:
        message = self._scrub(f"malformed response: {type(error).__name__}: {error}")[:500]
        return VerdictRecord(status="error", error=message, seed=seed)

    async def _complete(self, messages: list[dict[str, str]], seed: int) -> Any:
        async with self._semaphore:
            try:
                return await with_retries(
                    lambda: self.client.chat.completions.create(**self._request_args(messages, seed)),
                    max_retries=TRANSPORT_RETRIES,
                )
            except openai.APIStatusError as error:
                # A trajectory too long for the judge's context fails that prediction alone, not the run.
                if error.status_code in FATAL_STATUS and not is_context_overflow(error):
                    raise FatalAPIError(self._scrub(error_summary(error))) from None
                raise

    def _request_args(self, messages: list[dict[str, str]], seed: int) -> dict[str, Any]:
        s = self.settings
        args: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature, "seed": seed}
        # The OpenAI API's reasoning models refuse `max_tokens` and want `max_completion_tokens`; other
        # OpenAI-compatible servers (vLLM, SGLang, most providers) all take `max_tokens`.
        args["max_completion_tokens" if self._official_api else "max_tokens"] = s.max_tokens
        if s.reasoning_effort:
            args["reasoning_effort"] = s.reasoning_effort
        if s.structured:
            schema = verdict_schema(bounded_strings=not self._official_api)
            json_schema = {"name": "verdict", "strict": True, "schema": schema}
            args["response_format"] = {"type": "json_schema", "json_schema": json_schema}
        if s.extra_body:
            args["extra_body"] = s.extra_body
        return args

    def _scrub(self, text: str) -> str:
        """Servers sometimes echo the key in their errors; it must not reach records or messages."""
        key = self._client.api_key if self._client else None
        return text.replace(key, "***") if key and key != "EMPTY" else text


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


def verdict_record(content: str | None, reasoning: str | None, finish_reason: str | None, seed: int | None) -> VerdictRecord:
    parsed = parse_verdict(content or "")
    flags = [*parsed.flags, "truncated"] if finish_reason == "length" else parsed.flags
    return VerdictRecord(
        status=parsed.status,
        scores=parsed.scores,
        strengths=parsed.strengths,
        weaknesses=parsed.weaknesses,
        flags=flags,
        raw=content,
        reasoning=reasoning,
        error=None if parsed.status == "complete" else parsed.reason,
        seed=seed,
    )


def combine(sample_key: str, domain: str, cache_key: str, verdicts: list[VerdictRecord], cost: float | None) -> JudgmentRecord:
    """Per-dimension means over the usable verdicts; score = (mean of those means - 1) / 4 * 100.
    ok: every verdict complete; partial: some usable but not all complete; failed: none usable."""
    usable = [v for v in verdicts if v.status in ("complete", "partial")]
    dimensions = {
        dim: statistics.fmean(given)
        for dim in DIMENSIONS
        if (given := [v.scores[dim] for v in usable if dim in v.scores])
    }
    score = (statistics.fmean(dimensions.values()) - 1) / 4 * 100 if dimensions else None
    if not usable:
        status, error = "failed", "no usable verdict: " + "; ".join(dict.fromkeys(v.error or v.status for v in verdicts))
    else:
        status, error = ("ok" if all(v.status == "complete" for v in verdicts) else "partial"), None
    return JudgmentRecord(
        key=sample_key,
        domain=domain,
        judge="llm",
        cache_key=cache_key,
        status=status,
        score=score,
        dimensions=dimensions,
        verdicts=verdicts,
        error=error,
        cost_usd=cost,
    )


def consistency_stats(records: list[JudgmentRecord]) -> dict[str, float]:
    """How much a judge agrees with itself over K verdicts per prediction. A verdict's total is the sum of
    its five scores (5..25); only complete verdicts count, and only predictions with at least two of them.
    Returns samples, mean_total_std (population standard deviation of the totals, averaged over samples)
    and share_within_one_point (samples whose totals span at most one point); without such samples, only
    samples = 0."""
    spreads = []
    for record in records:
        totals = [sum(v.scores.values()) for v in record.verdicts if v.status == "complete"]
        if len(totals) >= 2:
            spreads.append((statistics.pstdev(totals), max(totals) - min(totals)))
    if not spreads:
        return {"samples": 0}
    return {
        "samples": len(spreads),
        "mean_total_std": statistics.fmean(std for std, _ in spreads),
        "share_within_one_point": sum(span <= 1 for _, span in spreads) / len(spreads),
    }


def _seed(key: str, index: int, attempt: int) -> int:
    """Distinct per verdict and per re-ask (the same seed would make a seeded server repeat a bad answer)."""
    digest = hashlib.sha256(f"{key}/{index}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _rank(verdict: VerdictRecord) -> tuple[int, int]:
    order = {"complete": 3, "partial": 2, "unparsed": 1, "error": 0}
    return order[verdict.status], len(verdict.scores)


def _usage(reported: Any) -> Usage:
    if reported is None:
        return Usage()
    prompt_details = getattr(reported, "prompt_tokens_details", None)
    completion_details = getattr(reported, "completion_tokens_details", None)
    return Usage(
        prompt_tokens=getattr(reported, "prompt_tokens", None),
        completion_tokens=getattr(reported, "completion_tokens", None),
        cached_tokens=getattr(prompt_details, "cached_tokens", None),
        reasoning_tokens=getattr(completion_details, "reasoning_tokens", None),
    )


def _add_usage(a: Usage, b: Usage) -> Usage:
    def add(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(
        prompt_tokens=add(a.prompt_tokens, b.prompt_tokens),
        completion_tokens=add(a.completion_tokens, b.completion_tokens),
        cached_tokens=add(a.cached_tokens, b.cached_tokens),
        reasoning_tokens=add(a.reasoning_tokens, b.reasoning_tokens),
    )

"""The retry policy (awbench.transport.retry_policy) on its own: which outcomes are asked again, which use an
attempt, how long it waits and what it returns or raises at the end of the budget. The calls are plain
coroutines that return or raise the transport's own errors; the policy against real servers is in
test_rate_control.py, test_backend_openai.py, test_llm_judge.py and test_reliability_faults.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from awbench.transport.chat_client import ConnectionFailed, StatusError
from awbench.transport.retry_policy import MAX_RATE_REFUSALS, Attempts, wait_before_retry


def calls_of(outcomes: list[object]) -> tuple[list[int], Callable[[int], Awaitable[str]]]:
    """A call that returns or raises `outcomes` in order, and the attempt numbers it was called with."""
    seen: list[int] = []
    pending = iter(outcomes)

    async def call(attempt: int) -> str:
        seen.append(attempt)
        outcome = next(pending)
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, str)
        return outcome

    return seen, call


def refusal(endpoint_answers: int | None, code: str | None = "rate_limit_exceeded") -> StatusError:
    error = StatusError(429, "Rate limit reached", code)
    error.endpoint_answers = endpoint_answers
    return error


def test_a_transient_failure_uses_an_attempt_and_the_budget_bounds_the_calls() -> None:
    seen, call = calls_of([StatusError(500, "boom"), StatusError(502, "bad gateway"), "never"])
    attempts = Attempts(2)
    with pytest.raises(StatusError) as raised:
        asyncio.run(attempts.run(call))
    assert raised.value.status == 502 and seen == [1, 2] and attempts.number == 2  # the last error, as itself


def test_an_error_that_is_not_transient_is_raised_at_once() -> None:
    seen, call = calls_of([StatusError(400, "bad request"), "never"])
    with pytest.raises(StatusError, match="bad request"):
        asyncio.run(Attempts(5).run(call))
    assert seen == [1]


def test_rate_limit_refusals_are_free_while_the_endpoint_answers_others() -> None:
    """Each refusal came after the endpoint had answered more requests: sent again under the same attempt."""
    seen, call = calls_of([refusal(0), refusal(3), refusal(7), "ok"])
    attempts = Attempts(1)
    assert asyncio.run(attempts.run(call)) == "ok"
    assert seen == [1, 1, 1, 1] and attempts.number == 1


def test_refusals_with_nothing_answered_between_them_use_attempts() -> None:
    """The first refusal of an attempt is free, the next with the same count of answers uses the attempt."""
    seen, call = calls_of([refusal(4), refusal(4), refusal(4), refusal(4), "ok"])
    attempts = Attempts(3)
    assert asyncio.run(attempts.run(call)) == "ok"
    assert seen == [1, 1, 2, 2, 3]


def test_free_refusals_are_bounded_per_attempt() -> None:
    outcomes: list[object] = [refusal(i) for i in range(MAX_RATE_REFUSALS + 1)]
    seen, call = calls_of(outcomes)
    with pytest.raises(StatusError):
        asyncio.run(Attempts(1).run(call))
    assert len(seen) == MAX_RATE_REFUSALS + 1


def test_a_refusal_not_seen_by_a_rate_control_or_out_of_credit_is_an_ordinary_failure() -> None:
    seen, call = calls_of([refusal(None), refusal(5, code="insufficient_quota"), "ok"])
    assert asyncio.run(Attempts(3).run(call)) == "ok"
    assert seen == [1, 2, 3]


def test_results_asked_again_share_the_budget_and_the_last_is_returned() -> None:
    seen, call = calls_of(["unparsed", ConnectionFailed("reset"), "partial", "never"])
    attempts = Attempts(4, first=2)  # attempt 1 was made elsewhere: 2, 3 and 4 are left
    assert asyncio.run(attempts.run(call, again=lambda answer: answer != "complete")) == "partial"
    assert seen == [2, 3, 4] and attempts.number == 4


def test_retry_after_is_waited_for_and_without_it_a_jittered_backoff() -> None:
    told = StatusError(503, "busy", retry_after="0.3")
    assert wait_before_retry(told, 1) == 0.3
    assert all(0 <= wait_before_retry(StatusError(503, "busy"), 3) <= 2.0 for _ in range(200))
    _, call = calls_of([told, "ok"])
    started = time.perf_counter()
    assert asyncio.run(Attempts(2).run(call)) == "ok"
    assert time.perf_counter() - started >= 0.29

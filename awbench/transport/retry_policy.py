"""The one waiting and retrying policy for every request to a chat endpoint, the candidate's and the judge's,
written with tenacity:

- a request has a budget of calls (`1 + --max-retries`, `1 + --judge-max-retries`), shared by transport
  retries and, for the judge, re-asks of unusable answers;
- a transient failure (`is_retryable`: 429, 5xx, timeouts, connection errors, malformed bodies) uses an attempt
  and waits what the server says (`Retry-After`), else a full-jitter backoff (`backoff_seconds`);
- a refusal over a rate limit (`is_rate_limited`) is sent again at once and uses no attempt, as long as the
  endpoint answered other requests since this request's previous refusal, and at most MAX_RATE_REFUSALS times
  in a row: the endpoint's `RateControl` (`awbench.transport.rate_control`) holds the next send until the limit
  allows it, so that wait is the rate control's, not a backoff. An endpoint that refuses everything (a spent
  quota answered as a rate limit) costs attempts like any transient failure.

It also knows whether every call of a request failed with one error (`same_error`, numbers aside, as the
end-of-run summary groups errors): such a failure is likely to recur, whatever a rerun would retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from tenacity import DoAttempt, DoSleep, RetryCallState, Retrying

from awbench.safe_text import numbers_masked
from awbench.transport.chat_client import StatusError
from awbench.transport.endpoints import (
    backoff_seconds,
    error_summary,
    is_rate_limited,
    is_retryable,
    retry_after_seconds,
)

MAX_RATE_REFUSALS = 20  # rate-limit refusals of one request in a row sent again for free; the next one counts

T = TypeVar("T")


def wait_before_retry(error: BaseException, attempt: int) -> float:
    """After the `attempt`-th call failed transiently: the server's `Retry-After`, else a full-jitter backoff."""
    server_says = retry_after_seconds(error)
    return server_says if server_says is not None else backoff_seconds(attempt)


def never(_: object) -> bool:
    return False


class Attempts:
    """One request's calls within its budget. `run(call, again)` calls `call(attempt)` (attempt numbers start
    at `first`: a verdict whose first attempts were made elsewhere goes on from there) until it returns a result
    that `again` does not want asked again, or raises what is not retried; past the budget it returns the last
    result or raises the last error. `number` is the attempt made last."""

    def __init__(self, budget: int, first: int = 1, on_retry: Callable[[BaseException], None] | None = None) -> None:
        self.budget = budget
        self.number = first
        self._on_retry = on_retry  # told of each failed call that is sent again (the endpoint's tally)
        self._first = first
        self._errors: set[tuple[int | None, str]] = set()  # the failed calls' statuses and errors, numbers masked
        self._answered = False  # a call returned a result
        self._free = False  # the last outcome is a rate-limit refusal sent again without using an attempt
        self._refusals = 0  # such refusals of the current attempt
        self._answers_then: int | None = None  # the endpoint's answers at the previous one

    async def run(self, call: Callable[[int], Awaitable[T]], again: Callable[[T], bool] = never) -> T:
        # `again` goes with the state, not the Attempts: it may refer to the Attempts (a judge's re-ask reads its
        # number), and a cycle per request would be left to the garbage collector
        state = RetryCallState(_RETRYING, fn=None, args=(self, again), kwargs={})
        try:
            result = await call(self.number)
        except Exception as error:
            self._failed(error)
            state.set_exception((type(error), error, error.__traceback__))
        else:
            self._answered = True
            if not again(result):
                return result  # nearly every request: tenacity has nothing to decide, its state no outcome
            state.set_result(result)
        _RETRYING.begin()  # tenacity's statistics, kept per thread: unused here, but its steps count in them
        while True:
            step = _RETRYING.iter(state)
            if isinstance(step, DoAttempt):
                try:
                    state.set_result(await call(self.number))
                    self._answered = True
                except Exception as error:
                    self._failed(error)
                    state.set_exception((type(error), error, error.__traceback__))
            elif isinstance(step, DoSleep):
                state.prepare_for_next_attempt()
                if step > 0:
                    await asyncio.sleep(step)
            else:
                done: T = step
                return done

    @property
    def same_error(self) -> int | None:
        """How many attempts were made, when every call failed with one error (numbers aside); None when a call
        answered, the errors differ, or the first attempts were made elsewhere (their errors are not known here)."""
        if self._answered or len(self._errors) != 1 or self._first != 1:
            return None
        return self.number

    def _failed(self, error: Exception) -> None:
        status = error.status if isinstance(error, StatusError) else None  # a 502 is not a 503 with numbers aside
        self._errors.add((status, numbers_masked(error_summary(error))))

    def _retry(self, state: RetryCallState) -> bool:
        outcome = state.outcome
        assert outcome is not None
        error = outcome.exception()
        if error is not None:
            self._free = self._refused_for_free(error)
            return self._free or is_retryable(error)
        self._free = False
        again: Callable[[Any], bool] = state.args[1]
        return again(outcome.result())

    def _refused_for_free(self, error: BaseException) -> bool:
        if not isinstance(error, StatusError) or error.endpoint_answers is None or not is_rate_limited(error):
            return False
        if self._refusals >= MAX_RATE_REFUSALS or error.endpoint_answers == self._answers_then:
            return False  # nothing answered since this request's last refusal: a quota, not a rate
        self._refusals += 1
        self._answers_then = error.endpoint_answers
        return True

    def _wait(self, state: RetryCallState) -> float:
        outcome = state.outcome
        if self._free or outcome is None or not outcome.failed:
            return 0.0  # a rate-limit refusal waits in the endpoint's RateControl; a re-ask needs no wait
        error = outcome.exception()
        assert error is not None
        return wait_before_retry(error, self.number)

    def _stop(self, state: RetryCallState) -> bool:
        return not self._free and self.number >= self.budget

    def _next(self, state: RetryCallState) -> None:
        outcome = state.outcome
        if self._on_retry is not None and outcome is not None and outcome.failed:
            self._on_retry(outcome.exception())  # type: ignore[arg-type]  # failed: an exception
        if not self._free:
            self.number += 1
            self._refusals, self._answers_then = 0, None


def _attempts(state: RetryCallState) -> Attempts:
    attempts: Attempts = state.args[0]
    return attempts


def _last_outcome(state: RetryCallState) -> object:
    """Past the budget: the last result, or the last error raised as itself (not wrapped in a RetryError)."""
    assert state.outcome is not None
    return state.outcome.result()


# tenacity's decisions (retry, wait, stop), each the request's own (`Attempts`, the state's argument), its state
# machine driven by `Attempts.run`. One Retrying for every request: its steps run without awaiting, so requests
# never interleave in them, and a Retrying per request (which refers to itself through its step list) would leave
# a reference cycle per request for the garbage collector; AsyncRetrying would also wrap each strategy in a
# coroutine at every step (docs/performance.md, section 5).
_RETRYING = Retrying(
    retry=lambda state: _attempts(state)._retry(state),
    wait=lambda state: _attempts(state)._wait(state),
    stop=lambda state: _attempts(state)._stop(state),
    before_sleep=lambda state: _attempts(state)._next(state),
    retry_error_callback=_last_outcome,
)

"""What the retry policy costs per request: the CPU of `awbench.transport.retry_policy.Attempts` around a call that
answers at once, beside the hand-written loop it replaced and tenacity's own `AsyncRetrying`, in one process.

    python bench/retry_cpu.py [--requests 20000] [--repeat 5]

Each way makes `--requests` requests of one call each (what nearly every request is), best of `--repeat`
rounds of time.process_time. What a whole request costs the client (about 1.3-2.5 ms, section 4 of
docs/performance.md) is measured by bench/full_run.py; this isolates the part the policy adds. Asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable

from _common import machine, table
from tenacity import AsyncRetrying, RetryCallState, stop_after_attempt

from awbench.transport.endpoints import is_retryable
from awbench.transport.retry_policy import Attempts, wait_before_retry

BUDGET = 3


async def answer(attempt: int) -> int:
    return attempt


async def hand_written_loop() -> int:
    """The callers' loop before the policy (awbench 0.3.0's openai backend), for comparison."""
    attempt = 1
    while True:
        try:
            return await answer(attempt)
        except Exception as error:
            if is_retryable(error) and attempt < BUDGET:
                await asyncio.sleep(wait_before_retry(error, attempt))
                attempt += 1
                continue
            raise


async def retry_policy() -> int:
    return await Attempts(BUDGET).run(answer)


async def async_retrying() -> int:
    """The same decisions through tenacity's AsyncRetrying (what retry_policy drives by hand instead)."""

    def retry(state: RetryCallState) -> bool:
        return state.outcome is not None and state.outcome.failed and is_retryable(state.outcome.exception())

    retrying = AsyncRetrying(stop=stop_after_attempt(BUDGET), retry=retry, reraise=True)
    return await retrying(answer, 1)


def cpu_us(way: Callable[[], Awaitable[int]], requests: int, repeat: int) -> float:
    async def rounds() -> float:
        best = float("inf")
        for _ in range(repeat):
            started = time.process_time()
            for _ in range(requests):
                await way()
            best = min(best, time.process_time() - started)
        return best

    return asyncio.run(rounds()) / requests * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{machine()}; {args.requests:,} requests, best of {args.repeat}")
    ways = {
        "hand-written loop (before)": hand_written_loop,
        "retry_policy.Attempts (one tenacity Retrying, driven)": retry_policy,
        "tenacity AsyncRetrying": async_retrying,
    }
    rows = [[name, f"{cpu_us(way, args.requests, args.repeat):.1f}"] for name, way in ways.items()]
    print(table(["policy around one call", "CPU µs / request"], rows))


if __name__ == "__main__":
    main()

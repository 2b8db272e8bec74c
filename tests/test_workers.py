"""awbench.workers: the pool both LLM judges and the Turing/pairwise judge run their calls in."""

import asyncio
from contextlib import aclosing

import pytest

from awbench.workers import worker_results


def test_every_result_is_yielded_and_a_worker_error_is_raised_with_the_others_cancelled():
    async def scenario() -> tuple[list[int], list[str]]:
        items = list(range(5))
        seen: list[int] = []
        cancelled: list[str] = []

        async def work(put) -> None:
            while items:
                put(items.pop(0))
                await asyncio.sleep(0)

        async for item in worker_results(2, work):
            seen.append(item)

        async def failing(put) -> None:
            if not cancelled:
                cancelled.append("first")
                raise RuntimeError("endpoint down")
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append("cancelled")
                raise

        with pytest.raises(RuntimeError, match="endpoint down"):
            async for _ in worker_results(2, failing):
                pass
        return sorted(seen), cancelled

    assert asyncio.run(scenario()) == ([0, 1, 2, 3, 4], ["first", "cancelled"])


def test_a_caller_that_stops_early_cancels_the_workers():
    async def scenario() -> list[str]:
        events: list[str] = []

        async def work(put) -> None:
            put(1)
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                events.append("cancelled")
                raise

        async with aclosing(worker_results(1, work)) as results:
            async for item in results:
                events.append(f"got {item}")
                break
        return events

    assert asyncio.run(scenario()) == ["got 1", "cancelled"]

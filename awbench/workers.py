"""The one pool of asyncio workers whose results are consumed as they come: the candidate backends' calls, the
LLM judges' and the two-choice judge's run in it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import TypeVar

T = TypeVar("T")
Item = TypeVar("Item")
_DONE = object()  # a worker has finished


async def worker_results(count: int, work: Callable[[Callable[[T], None]], Awaitable[None]]) -> AsyncGenerator[T, None]:
    """Run `count` copies of `work(put)` and yield what they `put`, in completion order. The first exception a
    worker raises (FatalAPIError, EndpointDown, or a bug) is raised here; on it, or when the caller stops
    iterating early, the other workers are cancelled."""
    results: asyncio.Queue[object] = asyncio.Queue()

    async def worker() -> None:
        try:
            await work(results.put_nowait)
        except Exception as error:
            results.put_nowait(error)
        finally:
            results.put_nowait(_DONE)

    workers = [asyncio.create_task(worker()) for _ in range(count)]
    try:
        running = len(workers)
        while running:
            item = await results.get()
            if item is _DONE:
                running -= 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item  # type: ignore[misc]  # what a worker put: a T
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def in_completion_order(
    items: Sequence[Item], one: Callable[[Item], Awaitable[T]], concurrency: int
) -> AsyncGenerator[T, None]:
    """`one(item)` for every item, `concurrency` at a time in the items' order, yielded as each completes. An
    exception from `one` stops the rest and is raised; so does leaving early (the consumer stopping)."""
    pending = iter(items)

    async def work(put: Callable[[T], None]) -> None:
        for item in pending:  # one shared iterator: each item is taken by exactly one worker
            put(await one(item))

    async with aclosing(worker_results(min(max(1, concurrency), len(items)), work)) as results:
        async for result in results:  # closed at once when the caller stops early: the workers cancelled
            yield result

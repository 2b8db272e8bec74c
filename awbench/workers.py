"""A pool of workers whose results are consumed as they come: the judges' way of running calls concurrently."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
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

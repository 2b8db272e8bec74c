"""The one pool of asyncio workers whose results are consumed as they come: the candidate backends' calls, the
LLM judges' and the two-choice judge's run in it; those sent over HTTP in prefix order (`PrefixQueue`)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterable, Awaitable, Callable, Sequence
from contextlib import aclosing
from typing import Generic, TypeVar

from awbench.prefix_order import PREFIX_WAIT_S, Entry, Place, PrefixOrder

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


class PrefixQueue(Generic[Item]):
    """Items handed to asyncio workers in prefix order (`awbench.prefix_order`): `put` them as they come and
    `close` when no more will; a worker's `get` waits for the next item free to go (None once every item has
    been handed out and no more will come, or after `stop`), and `done` says its answer came (or it failed)."""

    def __init__(self, place: Callable[[Item], Place], wait_s: float | None = PREFIX_WAIT_S) -> None:
        self._place = place
        self._order: PrefixOrder[Item] = PrefixOrder(wait_s)
        self._loop = asyncio.get_running_loop()
        self._waiters: deque[asyncio.Future[Entry[Item] | None]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._stopped = False

    def put(self, item: Item) -> None:
        self._order.add(item, self._place(item), self._loop.time())
        self._hand_out()

    def close(self) -> None:
        self._closed = True
        self._hand_out()

    def stop(self) -> None:
        """Hand nothing more out: the workers' next `get` returns None (what is out may still be `done`)."""
        self._stopped = True
        self._hand_out()

    async def fill(self, items: AsyncIterable[Item]) -> None:
        """Put every item of `items`, then close (also when `items` fails, which is raised)."""
        try:
            async for item in items:
                self.put(item)
        finally:
            self.close()

    def done(self, entry: Entry[Item]) -> None:
        self._order.done(entry, self._loop.time())
        self._hand_out()

    async def get(self) -> Entry[Item] | None:
        if self._finished():
            return None
        entry = self._order.take(self._loop.time()) if not self._waiters else None
        if entry is not None:
            return entry
        waiter: asyncio.Future[Entry[Item] | None] = self._loop.create_future()
        self._waiters.append(waiter)
        self._arm()
        return await waiter

    def _finished(self) -> bool:
        return self._stopped or (self._closed and self._order.unsent == 0)

    def _hand_out(self) -> None:
        """The items free to go to the longest waiters; None to every waiter once nothing more will come."""
        now = self._loop.time()
        while self._waiters and not self._stopped:
            if self._waiters[0].done():  # a cancelled worker
                self._waiters.popleft()
                continue
            entry = self._order.take(now)
            if entry is None:
                break
            self._waiters.popleft().set_result(entry)
        if self._finished():
            while self._waiters:
                waiter = self._waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)
        self._arm()

    def _arm(self) -> None:
        """Wake at the next deadline of a request in flight, when workers wait for what it holds back (a timer set
        for an earlier one that has passed meanwhile wakes them for nothing, and sets the next)."""
        deadline = self._order.next_deadline() if self._waiters else None
        if deadline is not None and (self._timer is None or deadline < self._timer.when()):
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(deadline, self._wake)

    def _wake(self) -> None:
        self._timer = None
        self._hand_out()


async def in_prefix_order(
    items: Sequence[Item],
    one: Callable[[Item, Place], Awaitable[T]],
    place: Callable[[Item], Place],
    concurrency: int,
    wait_s: float | None = PREFIX_WAIT_S,
) -> AsyncGenerator[T, None]:
    """`one(item, its place)` for every item, `concurrency` at a time in prefix order (`PrefixQueue`; `wait_s` as
    there), yielded as each completes. An exception from `one` stops the rest and is raised; so does leaving
    early."""
    queue: PrefixQueue[Item] = PrefixQueue(place, wait_s)
    for item in items:
        queue.put(item)
    queue.close()

    async def work(put: Callable[[T], None]) -> None:
        while (entry := await queue.get()) is not None:
            try:
                result = await one(entry.item, entry.place)
            finally:
                queue.done(entry)
            put(result)

    async with aclosing(worker_results(min(max(1, concurrency), len(items)), work)) as results:
        async for result in results:
            yield result

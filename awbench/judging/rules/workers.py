"""The rule judge's scoring spread over worker processes, for runs too large for one core.

Each trajectory goes to one worker, whose RuleScorer extends the trajectory's history index from turn to
turn; each worker answers in the order it was asked. Workers are plain `python -c` children talking length-
prefixed pickles over their stdin and stdout (not `multiprocessing`: its spawn re-imports the caller's main
script, and fork copies the parent's threads). A worker ignores Ctrl-C (the parent stops it) and exits when
its stdin closes, which also happens when the parent dies."""

from __future__ import annotations

import asyncio
import os
import pickle
import sys
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Generic, TypeVar

import awbench
from awbench.errors import EXIT_FAILURES, AwbenchError
from awbench.judging.rules.score import RuleResult
from awbench.judging.rules.worker_loop import HEADER_BYTES, KEPT_TRAJECTORIES

try:
    import fcntl
except ImportError:  # not POSIX: pipes keep their default size
    fcntl = None  # type: ignore[assignment]

MAX_WORKERS = 4
IN_FLIGHT = 8  # tasks sent to a worker and not answered: it never waits for the next, and little is held
PIPE_BYTES = 1 << 20
STOP_SECONDS = 5.0  # for a worker to exit once its stdin is closed, before it is killed

# A worker imports this very awbench (the parent may have found it on a sys.path of its own), then leaves
# sys.path as it was, so that the directory holding awbench shadows nothing else.
_BOOTSTRAP = """import sys
sys.path.insert(0, {root!r})
from awbench.judging.rules.worker_loop import serve
sys.path.remove({root!r})
serve()"""

# (domain, trajectory, ground_truth, prediction, history): RuleScorer.score's arguments, as plain values.
RuleTask = tuple[str, str, str, str, list[str]]
T = TypeVar("T")


class RuleWorkerFailed(AwbenchError):
    """A worker process stopped without answering (killed, out of memory) or raised; the run is resumable."""

    key = "rule_worker_failed"
    exit_code = EXIT_FAILURES
    hint = "\nThe run is resumable: run the same command again."


def available_workers() -> int:
    """One worker per CPU this process may use, at most MAX_WORKERS; 0 when there is no second CPU or no
    interpreter to start."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return min(cpus, MAX_WORKERS) if cpus > 1 and sys.executable else 0


def _common_length(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x is not y and x != y:
            break
        n += 1
    return n


class _Worker(Generic[T]):
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.waiting: deque[T] = deque()  # what each unanswered task belongs to, in the order sent
        self.room = asyncio.Semaphore(IN_FLIGHT)
        # The last history sent of each trajectory the worker keeps: the next turn's sends only what follows
        # the common beginning, so a history item crosses once and the worker's copies stay the same objects.
        self.histories: OrderedDict[str, list[str]] = OrderedDict()

    async def send(self, owner: T, task: RuleTask) -> None:
        await self.room.acquire()
        self.waiting.append(owner)
        domain, trajectory, ground_truth, prediction, history = task
        common = _common_length(self.histories.get(trajectory, []), history)
        self.histories[trajectory] = history
        self.histories.move_to_end(trajectory)
        forget = []
        while len(self.histories) > KEPT_TRAJECTORIES:
            forget.append(self.histories.popitem(last=False)[0])
        message = (domain, trajectory, ground_truth, prediction, common, history[common:], forget)
        frame = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        stdin = self.process.stdin
        assert stdin is not None
        # No drain: a frame is larger than a pipe's buffer, so waiting here would hold every other worker's
        # tasks until this worker finished its current one. The semaphore bounds what the buffer holds.
        stdin.write(len(frame).to_bytes(HEADER_BYTES, "little"))
        stdin.write(frame)

    async def receive(self) -> tuple[T, RuleResult]:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            header = await stdout.readexactly(HEADER_BYTES)
            status, value = pickle.loads(await stdout.readexactly(int.from_bytes(header, "little")))
        except asyncio.IncompleteReadError:
            code = await self.process.wait()
            raise RuleWorkerFailed(
                f"a rule judge worker (pid {self.process.pid}) stopped with exit code {code}"
            ) from None
        if status != "ok":
            raise RuleWorkerFailed(f"a rule judge worker failed:\n{value}")
        self.room.release()
        return self.waiting.popleft(), value


def _widen(pipe: asyncio.StreamWriter | None) -> None:
    """A pipe that holds a whole task (where the system allows): a task written in one call instead of in
    64 KiB pieces, each moving the rest of the buffer."""
    if pipe is None or not hasattr(fcntl, "F_SETPIPE_SZ"):  # Linux only
        return
    try:
        fcntl.fcntl(pipe.get_extra_info("pipe").fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # above the system's limit (/proc/sys/fs/pipe-max-size): the default size still works


class RuleWorkers:
    """`count` worker processes, started on entry and stopped on exit."""

    def __init__(self, count: int) -> None:
        self.count = count
        self._workers: list[_Worker[Any]] = []

    async def __aenter__(self) -> RuleWorkers:
        try:
            for _ in range(self.count):
                process = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-c",
                    _BOOTSTRAP.format(root=str(Path(awbench.__file__).resolve().parent.parent)),
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
                _widen(process.stdin)
                self._workers.append(_Worker(process))
        except OSError as error:
            await self._stop()
            raise RuleWorkerFailed(
                f"cannot start a rule judge worker ({sys.executable}): {error.strerror or error}; "
                "--rule-workers 0 scores in this process"
            ) from None
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stop()

    @property
    def pids(self) -> list[int]:
        return [worker.process.pid for worker in self._workers]

    async def _stop(self) -> None:
        for worker in self._workers:
            if worker.process.stdin is not None:
                worker.process.stdin.close()
        for worker in self._workers:
            try:
                await asyncio.wait_for(worker.process.wait(), STOP_SECONDS)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                worker.process.kill()
                await worker.process.wait()

    async def score(self, tasks: AsyncIterator[tuple[T, RuleTask]]) -> AsyncIterator[tuple[T, RuleResult]]:
        """Each task's owner with its result, as results come. A trajectory's tasks go to the worker that had
        its first (the least busy one then)."""
        workers: list[_Worker[T]] = self._workers
        assigned: dict[str, _Worker[T]] = {}
        results: asyncio.Queue[tuple[T, RuleResult] | BaseException | int] = asyncio.Queue()

        async def send_all() -> None:
            sent = 0
            try:
                async for owner, task in tasks:
                    trajectory = task[1]
                    worker = assigned.get(trajectory)
                    if worker is None:
                        worker = assigned[trajectory] = min(workers, key=lambda w: len(w.waiting))
                    await worker.send(owner, task)
                    sent += 1
                results.put_nowait(sent)  # how many results to wait for
            except Exception as error:
                results.put_nowait(error)

        async def receive_all(worker: _Worker[T]) -> None:
            try:
                while True:
                    results.put_nowait(await worker.receive())
            except Exception as error:
                results.put_nowait(error)

        helpers = [asyncio.ensure_future(send_all()), *(asyncio.ensure_future(receive_all(w)) for w in workers)]
        try:
            expected, answered = None, 0
            while expected is None or answered < expected:
                result = await results.get()
                if isinstance(result, int):
                    expected = result
                elif isinstance(result, BaseException):
                    raise result
                else:
                    answered += 1
                    yield result
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)

"""Progress of the run commands on stderr: rich bars in a terminal, whole lines in a pipe or a log file."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from awbench.cli.common import err_console


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "", style="cyan")


class _Stage:
    def __init__(self, bar: Progress, task: TaskID):
        self.bar, self.task, self.failures = bar, task, 0

    def advance(self, failed: bool = False) -> None:
        self.failures += failed
        self.bar.update(self.task, advance=1, failures=self.failures)

    def drop(self) -> None:
        total = self.bar.tasks[self.task].total or 0
        self.bar.update(self.task, total=max(0, total - 1))


class _LineStage:
    """A stage's progress as whole lines, for stderr that is not a terminal (a live bar there would be printed
    once, cut to the width): one when the stage starts, one at least every `QUIET_SECONDS` while it runs (`tick`,
    from the ticker thread: a stage waiting on a slow server or a batch says so too), and one when it ends."""

    QUIET_SECONDS = 10.0

    def __init__(self, name: str, total: int):
        self.name, self.total, self.done, self.failures = name, total, 0, 0
        self._started = self._printed = time.monotonic()
        self._print()

    def advance(self, failed: bool = False) -> None:
        self.done += 1
        self.failures += failed

    def drop(self) -> None:
        self.total = max(0, self.total - 1)

    def tick(self) -> None:
        if time.monotonic() - self._printed >= self.QUIET_SECONDS:
            self._print()

    def finish(self) -> None:
        self._print()

    def _print(self) -> None:
        share = f" ({self.done / self.total:.0%})" if self.total else ""
        elapsed = timedelta(seconds=int(time.monotonic() - self._started))
        err_console.print(
            f"{self.name}: {self.done}/{self.total}{share}, {self.failures} failed, {elapsed} elapsed",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        self._printed = time.monotonic()


class _Ticker:
    """Ticks the open line stages once a second, on a thread of its own: the event loop may be busy, or waiting."""

    def __init__(self) -> None:
        self._stages: list[_LineStage] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, stage: _LineStage) -> None:
        with self._lock:
            self._stages.append(stage)
            if self._thread is None:
                try:
                    self._thread = threading.Thread(target=self._run, name="awbench-progress", daemon=True)
                    self._thread.start()
                except RuntimeError:  # no thread can be made (a world model set sys.excepthook to None)
                    self._thread = None  # the stage still says when it starts and ends

    def remove(self, stage: _LineStage) -> None:
        with self._lock:
            self._stages.remove(stage)

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                if not self._stages:
                    self._thread = None
                    return
                for stage in self._stages:
                    stage.tick()


class RichProgress:
    """One live display for every stage running at once (inference and judges are pipelined), each with
    count, rate, elapsed time, ETA and the failures so far; when stderr is not a terminal, whole lines instead.
    The display, notes and warnings go to stderr: stdout holds what the command prints when it is done (the
    scores), so that it can be piped or saved."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._open = 0
        self._ticker = _Ticker()

    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[_Stage | _LineStage]:
        if not err_console.is_terminal:
            lines = _LineStage(name, total)
            self._ticker.add(lines)
            try:
                yield lines
            finally:  # a stage stopped (by --max-cost, an error) ends with its counts too
                self._ticker.remove(lines)
                lines.finish()
            return
        if self._bar is None:
            # The numbers keep their width in a narrow terminal; the stage's name folds and the bar is short.
            whole = Column(no_wrap=True)
            columns = (
                TextColumn("{task.description}", style="bold", markup=False, table_column=Column(overflow="fold")),
                BarColumn(bar_width=12, table_column=whole),
                MofNCompleteColumn(table_column=whole),
                _RateColumn(table_column=whole),
                TimeElapsedColumn(table_column=whole),
                TextColumn("eta", table_column=whole),
                TimeRemainingColumn(table_column=whole),
                TextColumn("{task.fields[failures]} failed", style="red", markup=False, table_column=whole),
            )
            self._bar = Progress(*columns, console=err_console, redirect_stdout=False)
            self._bar.start()
        self._open += 1
        try:
            yield _Stage(self._bar, self._bar.add_task(name, total=total, failures=0))
        finally:
            self._open -= 1
            if self._open == 0:
                self._bar.stop()
                self._bar = None

    def note(self, text: str) -> None:
        err_console.print(text, highlight=False, markup=False, soft_wrap=True)

    def warn(self, text: str) -> None:
        err_console.print(text, highlight=False, markup=False, style="yellow", soft_wrap=True)

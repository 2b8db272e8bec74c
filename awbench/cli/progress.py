"""Rich progress bars and summary tables for the run commands."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


class RichProgress:
    """One live display for every stage running at once (inference and judges are pipelined), each with
    count, rate, elapsed time, ETA and the failures so far. The display, notes and warnings go to stderr:
    stdout holds what the command prints when it is done (the scores), so that it can be piped or saved."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._open = 0

    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[_Stage]:
        if self._bar is None:
            columns = (
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _RateColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                TextColumn("[red]{task.fields[failures]} failed"),
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

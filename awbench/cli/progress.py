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
from rich.table import Table

from awbench.cli.common import console
from awbench.domains import DIMENSIONS, DOMAIN_LABELS
from awbench.scoring import ScoresFile


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:.1f}/s" if task.speed else "", style="cyan")


class _Stage:
    def __init__(self, bar: Progress, task: TaskID):
        self.bar, self.task, self.failures = bar, task, 0

    def advance(self, failed: bool = False) -> None:
        self.failures += failed
        self.bar.update(self.task, advance=1, failures=self.failures)


class RichProgress:
    """Bars with count, rate, elapsed time, ETA and the failures so far."""

    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[_Stage]:
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
        with Progress(*columns, console=console) as bar:
            yield _Stage(bar, bar.add_task(name, total=total, failures=0))

    def note(self, text: str) -> None:
        console.print(text, highlight=False)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def scores_table(scores: ScoresFile) -> Table:
    label = "rule score" if scores.judge == "rules" else "score"
    table = Table(title=f"{scores.run}: {label} (0..100), failure policy {scores.failure_policy}")
    for column in ("domain", "n", "failed", "unscored", label):
        table.add_column(column, justify="left" if column == "domain" else "right")
    show_dims = any(d.dimensions for d in scores.domains.values()) and scores.judge == "llm"
    if show_dims:
        for dim in DIMENSIONS:
            table.add_column(dim.capitalize(), justify="right")
    if scores.rules:
        table.add_column("rule score", justify="right")
    for domain, d in scores.domains.items():
        row = [DOMAIN_LABELS.get(domain, domain), str(d.n), str(d.failed), str(d.unscored), _fmt(d.score)]
        if show_dims:
            row += [_fmt(d.dimensions.get(dim)) for dim in DIMENSIONS]
        if scores.rules:
            rules_domain = scores.rules.domains.get(domain)
            row.append(_fmt(rules_domain.score if rules_domain else None))
        table.add_row(*row)
    table.add_section()
    overall = ["Overall (macro)", str(sum(d.n for d in scores.domains.values())),
               str(sum(d.failed for d in scores.domains.values())),
               str(sum(d.unscored for d in scores.domains.values())), _fmt(scores.overall)]
    tail = [""] * len(DIMENSIONS) if show_dims else []
    table.add_row(*overall, *tail, *([_fmt(scores.rules.overall)] if scores.rules else []))
    table.add_row("Overall (micro)", "", "", "", _fmt(scores.overall_micro), *tail,
                  *([_fmt(scores.rules.overall_micro)] if scores.rules else []))
    return table

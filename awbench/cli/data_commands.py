"""`awbench data validate | info`."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

import typer
from rich.text import Text

from awbench.analysis.data_info import DataInfo, data_info
from awbench.cli.common import Group, console, plural
from awbench.cli.fitting import FittingTable
from awbench.data.dataset import read_source, resolve_source
from awbench.domains import DOMAIN_LABELS
from awbench.errors import EXIT_USAGE
from awbench.records import Sample

data_app = typer.Typer(help="Check and describe benchmark data.", no_args_is_help=True, cls=Group)

SourceArg = Annotated[
    str, typer.Argument(help="'sample', a directory of *_test.jsonl, a JSONL file, or a Hugging Face dataset id.")
]


@data_app.command()
def validate(source: SourceArg) -> None:
    """List every problem in the data (not only the first); exit 2 when there is any error.

    Example: awbench data validate ./AgentWorldBench/
    """
    samples, problems = read_source(source)
    for problem in problems:
        style = SEVERITY_STYLES[problem.severity]
        console.print(Text.assemble((problem.severity, style), f": {problem}"), soft_wrap=True)
    count = Counter(p.severity for p in problems)
    notes = f"; {plural(count['note'], 'note')}" if count["note"] else ""
    summary = f"{plural(len(samples), 'valid sample')}; {plural(count['error'], 'error')}; "
    console.print(summary + plural(count["warning"], "warning") + notes)
    raise typer.Exit(EXIT_USAGE if count["error"] else 0)


SEVERITY_STYLES = {"error": "red", "warning": "yellow", "note": "cyan"}


def _repeats_line(samples: list[Sample]) -> str | None:
    """One line for `data info` about sample keys that occur more than once, or None."""
    counts = Counter(s.record.base_key() for s in samples)
    repeated = [key for key, n in counts.items() if n > 1]
    if not repeated:
        return None
    shown = ", ".join(repeated[:3]) + (", ..." if len(repeated) > 3 else "")
    rows = sum(counts[key] for key in repeated)
    verb = "repeats" if len(repeated) == 1 else "repeat"
    return (
        f"note: {plural(len(repeated), 'sample key')} {verb} ({shown}, on {rows} rows); every row is "
        f"evaluated, the repeats as {repeated[0]}#2 and so on"
    )


def _info_table(info: DataInfo) -> FittingTable:
    with_tokens = any(d.avg_context_tokens is not None for d in info.domains)
    table = FittingTable(title=info.source + ("" if info.is_full_benchmark else " (not the full benchmark)"))
    table.add_column("domain", overflow="fold")
    columns = ["samples", "trajectories", "avg turns", "avg context\nchars", "max context\nchars"]
    columns += ["avg context\ntokens"] if with_tokens else []
    columns += ["published\nsamples", "published\navg turns"] if info.is_full_benchmark else []
    for column in columns:
        if column in ("avg context\nchars", "published\nsamples"):
            table.start_group()
        table.add_column(column, justify="right", no_wrap=True)
    for d in [*info.domains, info.total]:
        row = [
            DOMAIN_LABELS.get(d.domain, d.domain),
            str(d.samples),
            str(d.trajectories),
            f"{d.avg_turns:.1f}",
            f"{d.avg_context_chars:,.0f}",
            f"{d.max_context_chars:,}",
        ]
        row += [f"{d.avg_context_tokens:,.0f}" if d.avg_context_tokens is not None else "-"] if with_tokens else []
        if info.is_full_benchmark:
            row += [str(d.published_samples or "-"), f"{d.published_avg_turns:.1f}" if d.published_avg_turns else "-"]
        table.add_row(*row)
    return table


@data_app.command()
def info(
    source: SourceArg,
    tokenizer: Annotated[
        str | None, typer.Option("--tokenizer", help="A Hugging Face tokenizer to count context tokens with.")
    ] = None,
) -> None:
    """Samples per domain, average turns, context size; beside the published statistics for the full benchmark.

    Example: awbench data info sample --tokenizer Qwen/Qwen3-8B
    """
    samples, problems = read_source(source)
    summary = data_info(samples, resolve_source(source), tokenizer)
    console.print(_info_table(summary))
    repeats = _repeats_line(samples)
    if repeats:
        console.print(repeats, soft_wrap=True)
    count = Counter(p.severity for p in problems)
    if count["error"] or count["warning"]:
        bad = len({(p.path, p.line) for p in problems if p.severity == "error"})
        left_out = f"{plural(bad, 'invalid record')} left out, {plural(count['warning'], 'warning')}"
        console.print(f"{left_out}: `awbench data validate {source}` lists them", soft_wrap=True)

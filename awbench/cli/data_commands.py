"""`awbench data validate | info`."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from awbench.cli.common import EXIT_USAGE, console
from awbench.cli.errors import pipeline_errors
from awbench.data_info import DataInfo, data_info
from awbench.dataset import read_source, resolve_source
from awbench.domains import DOMAIN_LABELS

data_app = typer.Typer(help="Check and describe benchmark data.", no_args_is_help=True)

SourceArg = Annotated[str, typer.Argument(help="'sample', a directory of *_test.jsonl, a JSONL file, or a Hugging Face dataset id.")]


@data_app.command()
def validate(source: SourceArg) -> None:
    """List every problem in the data (not only the first); exit 2 when there is any error.

    Example: awbench data validate ./AgentWorldBench/
    """
    with pipeline_errors():
        samples, problems = read_source(source)
    errors = [p for p in problems if p.severity == "error"]
    for problem in problems:
        style = "red" if problem.severity == "error" else "yellow"
        console.print(f"[{style}]{problem.severity}[/]: {problem}", highlight=False, soft_wrap=True)
    console.print(f"{len(samples)} valid samples; {len(errors)} errors; {len(problems) - len(errors)} warnings")
    raise typer.Exit(EXIT_USAGE if errors else 0)


def _info_table(info: DataInfo) -> Table:
    with_tokens = any(d.avg_context_tokens is not None for d in info.domains)
    table = Table(title=f"{info.source}" + ("" if info.is_full_benchmark else " (not the full benchmark)"))
    columns = ["domain", "samples", "trajectories", "avg turns", "avg context chars", "max context chars"]
    columns += ["avg context tokens"] if with_tokens else []
    columns += ["published samples", "published avg turns"] if info.is_full_benchmark else []
    for column in columns:
        table.add_column(column, justify="left" if column == "domain" else "right")
    for d in [*info.domains, info.total]:
        row = [DOMAIN_LABELS.get(d.domain, d.domain), str(d.samples), str(d.trajectories), f"{d.avg_turns:.1f}",
               f"{d.avg_context_chars:,.0f}", f"{d.max_context_chars:,}"]
        row += [f"{d.avg_context_tokens:,.0f}" if d.avg_context_tokens is not None else "-"] if with_tokens else []
        if info.is_full_benchmark:
            row += [str(d.published_samples or "-"), f"{d.published_avg_turns:.1f}" if d.published_avg_turns else "-"]
        table.add_row(*row)
    return table


@data_app.command()
def info(
    source: SourceArg,
    tokenizer: Annotated[Optional[str], typer.Option("--tokenizer", help="A Hugging Face tokenizer to count context tokens with.")] = None,
) -> None:
    """Samples per domain, average turns, context size; beside the published statistics for the full benchmark.

    Example: awbench data info sample --tokenizer Qwen/Qwen3-8B
    """
    with pipeline_errors():
        samples, _ = read_source(source)
        summary = data_info(samples, resolve_source(source), tokenizer)
    console.print(_info_table(summary))

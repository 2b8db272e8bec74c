"""The `awbench` command line: a thin layer over the Python API (`awbench.pipeline` and friends)."""

from __future__ import annotations

from typing import Annotated

import typer

import awbench
from awbench.cli import analysis, interop_commands, run_commands
from awbench.cli.common import use_command_class
from awbench.cli.data_commands import data_app

app = typer.Typer(
    help="Evaluate language world models on AgentWorldBench: infer, judge, score, compare.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"awbench {awbench.__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print awbench's version and exit.")] = False,
) -> None:
    """Evaluate language world models on AgentWorldBench: infer, judge, score, compare."""


run_commands.register(app)
app.add_typer(data_app, name="data")
interop_commands.register(app)
analysis.register(app)
use_command_class(app)


def main() -> None:
    app()

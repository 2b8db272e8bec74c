"""The `awbench` command line: a thin layer over the Python API (`awbench.pipeline` and friends)."""

from __future__ import annotations

import typer

from awbench.cli import analysis, interop_commands, run_commands
from awbench.cli.data_commands import data_app

app = typer.Typer(
    help="Evaluate language world models on AgentWorldBench: infer, judge, score, compare.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
run_commands.register(app)
app.add_typer(data_app, name="data")
interop_commands.register(app)
analysis.register(app)


def main() -> None:
    app()

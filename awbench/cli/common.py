"""What every command shares: the consoles, exit codes, and turning user-facing errors into messages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from awbench.redact import redact
from awbench.store import RunStore, StoreError, resolve_run

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2

console = Console()
err_console = Console(stderr=True)

OutputOption = Annotated[Path, typer.Option("--output", help="Directory that holds the runs.")]


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {escape(redact(message))}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def user_errors(*kinds: type[BaseException]) -> Iterator[None]:
    """Errors of these kinds are the user's input or environment: print the message, exit 2, no traceback."""
    try:
        yield
    except (StoreError, *kinds) as error:
        fail(str(error))


def open_run(run: str, output: Path) -> RunStore:
    with user_errors():
        return resolve_run(run, output)

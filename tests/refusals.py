"""What a command refused, by meaning rather than wording: the exit code and the key of the user-facing error
(awbench.errors.AwbenchError) the command line reported, read from a CliRunner result."""

from __future__ import annotations

from typer.testing import Result

from awbench.errors import AwbenchError


def refusal(result: Result) -> tuple[int, str | None]:
    """(exit code, key); key None when no AwbenchError ended the command. The command line raises its exit
    `from` the error it reported (awbench.cli.errors), so the error is on the exit's chain."""
    error: BaseException | None = result.exception
    while error is not None and not isinstance(error, AwbenchError):
        error = error.__cause__ or error.__context__
    return result.exit_code, None if error is None else error.key

"""The one place a refusal reaches the user: every command runs inside `reported_errors`, which prints the
user-facing error (`awbench.errors.AwbenchError`) as `error: <message>` on stderr and exits with its code,
never with a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import typer
from pydantic import ValidationError
from rich.text import Text
from typer._click.exceptions import MissingParameter, NoArgsIsHelpError, NoSuchOption, UsageError  # typer's own click

from awbench.cli.common import Group, err_console, validation_lines
from awbench.cli.options import OPTION_NAMES
from awbench.data.problems import DataError
from awbench.errors import AwbenchError, SettingsError
from awbench.redact import redact
from awbench.suggest import close_names, suggestion

MAX_PROBLEMS_SHOWN = 50
SETTINGS = {"RunConfig", "DataSettings", "ModelSettings", "JudgeSettings", "ScoringSettings", "EngineSettings"}
INTERRUPTED = 130  # what a shell reports for a command that SIGINT stopped


@contextmanager
def reported_errors() -> Iterator[None]:
    """AwbenchError, and the few other errors that are the user's, told as one: its lines, then its exit."""
    try:
        yield
        return
    except AwbenchError as error:
        refusal = error
    except ValidationError as error:  # settings a command builds from its options (--run-name, --temperature...)
        if error.title not in SETTINGS:
            raise
        refusal = SettingsError("\n".join(validation_lines(error, OPTION_NAMES)))
    except OSError as error:  # an output that cannot be written: a file where a directory goes, a full disk...
        if error.filename is None:
            raise
        refusal = AwbenchError(f"cannot write {error.filename}: {error.strerror or error}", key="cannot_write")
    except UsageError as error:  # the parser's: an unknown option, a missing argument
        if isinstance(error, NoArgsIsHelpError):  # `awbench data` alone: its help
            raise
        refusal = AwbenchError(_usage_message(error), key="bad_usage")
    except KeyboardInterrupt:
        refusal = AwbenchError(
            "interrupted; run the same command again to resume", key="interrupted", exit_code=INTERRUPTED
        )
    _report(refusal)


def _usage_message(error: UsageError) -> str:
    """The parser's refusal in our words, one line: `no such option: --domian; did you mean --domains?`."""
    if isinstance(error, NoSuchOption) and error.ctx is not None:
        # compared without their dashes, which every name shares: `--falied` is close to `--failed`, not `--sample`
        names = {
            name.lstrip("-"): name
            for param in error.ctx.command.get_params(error.ctx)
            for name in param.opts + param.secondary_opts
            if name.startswith("-")
        }
        close = [names[name] for name in close_names(error.option_name.lstrip("-"), names)]
        return f"no such option: {error.option_name}{suggestion(close, quote=False)}"
    if isinstance(error, MissingParameter) and error.param is not None and error.param.param_type_name == "argument":
        return f"missing argument {error.param.display_name_raw.upper()}"  # RUN, as --help names it
    message = error.format_message().rstrip(".")
    return message[:1].lower() + message[1:]


def _report(error: AwbenchError) -> NoReturn:
    if isinstance(error, DataError):
        # Not markup: the data's own text ("hf:ref[test]", a field named "[/]").
        for problem in error.problems[:MAX_PROBLEMS_SHOWN]:
            err_console.print(str(problem), soft_wrap=True)
        if len(error.problems) > MAX_PROBLEMS_SHOWN:
            err_console.print(
                f"... and {len(error.problems) - MAX_PROBLEMS_SHOWN} more (awbench data validate lists all)"
            )
    for line in error.message.splitlines() or [""]:
        err_console.print(Text.assemble(("error:", "bold red"), " ", redact(line)), soft_wrap=True)
    raise typer.Exit(error.exit_code) from error  # the error stays reachable from the exit (tests read its key)


class CommandLine(Group):
    """The `awbench` group: its own options' parsing, the commands below it and the parsing of theirs run in
    `reported_errors`."""

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with reported_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with reported_errors():
            return super().invoke(ctx)

"""The `awbench` command line: a thin layer over the Python API (`awbench.run.pipeline` and friends)."""

from __future__ import annotations

import codecs
import ctypes
import errno
import io
import os
import sys
import threading
from typing import Annotated, NoReturn

import typer

import awbench
from awbench.cli import analysis_commands, interop_commands, plan_command, run_commands, turing_commands
from awbench.cli.common import err_console, plural, use_command_class
from awbench.cli.data_commands import data_app
from awbench.cli.errors import CommandLine
from awbench.errors import EXIT_FAILURES, EXIT_USAGE

app = typer.Typer(
    help="Evaluate language world models on AgentWorldBench: infer, judge, score, compare.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    cls=CommandLine,
)


def _print_version(value: bool) -> None:
    """The release, and the commit when awbench runs from its own git checkout (as run.json records them)."""
    if value:
        from awbench.run.store import own_git_commit

        commit = own_git_commit()
        typer.echo(f"awbench {awbench.__version__}" + (f" (commit {commit[:12]})" if commit else ""))
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print awbench's version and exit."),
    ] = False,
) -> None:
    """Evaluate language world models on AgentWorldBench: infer, judge, score, compare."""


run_commands.register(app)
app.add_typer(data_app, name="data")
interop_commands.register(app)
analysis_commands.register(app)
turing_commands.register(app)
plan_command.register(app)
use_command_class(app)


def _return_large_blocks_to_the_system() -> None:
    """glibc raises its mmap threshold each time a large block is freed, after which blocks of the size of a
    request body (100 KB to 1 MB) are carved from the heap, whose freed space the process then keeps: fixed at
    512 KiB, the larger ones are returned. At the benchmark's size this takes a run's peak memory from about
    1.6x to 1.2x the data's size; 128 KiB gives no less memory and costs more system time (docs/performance.md).
    Elsewhere than glibc there is nothing to do."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, 512 * 1024)
    except (OSError, AttributeError):
        pass


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
STDOUT = 1


# What a write to stdout fails with: a full device, a file size limit, a reader gone, a device's error, a descriptor
# closed (by a world model's code).
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EPIPE, errno.EIO, errno.EBADF}


def main() -> None:
    _hold_closed_standard_streams()
    _return_large_blocks_to_the_system()
    _escape_what_stdout_cannot_encode()
    try:
        _run()
    except SystemExit as end:
        _exit_without_waiting_for_threads(end.code)
        raise


def _run() -> None:
    try:
        try:
            app()
        finally:
            sys.stdout.flush()  # what is still buffered fails here, where it can be reported, not at the exit
    except OSError as error:
        if error.filename is not None or error.errno not in _OUTPUT_ERRNOS:
            raise  # a file's error is the command's to report; none reaches here
        _stdout_failed(error.strerror, error.errno)
    except ValueError:
        if not sys.stdout.closed:
            raise
        _stdout_failed("it was closed", errno.EBADF)  # `sys.stdout.close()`, by a world model's code


def _hold_closed_standard_streams() -> None:
    """A standard stream the shell closed (`>&-`, `2>&-`, `<&-`) leaves its descriptor free, for the first file
    awbench opens to take, and what is printed after would go into that file; Python leaves the stream None,
    which no print expects. Each is held by the null device: stdout opened for reading, so that printing fails
    and is reported as for a full device (`_stdout_failed`: one line, exit 2); stdin empty; stderr for writing,
    its messages lost (the exit code still tells)."""
    for fd, name, flags, mode in (
        (0, "stdin", os.O_RDONLY, "r"),
        (1, "stdout", os.O_RDONLY, "w"),
        (2, "stderr", os.O_WRONLY, "w"),
    ):
        if getattr(sys, name) is not None or _is_open(fd):
            continue  # a stream Python made, or a descriptor open after all: not ours to replace
        held = os.open(os.devnull, flags)
        if held != fd:
            os.dup2(held, fd)
            os.close(held)
        setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115 (the process's stream)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _escape_what_stdout_cannot_encode() -> None:
    """A standard output whose encoding cannot hold every character (PYTHONIOENCODING=ascii or latin-1, an old
    locale) writes each character it cannot as a backslash escape, as standard error does, instead of failing
    the command with a UnicodeEncodeError."""
    stdout = sys.stdout
    if isinstance(stdout, io.TextIOWrapper) and not codecs.lookup(stdout.encoding).name.startswith("utf"):
        stdout.reconfigure(errors="backslashreplace")


def _stdout_failed(reason: str | None, number: int | None) -> NoReturn:
    """stdout could not take what the command printed (`awbench ls > /dev/full`): one line, exit 2; a reader that
    left early (`awbench ls | head`) is no error worth a word, as for other tools (exit 1, as click gives)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, STDOUT)  # what is still buffered then goes nowhere at the exit, without a second error
    os.close(devnull)
    if number == errno.EPIPE:
        sys.exit(EXIT_FAILURES)
    try:
        err_console.print(f"error: cannot write to standard output: {reason}", markup=False, highlight=False)
    except OSError:
        pass  # stderr is as full: the exit code says it
    sys.exit(EXIT_USAGE)


def _exit_without_waiting_for_threads(code: object) -> None:
    """Threads that are no daemons, left running when the command is done (a world model's, started when its
    module was imported), would keep the process from ending: the command's output and files are complete, so a
    warning names them and the process ends without waiting for them."""
    left = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if not left:
        return
    names = ", ".join(sorted(t.name for t in left))
    err_console.print(
        f"{plural(len(left), 'thread')} that awbench did not start still running ({names}): exiting without "
        "waiting for them",
        style="yellow",
        soft_wrap=True,
    )
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed, or full: nothing more can be said
            pass
    os._exit(code if isinstance(code, int) else int(code is not None))

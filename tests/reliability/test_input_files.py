"""Inputs the user names are regular files (the trial of issue 35's fixes, finding 8): `--data`, `data info`,
`data validate` and `import` given a FIFO, a device (/dev/zero), a socket or a link to one of them (or a data
folder holding one under a domain file's name) refuse it in one line, exit 2, before reading anything: they
read /dev/zero whole (a MemoryError traceback) and waited on a FIFO for ever, as `--config` already did not.
Each command runs as a process under a timeout and a bounded address space, so that a regression fails the
test instead of hanging or exhausting the machine."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from reliability_helpers import awbench_limited, no_traceback

ADDRESS_SPACE = 4 * 2**30  # far above a command's needs; /dev/zero read whole passes it at once


def awbench(*args: object) -> subprocess.CompletedProcess[str]:
    return awbench_limited("RLIMIT_AS", ADDRESS_SPACE, *args, timeout_s=60)


def node(kind: str, folder: Path, name: str) -> tuple[Path, str]:
    """A node of `kind` named `name` in `folder` (or the system's /dev/zero), and what the refusal says of it."""
    path = folder / name
    if kind == "FIFO":
        os.mkfifo(path)  # nobody writes to it: opening it to read would wait for ever
        return path, "is a FIFO"
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(str(path))
        return path, "is a socket"
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
        return path, "leads to a character device"
    return Path("/dev/zero"), "is a character device"


RUN = ["run", "--model", "baseline:oracle", "--judge", "rules", "--run-name", "d"]
COMMANDS = {
    "data info": lambda source, out: ["data", "info", source],
    "data validate": lambda source, out: ["data", "validate", source],
    "run --data": lambda source, out: [*RUN, "--data", source, "--output", out],
    "import": lambda source, out: ["import", source, "--run-name", "i", "--output", out],
}
KINDS = ["FIFO", "socket", "link to /dev/zero", "/dev/zero"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS)
def test_an_input_that_is_not_a_file_is_refused(command: str, kind: str, tmp_path: Path) -> None:
    source, what = node(kind, tmp_path, "os_test.jsonl")
    out = tmp_path / "results"
    result = awbench(*COMMANDS[command](source, out))
    no_traceback(result)
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {source} {what}, not a regular file: awbench reads its input from files only\n",
    )
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".eval", ".json"])
@pytest.mark.parametrize("kind", ["FIFO", "link to /dev/zero"])
def test_an_inspect_log_that_is_not_a_file_is_refused(kind: str, suffix: str, tmp_path: Path) -> None:
    """`import LOG.eval` (or .json) hands the path to inspect_ai, which would open it: refused first."""
    source, what = node(kind, tmp_path, "log" + suffix)
    result = awbench("import", source, "--run-name", "i", "--output", tmp_path / "results")
    no_traceback(result)
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {source} {what}, not a regular file: awbench reads its input from files only\n",
    )


@pytest.mark.parametrize("kind", ["FIFO", "link to /dev/zero"])
def test_a_data_folder_holding_one_refuses_it(kind: str, tmp_path: Path) -> None:
    """A domain file of a data folder that is a FIFO or a device is named, not left out in silence."""
    folder = tmp_path / "data"
    folder.mkdir()
    source, what = node(kind, folder, "os_test.jsonl")
    result = awbench("data", "info", folder)
    no_traceback(result)
    assert (result.returncode, result.stderr) == (
        2,
        f"error: {source} {what}, not a regular file: awbench reads its input from files only\n",
    )

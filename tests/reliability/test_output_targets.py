"""Outputs the user names are written as the user means them (issue 35): `leaderboard -o`, `report -o` and the
charts of `report --png` onto a link to a file write the file it leads to (the link stays a link); onto a FIFO,
the reader gets what a file would hold (the FIFO stays a FIFO); onto a character device, the device gets it in
place (it stays that device); a full device (ENOSPC) or a reader gone (EPIPE) is exit 2 naming the path. Nothing
ever replaces a device, a FIFO or a link. The devices are our own (a pseudo-terminal, device nodes made in the
test's directory) until the code is proven on them: only then the system's /dev/null and /dev/full, checked
before and after."""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import struct
import subprocess
import termios
import threading
import time
import tty
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from reliability_helpers import REPO, awbench_command, clean_env, cli, no_traceback

RUN = ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os"]
CHART = "chart-domains-1.png"  # the first of the report's charts


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("made") / "results"
    result = cli(*RUN, "--run-name", "r", "--output", results)
    assert result.exit_code == 0, result.output
    return results


def command(name: str, results: Path, target: Path) -> list[object]:
    """`name`'s arguments writing its output (or, for --png, its first chart) to `target`."""
    if name == "leaderboard -o":
        return ["leaderboard", "--output", results, "--format", "csv", "-o", target]
    if name == "report -o":
        return ["report", results / "r", "-o", target, "--no-ci"]
    return ["report", results / "r", "-o", target.parent / "report.html", "--no-ci", "--png", target.parent]


def target_in(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    return folder / (CHART if name == "report --png" else "out")


@pytest.fixture(scope="module")
def expected(made: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What each command writes to a new regular file."""
    out = {}
    for name in COMMANDS:
        target = target_in(tmp_path_factory.mktemp("plain"), name)
        result = cli(*command(name, made, target))
        assert result.exit_code == 0, result.output
        out[name] = target.read_bytes()
    return out


COMMANDS = ["leaderboard -o", "report -o", "report --png"]


def node(path: Path) -> tuple[int, int]:
    info = os.lstat(path)
    return stat.S_IFMT(info.st_mode), info.st_rdev


def written(result, target: Path) -> None:
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert f"wrote {target}" in result.stdout.replace("\n", "") + result.stderr.replace("\n", "")


def refused(result, target: Path, reason: str) -> None:
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert f"error: cannot write {target}: {reason}" in result.stderr.replace("\n", ""), result.stderr


@contextmanager
def reading(fifo: Path) -> Iterator[list[bytes]]:
    """A reader on `fifo` for the duration, as `cat FIFO` would be: what it read, once the writer closed."""
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)  # daemon: blocked for good if nothing ever writes
    reader.start()
    yield got
    reader.join(timeout=30)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_link_to_a_file_writes_the_file_and_stays_a_link(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    target = target_in(tmp_path / "out", name)
    real = tmp_path / "elsewhere" / "real"
    real.parent.mkdir()
    real.write_bytes(b"the old content\n")
    target.symlink_to(real)
    written(cli(*command(name, made, target)), target)
    assert target.is_symlink() and os.readlink(target) == str(real)
    assert real.read_bytes() == expected[name]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real"]  # no temporary file left beside it


@pytest.mark.parametrize("name", COMMANDS)
def test_a_link_leading_nowhere_yet_makes_its_file(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    target = target_in(tmp_path / "out", name)
    real = tmp_path / "real"
    target.symlink_to(real)
    written(cli(*command(name, made, target)), target)
    assert target.is_symlink() and real.read_bytes() == expected[name]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_fifo_is_written_for_its_reader_and_stays_a_fifo(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    target = target_in(tmp_path / "out", name)
    os.mkfifo(target)
    with reading(target) as got:
        result = cli(*command(name, made, target))
    written(result, target)
    assert got == [expected[name]]
    assert stat.S_ISFIFO(os.lstat(target).st_mode)


def test_a_fifo_whose_reader_leaves_is_exit_2_naming_it(made: Path, tmp_path: Path) -> None:
    """The reader shrinks the pipe to one page, waits until the writer has filled it (it is then blocked on the
    rest of a 24 KB report), and leaves: the writer's next write fails with EPIPE."""
    fifo = tmp_path / "report.html"
    os.mkfifo(fifo)

    def read_a_page_and_leave() -> None:
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 4096)
        waiting = struct.pack("i", 0)
        deadline = time.monotonic() + 30
        while struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, waiting))[0] < 4096:
            assert time.monotonic() < deadline, "the report never filled the pipe"
            time.sleep(0.01)
        os.close(fd)

    reader = threading.Thread(target=read_a_page_and_leave, daemon=True)
    reader.start()
    result = cli("report", made / "r", "-o", fifo, "--no-ci")
    reader.join(timeout=30)
    refused(result, fifo, "Broken pipe")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@contextmanager
def terminal() -> Iterator[tuple[Path, list[bytes]]]:
    """A pseudo-terminal: its device (/dev/pts/N, which no file can replace) and what arrives at its other end."""
    master, slave = os.openpty()
    tty.setraw(slave)  # bytes as written: no newline translation
    got: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal closed
                return
            if not chunk:
                return
            got.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        yield Path(os.ttyname(slave)), got
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)


def wait_for(got: list[bytes], size: int) -> bytes:
    deadline = time.monotonic() + 10
    while sum(map(len, got)) < size and time.monotonic() < deadline:
        time.sleep(0.01)
    return b"".join(got)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_character_device_is_written_in_place(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with terminal() as (device, got):
        before = node(device)
        if name == "report --png":
            (out / CHART).symlink_to(device)  # --png names a folder: the chart's file there leads to the device
        target = out / CHART if name == "report --png" else device
        result = cli(*command(name, made, target))
        written(result, target)
        assert wait_for(got, len(expected[name])) == expected[name]
        assert node(device) == before


def own_device(path: Path, like: str) -> tuple[int, int]:
    """A device node in the test's directory, the same device as `like` (/dev/full): ours to lose."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.stat(like).st_rdev)
        os.close(os.open(path, os.O_WRONLY))
    except PermissionError:  # not root, or a file system mounted nodev
        pytest.skip(f"cannot make and open a device node like {like} here")
    return node(path)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_device_is_exit_2_naming_it_and_stays_a_device(name: str, made: Path, tmp_path: Path) -> None:
    target = target_in(tmp_path / "out", name)
    before = own_device(target, "/dev/full")
    refused(cli(*command(name, made, target)), target, "No space left on device")
    assert node(target) == before


@pytest.mark.parametrize("name", COMMANDS)
def test_a_socket_is_refused_and_stays_a_socket(name: str, made: Path, tmp_path: Path) -> None:
    target = target_in(tmp_path / "out", name)
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(target))
        result = cli(*command(name, made, target))
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert f"error: {target} is a socket: awbench writes an output to a file, a FIFO or a character device" in (
        result.stderr.replace("\n", "")
    )
    assert stat.S_ISSOCK(os.lstat(target).st_mode)


def test_the_systems_null_and_full_devices_stay_devices(made: Path, tmp_path: Path) -> None:
    """Proven first on a device nothing can replace (a pseudo-terminal), then the system's own: -o /dev/null
    writes nothing anywhere, -o /dev/full is exit 2; both are the same device nodes after as before."""
    with terminal() as (device, got):
        written(cli("leaderboard", "--output", made, "--format", "csv", "-o", device), device)
        assert wait_for(got, 1) and stat.S_ISCHR(os.lstat(device).st_mode)
    null, full = node(Path("/dev/null")), node(Path("/dev/full"))
    assert null[0] == full[0] == stat.S_IFCHR
    written(cli("leaderboard", "--output", made, "--format", "csv", "-o", "/dev/null"), Path("/dev/null"))
    refused(cli("leaderboard", "--output", made, "--format", "csv", "-o", "/dev/full"), Path("/dev/full"), "No space")
    assert node(Path("/dev/null")) == null and node(Path("/dev/full")) == full


def test_dev_stdout_into_a_pipe_is_the_pipe(made: Path, expected: dict[str, bytes]) -> None:
    """`-o /dev/stdout` leads (through /proc) to the process's stdout: a pipe here, which no path names."""
    result = subprocess.run(
        awbench_command("leaderboard", "--output", made, "--format", "csv", "-o", "/dev/stdout"),
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected["leaderboard -o"]

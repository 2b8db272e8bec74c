"""Outputs the user names are written as the user means them (issue 35): `leaderboard -o`, `report -o` and the
charts of `report --png` onto a link to a file write the file it leads to (the link stays a link); onto a FIFO,
the reader gets what a file would hold (the FIFO stays a FIFO); onto a character device, the device gets it in
place (it stays that device); a full device (ENOSPC) or a reader gone (EPIPE) is exit 2 naming the path. Nothing
ever replaces a device, a FIFO or a link. The devices are our own (a pseudo-terminal, device nodes made in the
test's directory) until the code is proven on them: only then the system's /dev/null and /dev/full, checked
before and after.

And (the trial of issue 35's fixes): /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N, or the very file on
stdout, are written through the descriptor as the shell opened it (`>>` appends, and what follows the command
is not lost); a file replaced keeps its permissions, and a read-only one is not replaced; a path ending in '/'
is no file's name; in a folder the user names (`--png`, `--official`) only files are written, never a FIFO or a
device found there."""

from __future__ import annotations

import fcntl
import os
import re
import shlex
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
from reliability_helpers import REPO, awbench, awbench_command, clean_env, cli, no_traceback
from runs_helpers import make_run, write_data

RUN = ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os"]
CHART = "chart-domains-1.png"  # the first of the report's charts
FOLDER_FILES = {"report --png": CHART, "export --official": "predictions.jsonl"}  # the file written into a folder


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """results/r, a rule-judged run; beside it rewards/both, a run with an LLM and a rule evaluation (--reward)."""
    results = tmp_path_factory.mktemp("made") / "results"
    result = cli(*RUN, "--run-name", "r", "--output", results)
    assert result.exit_code == 0, result.output
    data = write_data(results.parent / "data", {"mcp": [1]})
    make_run(results.parent / "rewards", "both", data, {"mcp/m0/1": 4}, rules={"mcp/m0/1": 1.0})
    return results


def command(name: str, results: Path, target: Path | str) -> list[object]:
    """`name`'s arguments writing its output (or, for --png and --official, its first file) to `target` (a
    string: given as it is typed)."""
    if name == "leaderboard -o":
        return ["leaderboard", "--output", results, "--format", "csv", "-o", target]
    if name == "report -o":
        return ["report", results / "r", "-o", target, "--no-ci"]
    if name == "score --reward":
        return ["score", "both", "--output", results.parent / "rewards", "--reward", target]
    folder = Path(target).parent
    if name == "export --official":
        return ["export", "r", "--output", results, "--official", folder]
    return ["report", results / "r", "-o", folder / "report.html", "--no-ci", "--png", folder]


def target_in(folder: Path, name: str) -> Path:
    folder.mkdir(exist_ok=True)
    return folder / FOLDER_FILES.get(name, "out")


def stable(output: bytes) -> bytes:
    """An output without the minute the report says it was generated in (as long: a reader waits for as many
    bytes): two reports of the same runs made a minute apart differ there alone."""
    return re.sub(rb"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", b"generated YYYY-MM-DD HH:MM UTC", output)


@pytest.fixture(scope="module")
def expected(made: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """What each command writes to a new regular file."""
    out = {}
    for name in OUTPUTS:
        target = target_in(tmp_path_factory.mktemp("plain"), name)
        result = cli(*command(name, made, target))
        assert result.exit_code == 0, result.output
        out[name] = stable(target.read_bytes())
    return out


COMMANDS = ["leaderboard -o", "report -o", "report --png"]
IN_PLACE = ["leaderboard -o", "report -o"]  # a path named as it is: a FIFO or a device there is written in place
OUTPUTS = ["leaderboard -o", "report -o", "score --reward", "report --png", "export --official"]


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
    assert stable(real.read_bytes()) == expected[name]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real"]  # no temporary file left beside it


@pytest.mark.parametrize("name", COMMANDS)
def test_a_link_leading_nowhere_yet_makes_its_file(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    target = target_in(tmp_path / "out", name)
    real = tmp_path / "real"
    target.symlink_to(real)
    written(cli(*command(name, made, target)), target)
    assert target.is_symlink() and stable(real.read_bytes()) == expected[name]


@pytest.mark.parametrize("name", IN_PLACE)
def test_a_fifo_is_written_for_its_reader_and_stays_a_fifo(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    target = target_in(tmp_path / "out", name)
    os.mkfifo(target)
    with reading(target) as got:
        result = cli(*command(name, made, target))
    written(result, target)
    assert [stable(chunk) for chunk in got] == [expected[name]]
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


@pytest.mark.parametrize("name", IN_PLACE)
def test_a_character_device_is_written_in_place(name: str, made: Path, expected: dict[str, bytes]) -> None:
    with terminal() as (device, got):
        before = node(device)
        result = cli(*command(name, made, device))
        written(result, device)
        assert stable(wait_for(got, len(expected[name]))) == expected[name]
        assert node(device) == before


def own_device(path: Path, like: str) -> tuple[int, int]:
    """A device node in the test's directory, the same device as `like` (/dev/full): ours to lose."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.stat(like).st_rdev)
        os.close(os.open(path, os.O_WRONLY))
    except PermissionError:  # not root, or a file system mounted nodev
        pytest.skip(f"cannot make and open a device node like {like} here")
    return node(path)


@pytest.mark.parametrize("name", IN_PLACE)
def test_a_full_device_is_exit_2_naming_it_and_stays_a_device(name: str, made: Path, tmp_path: Path) -> None:
    target = target_in(tmp_path / "out", name)
    before = own_device(target, "/dev/full")
    refused(cli(*command(name, made, target)), target, "No space left on device")
    assert node(target) == before


@pytest.mark.parametrize("name", IN_PLACE)
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


# --- Descriptors: /dev/stdout and the like (the trial of issue 35's fixes, finding 1) -------------------------

EARLIER = b"earlier lines of my log\n"
# target -> (the descriptor the shell opens the log on, the path given to -o; {log}: the log's own path)
DESCRIPTORS = {
    "/dev/stdout": (1, "/dev/stdout"),
    "/dev/fd/1": (1, "/dev/fd/1"),
    "/proc/self/fd/1": (1, "/proc/self/fd/1"),
    "a link to /dev/stdout": (1, "{tmp}/to-stdout"),
    "the log's own path": (1, "{log}"),
    "/dev/stderr": (2, "/dev/stderr"),
    "/dev/fd/3": (3, "/dev/fd/3"),
}
THROUGH_STDOUT = [("leaderboard -o", target) for target in DESCRIPTORS] + [
    ("report -o", "/dev/stdout"),
    ("score --reward", "/dev/stdout"),
]


@pytest.mark.parametrize(("name", "target"), THROUGH_STDOUT)
def test_a_descriptor_is_written_through_as_the_shell_opened_it(
    name: str, target: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    """`(awbench ... -o /dev/stdout; echo after) >> log`: the log keeps its earlier lines, gets the output after
    them, and the `after` the shell writes next (the trial: the log was replaced by a new file holding the output
    alone, and `after` went to the old one, unlinked)."""
    fd, given = DESCRIPTORS[target]
    log = tmp_path / "my.log"
    log.write_bytes(EARLIER)
    (tmp_path / "to-stdout").symlink_to("/dev/stdout")
    path = given.format(tmp=tmp_path, log=log)
    script = f"({shlex.join(awbench_command(*command(name, made, Path(path))))}; echo after >&{fd}) {fd}>>{log}"
    done = subprocess.run(["bash", "-c", script], cwd=REPO, env=clean_env(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert stable(log.read_bytes()).startswith(EARLIER + expected[name]), log.read_bytes()[:300]
    assert log.read_bytes().endswith(b"after\n")
    assert stat.S_ISREG(os.lstat(log).st_mode) and os.lstat(log).st_nlink == 1  # the same file, written in place


def test_a_descriptor_awbench_opened_for_itself_is_never_written(made: Path, tmp_path: Path) -> None:
    """/dev/fd/N of a descriptor the process opened itself (here, in the same process: as awbench opens its
    runs' files and its connections, not inherited) is refused, and its file left as it was."""
    own = tmp_path / "own"
    own.write_bytes(b"awbench's own file\n")
    fd = os.open(own, os.O_RDWR)
    try:
        result = cli("leaderboard", "--output", made, "--format", "csv", "-o", f"/dev/fd/{fd}")
    finally:
        os.close(fd)
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert f"error: /dev/fd/{fd} is descriptor {fd}, which awbench opened for itself" in result.stderr
    assert own.read_bytes() == b"awbench's own file\n"


# --- Permissions and paths of the files replaced (finding 9) --------------------------------------------------


@pytest.mark.parametrize("name", OUTPUTS)
def test_a_replaced_output_keeps_its_permissions(
    name: str, made: Path, tmp_path: Path, expected: dict[str, bytes]
) -> None:
    """A private (0600) file stays private (the trial: it became 0644); as root, its owner and group stay."""
    target = target_in(tmp_path / "out", name)
    target.write_bytes(b"the old content\n")
    os.chmod(target, 0o600)
    owner = (4321, 4321) if os.geteuid() == 0 else (os.getuid(), os.getgid())
    os.chown(target, *owner)
    result = cli(*command(name, made, target))
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert stable(target.read_bytes()) == expected[name]
    info = os.stat(target)
    assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o600, *owner)


@pytest.mark.parametrize("name", OUTPUTS)
def test_a_read_only_output_is_not_replaced(name: str, made: Path, tmp_path: Path) -> None:
    """A 0444 file is refused, even to the superuser (who may write anything, as `cp` does): exit 2, the file
    as it was (the trial: replaced by a 0644 file)."""
    target = target_in(tmp_path / "out", name)
    target.write_bytes(b"keep me\n")
    os.chmod(target, 0o444)
    result = cli(*command(name, made, target))
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert f"error: cannot write {target}: it is read-only (mode 0444)" in result.stderr.replace("\n", "")
    assert target.read_bytes() == b"keep me\n" and stat.S_IMODE(os.stat(target).st_mode) == 0o444


@pytest.mark.parametrize("ending", ["/", "/.", "/.."])
@pytest.mark.parametrize(
    ("name", "option"), [("leaderboard -o", "--out"), ("report -o", "--out"), ("score --reward", "--reward")]
)
def test_a_path_ending_in_a_separator_is_no_file(
    name: str, option: str, ending: str, made: Path, tmp_path: Path
) -> None:
    """`-o newdir/` wrote a file named newdir: refused before anything is made."""
    given = f"{tmp_path / 'newdir'}{ending}"  # as typed: a Path would drop the ending
    before = sorted(tmp_path.iterdir())
    result = cli(*command(name, made, given))
    no_traceback(result)
    assert result.exit_code == 2, result.output
    refusal = f"error: {option} {given!r}: a path ending in '/' (or '.', '..') names a folder"
    assert refusal in result.stderr.replace("\n", "")
    assert sorted(tmp_path.iterdir()) == before


# --- Folders the user names: only files written into them (finding 14) ----------------------------------------


@pytest.mark.parametrize("kind", ["FIFO", "link to a FIFO", "character device", "socket"])
@pytest.mark.parametrize("name", FOLDER_FILES)
def test_a_folder_output_writes_only_files_into_it(name: str, kind: str, made: Path, tmp_path: Path) -> None:
    """A FIFO planted where `--png` or `--official` writes a file blocked the command for ever, silently: refused
    at once (a process under a timeout), naming it; the node stays as it was."""
    target = target_in(tmp_path / "out", name)
    node_path = tmp_path / "fifo" if kind == "link to a FIFO" else target
    if kind == "character device":
        own_device(target, "/dev/null")
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as listening:
            listening.bind(str(target))
    else:
        os.mkfifo(node_path)
    if kind == "link to a FIFO":
        target.symlink_to(node_path)
    before = node(node_path)
    result = awbench(*command(name, made, target), timeout_s=60)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    what = {"socket": "a socket", "character device": "a character device"}.get(kind, "a FIFO")
    assert f"error: {target} is {what}: awbench writes only files into a folder it is given" in (
        result.stderr.replace("\n", "")
    )
    assert node(node_path) == before


FOLDER_WRITERS = {  # a folder option: where in it the file is written, and the command
    "report --png": (CHART, lambda made, folder: command("report --png", made, folder / CHART)),
    "export --official": ("predictions.jsonl", lambda made, folder: command("export --official", made, folder / "x")),
    "export --hf-eval-results": (
        ".eval_results/agentworldbench.yaml",
        lambda made, folder: [
            "export",
            "both",
            "--output",
            made.parent / "rewards",
            "--hf-eval-results",
            folder,
            "--allow-subset",
        ],
    ),
}


@pytest.mark.parametrize("victim", ["predictions.jsonl", "scores.json", "run.json"])
@pytest.mark.parametrize("name", FOLDER_WRITERS)
def test_a_link_in_a_folder_output_never_leads_into_a_run(name: str, victim: str, made: Path, tmp_path: Path) -> None:
    """A link planted in `--png DIR`, `--official DIR` or `--hf-eval-results DIR` where the command writes its
    file made it replace what the link led to: a run's predictions, scores or manifest (the run unreadable after).
    Refused, naming the link and the run; the run's file stays as it was (a link to a file of the user's is
    written through, as above)."""
    run_file = made / "r" / victim
    before = run_file.read_bytes()
    where, arguments = FOLDER_WRITERS[name]
    link = tmp_path / "out" / where
    link.parent.mkdir(parents=True)
    link.symlink_to(run_file)
    result = awbench(*arguments(made, tmp_path / "out"), timeout_s=120)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    option = name.split()[1]
    message = f"error: {option} {link} lies inside the run directory {(made / 'r').resolve()}"
    assert message in result.stderr.replace("\n", "")
    assert run_file.read_bytes() == before and link.is_symlink()


def test_ls_of_a_missing_output_names_it(tmp_path: Path) -> None:
    """`ls --output /nonexistent` said `no runs under` it and exited 0, as an empty folder would."""
    missing = tmp_path / "nonexistent"
    result = cli("ls", "--output", missing)
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {missing} is not a directory\n"

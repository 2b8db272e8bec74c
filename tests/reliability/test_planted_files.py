"""awbench writes only its own files (issue 35): a link, FIFO or device planted where awbench keeps a file or a
folder of its own (a run's `.lock`, `predictions.jsonl`, `scores.json`, `run.json`, `judges/<id>/`, `turing/<id>/`,
`OUTPUT/pairwise/...`) is refused with exit 2 naming it, and what it leads to is neither written nor read: every
planted node and every victim is byte for byte (and node for node) what it was. Each command runs as a process
with a timeout and a bounded address space, so that a regression (a FIFO waited on, /dev/zero read to its end)
fails the test instead of hanging or exhausting the machine. Runs as root too: nothing relies on permissions.

And (the trial of issue 35's fixes): a file awbench appends to or replaces that has another name (a hard link) is
refused, never written nor cut; a run directory that is a link is refused by every command that writes to it,
`import --overwrite` included; a file where an evaluation's folder belongs is refused, naming it."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer
from reliability_helpers import awbench_limited, choice_judge_args, cli, make_judged_runs, no_traceback

from awbench import files

RUN = ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os", "--run-name"]
VICTIM = b"someone else's file\n"
ADDRESS_SPACE = 4 * 2**30  # far above a command's needs; /dev/zero read whole would pass it at once


def awbench(*args: object, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return awbench_limited("RLIMIT_AS", ADDRESS_SPACE, *args, timeout_s=timeout_s)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, choice_judge: FakeOpenAIServer) -> Path:
    """Two rule-judged runs of the sample's OS domain (r: the oracle, q: the last observation), a Turing test of r
    and a pairwise comparison of q and r: every folder awbench keeps."""
    results = tmp_path_factory.mktemp("made") / "results"
    make_judged_runs(results, choice_judge.url)
    pairwise = cli("compare", "q", "r", "--output", results, "--pairwise", *choice_judge_args(choice_judge.url))
    assert pairwise.exit_code == 0, pairwise.output
    return results


@pytest.fixture
def results(made: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(made, copy, symlinks=True)
    return copy


def only(pattern: str, root: Path) -> Path:
    (found,) = root.glob(pattern)
    return found


def tree(root: Path) -> dict[str, object]:
    """Every node under root as it is, without following a link or opening anything but regular files: a file's
    bytes, a link's target, a device's number, or the kind of node."""
    nodes: dict[str, object] = {}
    for folder, folders, names in os.walk(root):
        for name in folders + names:
            path = Path(folder, name)
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                nodes[str(path.relative_to(root))] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                nodes[str(path.relative_to(root))] = path.read_bytes()
            elif stat.S_ISCHR(info.st_mode):
                nodes[str(path.relative_to(root))] = ("character device", info.st_rdev)
            else:
                nodes[str(path.relative_to(root))] = stat.S_IFMT(info.st_mode)
    return nodes


def device(path: Path) -> None:
    """A character device of our own, like /dev/null (root can make one; elsewhere the case is skipped)."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD)")


def plant(path: Path, kind: str, victim: Path) -> str:
    """Put a node of `kind` at `path` (what was there removed); the words awbench's refusal says of it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    if kind == "link to a file":
        path.symlink_to(victim)
        return "is a symbolic link"
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
        return "is a symbolic link"
    if kind == "FIFO":
        os.mkfifo(path)
        return "is a FIFO"
    device(path)
    return "is a character device"


def refused(result: subprocess.CompletedProcess[str], path: Path, words: str) -> None:
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: {path} {words}, where awbench keeps " in result.stderr.replace("\n", ""), result.stderr


KINDS = ["link to a file", "link to /dev/zero", "FIFO", "device"]

# command -> (its arguments, given the results directory and the judge's arguments; the folder of the .lock it takes)
LOCKING: dict[str, tuple[Callable[[Path, list[str]], list[object]], Callable[[Path], Path]]] = {
    "score": (lambda out, judge: ["score", "r", "--output", out], lambda out: out / "r"),
    "judge": (lambda out, judge: ["judge", "r", "--judge", "rules", "--output", out], lambda out: out / "r"),
    "run": (lambda out, judge: [*RUN, "r", "--output", out], lambda out: out / "r"),
    "turing": (lambda out, judge: ["turing", "r", "--output", out, *judge], lambda out: out / "r"),
    "compare --pairwise": (
        lambda out, judge: ["compare", "q", "r", "--output", out, "--pairwise", *judge],
        lambda out: only("pairwise/*/*/*", out),
    ),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", LOCKING)
def test_a_planted_lock_is_refused_and_nothing_is_written_through_it(
    command: str, kind: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """The issue's payload: `.lock` linked to someone's file was truncated and overwritten with the holder's line;
    a FIFO hung the command; /dev/zero exhausted its memory."""
    arguments, folder = LOCKING[command]
    lock = folder(results) / ".lock"
    if command == "compare --pairwise":
        (lock.parent / "answers.jsonl").unlink()  # questions to ask again: the pair's folder is locked for them
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    words = plant(lock, kind, victim)
    before = tree(tmp_path)
    result = awbench(*arguments(results, choice_judge_args(choice_judge.url)))
    refused(result, lock, words)
    assert tree(tmp_path) == before


def test_a_lock_that_is_a_hard_link_is_never_written(results: Path, tmp_path: Path) -> None:
    """A hard link is a regular file awbench cannot tell from its own: a lock file with other names (or anything
    in it) is left as it is and a new one made, never truncated nor written."""
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    os.link(victim, results / "r" / ".lock")
    result = awbench("score", "r", "--output", results)
    assert result.returncode == 0, result.stderr
    assert victim.read_bytes() == VICTIM and victim.stat().st_nlink == 1
    assert not (results / "r" / ".lock").exists()


def test_ls_reads_no_planted_lock(results: Path, tmp_path: Path) -> None:
    """A FIFO named `.lock` hung `awbench ls`; a `.lock` or `scores.json` linked to /dev/zero exhausted its memory:
    each such run is skipped with a note naming the file, at once."""
    fifo, zero, scores = results / "r" / ".lock", results / "q" / ".lock", results / "p" / "scores.json"
    shutil.copytree(results / "q", results / "p")
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    scores.unlink()
    scores.symlink_to("/dev/zero")
    result = awbench("ls", "--output", results, "--format", "json", timeout_s=30)
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    notes = result.stderr.replace("\n", "")
    assert f"skipped {results / 'r'}: {fifo} is a FIFO, where awbench keeps a file of its own" in notes
    assert f"skipped {results / 'q'}: {zero} is a symbolic link, where awbench keeps a file of its own" in notes
    assert f"skipped {results / 'p'}: {scores} is a symbolic link, where awbench keeps a file of its own" in notes


PREDICTIONS_COMMANDS = {
    "run --retry-failed": lambda out: [*RUN, "r", "--output", out, "--retry-failed"],
    "score": lambda out: ["score", "r", "--output", out],
    "show": lambda out: ["show", "r", "--output", out],
    "ls RUN": lambda out: ["ls", out / "r"],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", PREDICTIONS_COMMANDS)
def test_a_planted_predictions_file_is_refused(command: str, kind: str, results: Path, tmp_path: Path) -> None:
    """`predictions.jsonl` linked to someone's file got lines appended by `run --retry-failed`: here the victim
    is that run's predictions less the last record, which a resume would append."""
    predictions = results / "r" / "predictions.jsonl"
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(b"".join(predictions.read_bytes().splitlines(keepends=True)[:-1]))
    words = plant(predictions, kind, victim)
    before = tree(tmp_path)
    result = awbench(*PREDICTIONS_COMMANDS[command](results))
    refused(result, predictions, words)
    after = tree(tmp_path)
    if command.startswith("run"):  # resuming records this command's settings in run.json before reading records
        before.pop("results/r/run.json"), after.pop("results/r/run.json")
    assert after == before


# file of run r -> the commands that read it
READERS = {
    "scores.json": ["score"],  # the primary's, copied beside the run (and read by `ls`: see above)
    "run.json": ["show", "score", "judge"],
    "judges/*/judge.json": ["show", "score", "judge"],
    "judges/*/judgments.jsonl": ["show", "score", "judge"],
    "turing/*/answers.jsonl": ["show", "turing", "judges"],
    "turing/*/positions.secret": ["turing"],
}
READS = [(file, command) for file, commands in READERS.items() for command in commands]


def reader_args(command: str, results: Path, choice_judge: FakeOpenAIServer) -> list[object]:
    return {
        "show": ["show", "r", "--output", results],
        "score": ["score", "r", "--output", results],
        "judge": ["judge", "r", "--judge", "rules", "--output", results],
        "leaderboard": ["leaderboard", "--output", results, "--format", "json"],
        "turing": ["turing", "r", "--output", results, *choice_judge_args(choice_judge.url)],
        "judges": ["judges", results / "r", "--format", "json"],
    }[command]


@pytest.mark.parametrize("kind", ["link to /dev/zero", "FIFO"])
@pytest.mark.parametrize(("file", "command"), READS)
def test_a_planted_file_is_never_read(
    file: str, command: str, kind: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """A `scores.json` linked to /dev/zero exhausted the memory of every command that read it."""
    path = only(file, results / "r")
    words = plant(path, kind, tmp_path / "victim")
    before = tree(tmp_path)
    result = awbench(*reader_args(command, results, choice_judge))
    refused(result, path, words)
    assert tree(tmp_path) == before


# folder -> the commands that use it; each is replaced by a link to a copy of itself elsewhere, which looks as
# awbench's own folder would (so that only the link can give it away)
FOLDERS = {
    "r/turing/*": ["turing", "show", "judges"],
    "r/turing": ["turing", "show"],
    "r/judges/*": ["judge", "score", "show"],
    "r/judges": ["judge", "score"],
    "pairwise/*/*/*": ["compare --pairwise"],
    "pairwise/*/*": ["compare --pairwise"],
    "pairwise/*": ["compare --pairwise"],
    "pairwise": ["compare --pairwise"],
}
FOLDER_CASES = [(folder, command) for folder, commands in FOLDERS.items() for command in commands]


@pytest.mark.parametrize(("folder", "command"), FOLDER_CASES)
def test_a_planted_folder_link_is_refused(
    folder: str, command: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """A `turing/<judge id>` link received `turing.json` and `answers.jsonl`."""
    path = only(folder, results)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(path, elsewhere)
    if command == "compare --pairwise":
        next(elsewhere.rglob("answers.jsonl")).unlink()  # questions to ask again
    path.symlink_to(elsewhere, target_is_directory=True)
    before = tree(tmp_path)
    if command == "compare --pairwise":
        args: list[object] = [
            "compare",
            "q",
            "r",
            "--output",
            results,
            "--pairwise",
            *choice_judge_args(choice_judge.url),
        ]
    else:
        args = reader_args(command, results, choice_judge)
    result = awbench(*args)
    refused(result, path, "is a symbolic link")
    assert tree(tmp_path) == before


def test_overwrite_never_follows_a_link(results: Path, tmp_path: Path) -> None:
    """`--overwrite` with a run name that is a link replaced the run it led to: refused, the run as it was; links
    inside a run that --overwrite empties are removed, never what they lead to."""
    other = tmp_path / "other"
    shutil.move(results / "q", other)
    (results / "q").symlink_to(other, target_is_directory=True)
    before = tree(tmp_path)
    result = awbench(*RUN, "q", "--output", results, "--overwrite")
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: run {results / 'q'} is a symbolic link: awbench writes to a run only in its own directory" in (
        result.stderr.replace("\n", "")
    )
    assert tree(tmp_path) == before

    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "precious").write_bytes(VICTIM)
    (results / "r" / "planted").symlink_to(kept, target_is_directory=True)
    again = awbench(*RUN, "r", "--output", results, "--overwrite")
    assert again.returncode == 0, again.stderr
    assert not os.path.lexists(results / "r" / "planted") and (kept / "precious").read_bytes() == VICTIM


def test_a_run_file_larger_than_awbench_writes_is_not_read(results: Path) -> None:
    """A sparse `run.json` of 8 GB (or any file grown past the bound) is refused from its size, unread."""
    manifest = results / "r" / "run.json"
    with open(manifest, "r+b") as handle:
        handle.truncate(8 * 2**30)
    result = awbench("show", "r", "--output", results, timeout_s=30)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: {manifest} holds more than {files.MAX_READ_BYTES:,} bytes, more than awbench ever writes there" in (
        result.stderr.replace("\n", "")
    )


def test_a_record_longer_than_the_bound_names_its_line(results: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """JSONL files are read line by line, each line bounded (a predictions file may be gigabytes; one record
    is not): the bound lowered to 64 KiB here, a 100 KB line is refused naming the file and line."""
    predictions = results / "r" / "predictions.jsonl"
    lines = predictions.read_bytes().splitlines(keepends=True)
    lines.insert(2, b'{"key": "' + b"x" * 100_000 + b'"}\n')
    predictions.write_bytes(b"".join(lines))
    monkeypatch.setattr(files, "MAX_READ_BYTES", 64 * 1024)
    result = cli("score", "r", "--output", results)
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert f"{predictions}:3: a line of more than 65,536 bytes" in result.stderr.replace("\n", "")


# --- Hard links (the trial of issue 35's fixes, finding 2) ---------------------------------------------------


def cut_last_line(path: Path) -> None:
    """The file less its last record: a command resuming it appends that record again."""
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))


# file -> (it is appended to: its last line cut so that the command has a record to append; the command)
WRITTEN: dict[str, tuple[bool, Callable[[Path, list[str]], list[object]]]] = {
    "r/predictions.jsonl": (True, lambda out, judge: [*RUN, "r", "--output", out]),
    "r/judges/*/judgments.jsonl": (True, lambda out, judge: ["judge", "r", "--judge", "rules", "--output", out]),
    "r/turing/*/answers.jsonl": (True, lambda out, judge: ["turing", "r", "--output", out, *judge]),
    "pairwise/*/*/*/answers.jsonl": (
        True,
        lambda out, judge: ["compare", "q", "r", "--output", out, "--pairwise", *judge],
    ),
    "r/scores.json": (False, lambda out, judge: ["score", "r", "--output", out]),
    "r/judges/*/scores.json": (False, lambda out, judge: ["score", "r", "--output", out]),
    "r/run.json": (False, lambda out, judge: ["score", "r", "--output", out, "--failure-policy", "exclude"]),
}


@pytest.mark.parametrize("file", WRITTEN)
def test_a_written_file_with_another_name_is_refused(
    file: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """`predictions.jsonl`, `judgments.jsonl` or `answers.jsonl` with a second name got records appended to the
    file of that name (the lock alone checked): refused, naming it, and the other file as it was, still linked."""
    appended, arguments = WRITTEN[file]
    path = only(file, results)
    if appended:
        cut_last_line(path)
    victim = tmp_path / "victim"
    shutil.copyfile(path, victim)
    path.unlink()
    os.link(victim, path)
    before = victim.read_bytes()
    result = awbench(*arguments(results, choice_judge_args(choice_judge.url)))
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: {path} has 1 other name(s) (a hard link), where awbench keeps a file of its own" in (
        result.stderr.replace("\n", "")
    )
    assert victim.read_bytes() == before and victim.stat().st_nlink == 2


def test_a_linked_file_without_a_final_newline_is_never_cut(results: Path, tmp_path: Path) -> None:
    """The trial's worst case: someone's file of one line without a newline, linked as `predictions.jsonl`, was
    read as one torn line, cut to nothing and then overwritten by the resumed run."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious single line without newline")
    predictions = results / "r" / "predictions.jsonl"
    predictions.unlink()
    os.link(victim, predictions)
    result = awbench(*RUN, "r", "--output", results)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: {predictions} has 1 other name(s) (a hard link)" in result.stderr.replace("\n", "")
    assert victim.read_bytes() == b"precious single line without newline"


# --- Links as run folders, files as evaluations' folders (finding 12) ----------------------------------------

INFER = ["infer", "--model", "baseline:oracle", "--data", "sample", "--domains", "os"]
WRITERS: dict[str, Callable[[Path, list[str]], list[object]]] = {
    "score": lambda out, judge: ["score", "r", "--output", out],
    "judge": lambda out, judge: ["judge", "r", "--judge", "rules", "--output", out],
    "run": lambda out, judge: [*RUN, "r", "--output", out],
    "infer": lambda out, judge: [*INFER, "--run-name", "r", "--output", out],
    "turing": lambda out, judge: ["turing", "r", "--output", out, *judge],
}


def link_the_run(results: Path, elsewhere: Path) -> Path:
    """results/r moved to `elsewhere`, and a link to it in its place (its scores.json removed, which scoring
    would write again: so that a write through the link shows)."""
    shutil.move(results / "r", elsewhere)
    (elsewhere / "scores.json").unlink()
    (results / "r").symlink_to(elsewhere, target_is_directory=True)
    return results / "r"


@pytest.mark.parametrize("command", WRITERS)
def test_a_run_directory_that_is_a_link_is_refused_by_every_writer(
    command: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """`score`, `run` and `infer` wrote run.json and scores.json through a run directory that is a link, while
    --overwrite refused it: every command that writes to a run refuses it, in one line."""
    link = link_the_run(results, tmp_path / "elsewhere")
    before = tree(tmp_path)
    result = awbench(*WRITERS[command](results, choice_judge_args(choice_judge.url)))
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        f"error: run {link} is a symbolic link: awbench writes to a run only in its own directory, never through a "
        f"link (nor empties what one leads to); use the directory it leads to, {tmp_path / 'elsewhere'}\n"
    )
    assert tree(tmp_path) == before


def test_import_overwrite_onto_a_run_that_is_a_link_is_refused(results: Path, tmp_path: Path) -> None:
    """It said "cannot write .../r: Is a directory" and left a `.r.replaced-*` folder behind each time."""
    official = tmp_path / "official"
    assert cli("export", "r", "--output", results, "--official", official).exit_code == 0
    link = link_the_run(results, tmp_path / "elsewhere")
    before = tree(tmp_path)
    for _ in range(2):
        result = awbench(
            "import", official / "predictions.jsonl", "--run-name", "r", "--output", results, "--overwrite"
        )
        no_traceback(result)
        assert result.returncode == 2, result.stderr
        assert f"error: run {link} is a symbolic link" in result.stderr
        assert tree(tmp_path) == before


# folder of run r -> the commands that read it
EVALUATION_FOLDERS = {"judges/*": ["show", "score", "judge"], "turing/*": ["judges", "show", "turing"]}
FOLDER_READS = [(folder, command) for folder, commands in EVALUATION_FOLDERS.items() for command in commands]


@pytest.mark.parametrize(("folder", "command"), FOLDER_READS)
def test_a_file_where_an_evaluation_folder_belongs_is_refused(
    folder: str, command: str, results: Path, tmp_path: Path, choice_judge: FakeOpenAIServer
) -> None:
    """`judges/<id>` or `turing/<id>` planted as a file was skipped in silence ("has not been judged yet")."""
    path = only(folder, results / "r")
    shutil.rmtree(path)
    path.write_bytes(VICTIM)
    before = tree(tmp_path)
    result = awbench(*reader_args(command, results, choice_judge))
    refused(result, path, "is a file")
    assert tree(tmp_path) == before


def test_every_file_awbench_replaces_refuses_a_second_name(tmp_path: Path) -> None:
    """`files.write_atomic` writes every JSON file of a run (`batches.json` of a Batch API judge, `judge.json`,
    `turing.json`, `positions.secret`...) and `JsonlTable.rewrite` its rewritten tables: a file there with a
    second name is refused before anything is written, and the other name's file stays as it was."""
    victim = tmp_path / "victim"
    victim.write_bytes(VICTIM)
    batches = tmp_path / "batches.json"
    os.link(victim, batches)
    with pytest.raises(files.StoreError, match=r"batches\.json has 1 other name\(s\) \(a hard link\)"):
        files.write_atomic(batches, "{}\n")
    assert victim.read_bytes() == VICTIM and victim.stat().st_nlink == 2

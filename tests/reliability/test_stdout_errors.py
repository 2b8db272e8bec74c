"""Standard output that cannot take what a command prints (issue 35): on a full device (`awbench ls > /dev/full`)
every command ends with one line on stderr and exit 2, never a traceback; a reader that leaves early
(`awbench ls | head`) ends it quietly, as other tools end (exit 1, nothing on stderr). What a command wrote
before printing (a run imported, scores) is kept. Real processes, their stdout the system's /dev/full (which
awbench only writes to) or a pipe whose reader is gone."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer
from reliability_helpers import REPO, awbench_command, choice_judge_args, clean_env, cli, make_judged_runs, no_traceback

RUN = ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os"]
FULL = "error: cannot write to standard output: No space left on device\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, choice_judge: FakeOpenAIServer) -> Path:
    """Runs r and q, a Turing test of r, and r's predictions exported in the reference's format."""
    results = tmp_path_factory.mktemp("made") / "results"
    make_judged_runs(results, choice_judge.url)
    exported = cli("export", "r", "--output", results, "--official", results.parent / "official")
    assert exported.exit_code == 0, exported.output
    return results


@pytest.fixture
def results(made: Path, tmp_path: Path) -> Path:
    shutil.copytree(made.parent, tmp_path, dirs_exist_ok=True)
    return tmp_path / "results"


COMMANDS = {
    "turing": lambda out, judge: ["turing", "r", "--output", out, *judge],
    "judges": lambda out, judge: ["judges", out / "r"],
    "ls": lambda out, judge: ["ls", "--output", out],
    "ls RUN": lambda out, judge: ["ls", out / "r"],
    "compare": lambda out, judge: ["compare", "q", "r", "--output", out],
    "leaderboard": lambda out, judge: ["leaderboard", "--output", out],
    "leaderboard --format json": lambda out, judge: ["leaderboard", "--output", out, "--format", "json"],
    "score": lambda out, judge: ["score", "r", "--output", out],
    "show": lambda out, judge: ["show", "r", "--output", out],
    "show --sample": lambda out, judge: ["show", "r", "--output", out, "--sample", "os/2/1"],
    "data info": lambda out, judge: ["data", "info", "sample"],
    "run --print-config": lambda out, judge: [*RUN, "--run-name", "p", "--output", out, "--print-config"],
    "run": lambda out, judge: [*RUN, "--run-name", "r", "--output", out],
    "import": lambda out, judge: ["import", out.parent / "official" / "predictions.jsonl", "--run-name", "imp"],
}


def awbench(*args: object, stdout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        awbench_command(*args),
        cwd=REPO,
        env=clean_env(),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_stdout_is_one_line_and_exit_2(
    name: str, results: Path, choice_judge: FakeOpenAIServer, tmp_path: Path
) -> None:
    if not stat.S_ISCHR(os.stat("/dev/full").st_mode):
        pytest.skip("no /dev/full here")
    args = COMMANDS[name](results, choice_judge_args(choice_judge.url))
    if name == "import":
        args += ["--output", results]
    with open("/dev/full", "w") as full:
        result = awbench(*args, stdout=full.fileno())
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert result.stderr.endswith(FULL) and result.stderr.count("error:") == 1, result.stderr
    if name == "import":  # what the command did before printing is kept
        assert (results / "imp" / "run.json").is_file() and (results / "imp" / "predictions.jsonl").is_file()


@pytest.mark.parametrize("name", ["ls", "leaderboard", "show", "data info"])
def test_a_reader_that_leaves_early_ends_the_command_quietly(
    name: str, results: Path, choice_judge: FakeOpenAIServer
) -> None:
    reading, writing = os.pipe()
    os.close(reading)  # gone before the first byte, as `| head -0` would be
    try:
        result = awbench(*COMMANDS[name](results, choice_judge_args(choice_judge.url)), stdout=writing)
    finally:
        os.close(writing)
    no_traceback(result)
    assert (result.returncode, result.stderr) == (1, "")


def closed(fd: int, *args: object) -> subprocess.CompletedProcess[str]:
    """`awbench ARGS` started with descriptor `fd` closed, as the shell's `>&-` (1), `2>&-` or `<&-` leave it."""
    return subprocess.run(
        awbench_command(*args),
        cwd=REPO,
        env=clean_env(),
        stdout=None if fd == 1 else subprocess.PIPE,
        stderr=None if fd == 2 else subprocess.PIPE,
        text=True,
        timeout=120,
        preexec_fn=lambda: os.close(fd),
    )


CLOSED = "error: cannot write to standard output: Bad file descriptor\n"


@pytest.mark.parametrize("name", ["ls", "data info", "run", "run --print-config", "leaderboard"])
def test_a_closed_stdout_is_one_line_and_exit_2(name: str, results: Path, choice_judge: FakeOpenAIServer) -> None:
    """`awbench ls >&-` was a traceback (`'NoneType' object has no attribute 'flush'`), for `run` after its files
    were written. One line and exit 2, as for a full device; no file awbench opens takes the free descriptor."""
    (results / "r").rename(results / "was")  # `run` makes r anew, with stdout closed
    args = COMMANDS[name](results, choice_judge_args(choice_judge.url))
    result = closed(1, *args)
    no_traceback(result)
    assert (result.returncode, result.stderr[-len(CLOSED) :]) == (2, CLOSED), result.stderr
    if name == "run":  # its files whole: nothing printed went into one of them
        listed = cli("ls", results / "r", "--format", "json")
        assert listed.exit_code == 0, listed.output
        assert cli("score", "r", "--output", results).exit_code == 0


def test_closed_stderr_and_stdin_change_nothing_but_what_is_seen(results: Path) -> None:
    """With stderr closed a refusal still exits 2 (its line lost); with stdin closed a command works as ever."""
    assert closed(2, "ls", "--output", results / "missing").returncode == 2
    listed = closed(0, "ls", "--output", results)
    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.split("\t")[0] == "q"

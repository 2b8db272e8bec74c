"""`turing` and the pairwise judge (`compare --pairwise`, `leaderboard --pairwise`) follow `run`'s and `score`'s
exit rule (`awbench.run.pipeline.measurement_exit_code`): 1 when nothing was measured, or when more questions
went without a choice than the run's --max-failure-rate tolerates (the strictest of the runs compared); 0
otherwise. Against a real local server (tests/fake_openai.py) that fails every call, or leaves some questions
without a readable choice."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import REPO, awbench_command, clean_env, cli, no_traceback
from runs_helpers import MCP, SEARCH, SMALL, make_run, write_data

KEY_ENV = "AWBENCH_TEST_EXITS_KEY"


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-exits")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """Two judged runs of five samples (three MCP, two Search)."""
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    for name, grade in (("a", 3), ("b", 4)):
        make_run(out, name, data, dict.fromkeys(MCP + SEARCH, grade))
    return out


def failing(body: dict) -> Reply:
    return Reply(status=500, error_message="the judge is down")


def unsure_about_search(body: dict) -> Reply:
    """A choice, except for the Search samples' questions (2 of 5): an answer with none."""
    if "search output" in body["messages"][-1]["content"]:
        return Reply("Both look plausible; I cannot tell.")
    return Reply("\\boxed{A}")


def judge(server: FakeOpenAIServer, out: Path) -> list[str]:
    return ["--output", str(out), "--judge-model", "j", "--judge-base-url", server.url, "--judge-api-key-env",
            KEY_ENV, "--judge-max-retries", "0"]  # fmt: skip


def without_progress(stderr: str) -> str:
    """stderr without the progress lines a pipe gets (`turing <judge id>: 3/5 (60%), ...`)."""
    return "".join(line for line in stderr.splitlines(keepends=True) if not line.startswith("turing "))


def tolerate(out: Path, *runs: str) -> None:
    """The runs' --max-failure-rate raised to 50%, as `score` saves it in run.json."""
    for run in runs:
        assert cli("score", run, "--output", out, "--max-failure-rate", "0.5").exit_code == 0


def test_turing_exits_1_when_every_call_failed_and_nothing_was_measured(results: Path) -> None:
    with FakeOpenAIServer(responder=failing) as server:
        result = cli("turing", "a", *judge(server, results), "--format", "json")
    no_traceback(result)
    assert result.exit_code == 1, result.output
    assert len(server.requests) == 5
    report = json.loads(result.stdout)  # the result is still printed: the answers are kept, and asked again later
    assert (report["questions"], report["parse_failures"], report["accuracy"]["value"]) == (5, 5, None)
    assert without_progress(result.stderr).splitlines() == [
        "5 of 5 questions had no choice after every attempt (tolerated: 5%); left out of the rates",
        "  5 × HTTP 500: the judge is down",
    ]


def test_turing_exits_1_when_failures_exceed_the_runs_tolerated_rate(results: Path) -> None:
    with FakeOpenAIServer(responder=unsure_about_search) as server:
        over = cli("turing", "a", *judge(server, results))
        assert over.exit_code == 1, over.output
        assert without_progress(over.stderr).startswith(
            "2 of 5 questions had no choice after every attempt (tolerated: 5%)"
        )
        tolerate(results, "a")
        asked = len(server.requests)
        within = cli("turing", "a", *judge(server, results))
    assert within.exit_code == 0, within.output
    assert len(server.requests) == asked  # every question settled: nothing asked again
    assert within.stderr.startswith("2 of 5 questions had no choice after every attempt (tolerated: 50%)")


def test_turing_exits_1_when_the_run_has_nothing_to_ask(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data", SMALL)
    make_run(tmp_path / "results", "failed", data, dict.fromkeys(MCP + SEARCH))  # every generation failed
    with FakeOpenAIServer(responder=unsure_about_search) as server:
        result = cli("turing", "failed", *judge(server, tmp_path / "results"))
    assert result.exit_code == 1, result.output
    assert server.requests == []
    assert result.stderr == "nothing was asked: the run has no successful prediction to show the judge\n"


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
def test_the_pairwise_judge_exits_1_when_every_call_failed(results: Path, command: str) -> None:
    with FakeOpenAIServer(responder=failing) as server:
        result = cli(command, "a", "b", *judge(server, results), "--pairwise")
    no_traceback(result)
    assert result.exit_code == 1, result.output
    assert len(server.requests) == 10  # five samples, both orders
    nothing = {
        "compare": "error: nothing compared: no sample of a and b has a choice in both orders",
        "leaderboard": "error: no comparisons link b to a: they cannot be ranked together",
    }
    assert result.stderr.splitlines()[-1] == nothing[command]


@pytest.mark.parametrize("command", ["compare", "leaderboard"])
def test_the_pairwise_judge_exits_1_when_failures_exceed_the_strictest_tolerated_rate(
    results: Path, command: str
) -> None:
    with FakeOpenAIServer(responder=unsure_about_search) as server:
        over = cli(command, "a", "b", *judge(server, results), "--pairwise")
        assert over.exit_code == 1, over.output
        message = "4 of 10 questions have no choice: more than the tolerated {} (the runs' --max-failure-rate)\n"
        assert over.stderr.endswith(message.format("5%")), over.stderr
        tolerate(results, "a")
        still = cli(command, "a", "b", *judge(server, results), "--pairwise")
        assert still.exit_code == 1 and still.stderr.endswith(message.format("5%"))  # b tolerates 5% still
        tolerate(results, "b")
        asked = len(server.requests)
        within = cli(command, "a", "b", *judge(server, results), "--pairwise")
    assert within.exit_code == 0, within.output
    assert len(server.requests) == asked


# --- A standard output that cannot encode every character (issue 35's trial, finding 11) ------------------------


@pytest.mark.parametrize(("encoding", "escaped"), [("ascii", ["\\xb7", "\\u2013"]), ("latin-1", ["·", "\\u2013"])])
def test_a_stdout_that_cannot_encode_a_character_gets_an_escape_never_a_traceback(
    results: Path, encoding: str, escaped: list[str]
) -> None:
    """PYTHONIOENCODING=ascii or latin-1: `leaderboard`, `show` and `judges` ended in a UnicodeEncodeError."""
    with FakeOpenAIServer(responder=lambda body: Reply("\\boxed{A}")) as server:
        assert cli("turing", "a", *judge(server, results)).exit_code == 0
    printed = []
    for args in (["leaderboard"], ["show", "a"], ["judges", "a"], ["ls"]):
        result = subprocess.run(
            awbench_command(*args, "--output", results),
            cwd=REPO,
            env=clean_env(PYTHONIOENCODING=encoding, LC_ALL="C"),
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 0 and result.stderr == b"", (args, result.stderr)
        printed.append(result.stdout.decode(encoding))  # what the stream could take, all of it
    leaderboard, show, judges, listed = printed
    assert escaped[0] in leaderboard  # the group header's "·"
    assert escaped[1] in show  # a missing number's "–"
    assert "Judges on the Turing test" in judges and listed.startswith("a\t")  # in a pipe, tab-separated

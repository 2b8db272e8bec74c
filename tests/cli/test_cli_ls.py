"""`awbench ls` lists runs with their state, and every command that takes a run name or a sample key answers a
misspelling with the closest names ("did you mean"), in one line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, make_run, write_data
from typer.testing import CliRunner

from awbench.cli import app

runner = CliRunner()


def invoke(*args: object, columns: int = 80, terminal: bool = False):
    """`terminal`: stdout taken for a terminal (rich's TTY_COMPATIBLE), else a pipe."""
    env = {"COLUMNS": str(columns), "TTY_COMPATIBLE": "1" if terminal else "0"}
    return runner.invoke(app, [str(a) for a in args], env=env)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """complete (with a failed generation), incomplete (two of five judged), running (held by this process), and
    one made by `infer` alone (no judge, no scores)."""
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    make_run(out, "alpha", data, {MCP[0]: 4, MCP[1]: 2, MCP[2]: 5, SEARCH[0]: 3, SEARCH[1]: None}, model="org/model-a")
    make_run(out, "beta", data, {MCP[0]: 4, MCP[1]: 2}, model="org/model-b")
    make_run(out, "gamma", data, dict.fromkeys([*MCP, *SEARCH], 5), model="org/model-c")
    (out / "gamma" / ".lock").write_text(
        json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started_at": "2026-12-03T04:00:00+00:00"}) + "\n"
    )
    inferred = make_run(out, "delta", data, {MCP[0]: 4}, model="org/model-d")
    shutil.rmtree(inferred.path / "judges")
    inferred.scores_path.unlink()
    manifest = inferred.read_manifest()
    inferred.write_manifest(manifest.model_copy(update={"primary_judge": None}))
    return out


def test_ls_lists_every_run_with_its_state(results: Path) -> None:
    """In a terminal: a table whose names and ids are never cut or wrapped (the state wraps instead)."""
    result = invoke("ls", "--output", results, terminal=True)
    assert (result.exit_code, result.stderr) == (0, "")
    holder = f"process {os.getpid()} on {socket.gethostname()} (started 2026-12-03T04:00:00+00:00)"
    lines = [line.rstrip() for line in result.stdout.splitlines()]
    assert lines[:8] == [
        "run / model judges    state                               Overall finished (UTC)",
        "─" * 80,
        "alpha       llm-alpha complete                            partial              –",
        "org/model-a",
        "beta        llm-beta  incomplete (2 of 5 judged)          partial              –",
        "org/model-b",
        "delta       –         not scored                                –              –",
        "org/model-d",
    ]
    # the holder's description (pid, host) wraps in its column; Overall and the time stay whole; MCP and Search
    # of seven domains: no Overall
    assert lines[8].startswith("gamma       llm-gamma running (process ") and lines[8].endswith(
        "partial              –"
    )
    assert "".join(line[22:57].replace(" ", "") for line in lines[8:]) == f"running ({holder})".replace(" ", "")
    assert all(len(line) <= 80 for line in lines)
    # in a pipe: one line per run, tab-separated, whatever the width (grep, cut -f and awk -F'\t' find it whole)
    piped = invoke("ls", "--output", results, columns=20)
    assert piped.stdout.splitlines() == [
        "alpha\torg/model-a\tllm-alpha\tcomplete\tpartial\t–",
        "beta\torg/model-b\tllm-beta\tincomplete (2 of 5 judged)\tpartial\t–",
        "delta\torg/model-d\t–\tnot scored\t–\t–",
        f"gamma\torg/model-c\tllm-gamma\trunning ({holder})\tpartial\t–",
    ]
    # JSON: every run, its exact keys, nothing else on stdout
    listing = json.loads(invoke("ls", "--output", results, "--format", "json").stdout)
    assert listing["schema_version"] == 1 and list(listing) == ["schema_version", "runs"]
    keys = [
        "run",
        "path",
        "model",
        "judges",
        "state",
        "judged",
        "selected",
        "holder",
        "overall",
        "finished_at",
        "partial",
        "stopped",
    ]
    assert [list(run) for run in listing["runs"]] == [keys] * 4
    partial = "partial (2 of 7 domains)"
    assert [
        (r["run"], r["model"], r["judges"], r["state"], r["judged"], r["selected"], r["holder"], r["overall"])
        + (r["partial"],)
        for r in listing["runs"]
    ] == [
        ("alpha", "org/model-a", ["llm-alpha"], "complete", 5, 5, None, None, partial),
        ("beta", "org/model-b", ["llm-beta"], "incomplete", 2, 5, None, None, "partial (1 of 7 domains)"),
        ("delta", "org/model-d", [], "not scored", None, None, None, None, None),
        ("gamma", "org/model-c", ["llm-gamma"], "running", 5, 5, holder, None, partial),
    ]
    assert listing["runs"][0]["path"] == str(results / "alpha")


def test_ls_takes_runs_and_directories_and_says_what_it_skipped(results: Path, tmp_path: Path) -> None:
    (results / "broken").mkdir()
    (results / "broken" / "run.json").write_text("{not json")
    result = invoke("ls", results / "beta", results / "gamma", "--format", "json")  # one run: its samples
    assert [r["run"] for r in json.loads(result.stdout)["runs"]] == ["beta", "gamma"]
    result = invoke("ls", "--output", results, "--format", "json")
    assert [r["run"] for r in json.loads(result.stdout)["runs"]] == ["alpha", "beta", "delta", "gamma"]
    assert result.stderr.startswith(f"note: skipped {results / 'broken'}: {results / 'broken' / 'run.json'}: ")
    shutil.copytree(results / "alpha", results / ".alpha")  # not a name awbench gives a run: not shown
    result = invoke("ls", "--output", results, "--format", "json")
    assert [r["run"] for r in json.loads(result.stdout)["runs"]] == ["alpha", "beta", "delta", "gamma"]
    assert result.stderr.splitlines()[0] == f"note: skipped {results}: a run named '.alpha' was not written by awbench"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("ls", "--output", empty)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"note: no runs under {empty}\n")
    result = invoke("ls", "alpah", "--output", results)
    assert refusal(result) == (2, "unknown_run") and result.stderr.endswith("; did you mean 'alpha'?\n")


def test_a_lock_left_by_a_dead_process_is_not_running(results: Path) -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    (results / "gamma" / ".lock").write_text(
        json.dumps({"pid": child.pid, "host": socket.gethostname(), "started_at": "t0"})
    )
    listing = json.loads(invoke("ls", "--output", results, "--format", "json").stdout)
    assert [(r["state"], r["holder"]) for r in listing["runs"] if r["run"] == "gamma"] == [("complete", None)]


@pytest.mark.parametrize(
    "command",
    [
        ["score", "alpah"],
        ["judge", "alpah"],
        ["show", "alpah"],
        ["compare", "alpah", "beta"],
        ["compare", "beta", "alpah"],
        ["export", "alpah", "--official", "OUT"],
    ],
)
def test_every_command_that_takes_a_run_suggests_the_closest(results: Path, command: list[str], tmp_path: Path) -> None:
    args = [str(tmp_path / "official") if a == "OUT" else a for a in command]
    result = invoke(*args, "--output", results)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"error: no run 'alpah': neither alpah nor {results / 'alpah'} holds a run.json; did you mean 'alpha'?\n"
    )


@pytest.mark.parametrize("command", [["leaderboard"], ["report", "-o", "OUT"]])
def test_commands_that_take_runs_or_directories_suggest_the_closest(
    results: Path, command: list[str], tmp_path: Path
) -> None:
    args = [str(tmp_path / "r.html") if a == "OUT" else a for a in command]
    result = invoke(*args, "gama", "--output", results)
    assert refusal(result) == (2, "unknown_run") and result.stderr.endswith("; did you mean 'gamma'?\n")


def test_a_misspelt_sample_key_gets_the_closest_keys(results: Path) -> None:
    result = invoke("show", "alpha", "--output", results, "--sample", "mcp/m0/3")
    assert refusal(result) == (2, "unknown_sample")
    assert result.stderr.endswith("; did you mean 'mcp/m0/1', 'mcp/m0/2' or 'mcp/m1/1'?\n")
    result = invoke("show", "alpha", "--output", results, "--sample", "terminal/x")
    assert refusal(result) == (2, "unknown_sample") and "did you mean" not in result.stderr


def test_nothing_close_gets_no_suggestion(results: Path) -> None:
    result = invoke("score", "zzz", "--output", results)
    assert refusal(result) == (2, "unknown_run") and "did you mean" not in result.stderr


def test_a_name_close_to_none_lists_the_runs_there(results: Path) -> None:
    """Issue 36: `report nosuchrun` got no suggestion; with none close, the runs that are there lead on."""
    result = invoke("report", "zzz", "-o", results.parent / "r.html", "--output", results)
    assert refusal(result) == (2, "unknown_run")
    assert result.stderr.endswith(f"; the runs under {results}: alpha, beta, delta, gamma\n")
    empty = results.parent / "empty"
    empty.mkdir()
    assert invoke("score", "zzz", "--output", empty).stderr.endswith(f"; {empty} holds no run\n")

"""Clear errors for outputs that cannot be written: each case exits 2 with a message naming the path, without a
traceback, and leaves no half-made file behind (the directory trees are compared before and after)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from refusals import refusal
from reliability_helpers import awbench, awbench_limited, cli, jsonl_lines, no_traceback
from runs_helpers import MCP, SMALL, make_run, write_data

RUN = [
    "run",
    "--model",
    "baseline:oracle",
    "--judge",
    "rules",
    "--data",
    "sample",
    "--domains",
    "os",
    "--run-name",
    "r",
]


def tree(root: Path) -> dict[str, bytes | None]:
    """Every path under root, with the content of files (None for directories)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def made_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("made") / "results"
    result = cli(*RUN, "--output", results)
    assert result.exit_code == 0, result.output
    return results


@pytest.fixture
def results(made_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(made_run, copy)
    return copy


def refused(result, path: Path) -> None:
    no_traceback(result)
    assert result.exit_code == 2, result.output
    assert "error:" in result.stderr and str(path) in result.stderr.replace("\n", ""), result.stderr


def test_output_pointing_at_a_file(tmp_path: Path) -> None:
    target = tmp_path / "results"
    target.write_text("not a directory\n")
    before = tree(tmp_path)
    refused(cli(*RUN, "--output", target), target)
    assert tree(tmp_path) == before


def test_a_run_directory_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r").write_text("a file\n")
    before = tree(tmp_path)
    refused(cli(*RUN, "--output", tmp_path / "results"), tmp_path / "results" / "r")
    assert tree(tmp_path) == before


@pytest.mark.parametrize("command", ["score", "run"])
def test_scores_json_that_is_a_directory(results: Path, command: str) -> None:
    scores = results / "r" / "scores.json"
    scores.unlink()
    scores.mkdir()
    before = tree(results)
    args = ["score", "r"] if command == "score" else RUN
    refused(cli(*args, "--output", results), scores)
    after = tree(results)
    if command == "run":  # resuming records this command's --output in run.json (an operational setting)
        before.pop("r/run.json"), after.pop("r/run.json")
    assert after == before  # no temporary file left beside it, no record changed


def test_rewards_onto_a_directory(results: Path, tmp_path: Path) -> None:
    # rewards need an LLM and a rule evaluation
    make_run(results, "both", write_data(tmp_path / "data", SMALL), {MCP[0]: 4}, rules={MCP[0]: 1.0})
    target = tmp_path / "rewards"
    target.mkdir()
    refused(cli("score", "both", "--reward", target, "--output", results), target)
    assert list(target.iterdir()) == []


def read_only(path: Path) -> None:
    path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    if os.access(path, os.W_OK):  # root: permissions are not enforced
        path.chmod(0o755)
        pytest.skip("running as root: a read-only directory is still writable")


def test_a_read_only_results_directory(tmp_path: Path) -> None:
    results = tmp_path / "results"
    results.mkdir()
    read_only(results)
    try:
        refused(cli(*RUN, "--output", results), results / "r")
        assert list(results.iterdir()) == []
    finally:
        results.chmod(0o755)


def test_a_read_only_run_directory(results: Path) -> None:
    run_dir = results / "r"
    before = tree(results)
    read_only(run_dir)
    try:
        refused(cli("score", "r", "--output", results), run_dir)
        assert tree(results) == before
    finally:
        run_dir.chmod(0o755)


def test_export_onto_a_file(results: Path, tmp_path: Path) -> None:
    target = tmp_path / "official"
    target.write_text("a file\n")
    before = tree(tmp_path)
    refused(cli("export", "r", "--official", target, "--output", results), target)
    assert tree(tmp_path) == before


def test_report_onto_a_directory(results: Path, tmp_path: Path) -> None:
    target = tmp_path / "report.html"
    target.mkdir()
    refused(cli("report", results / "r", "-o", target, "--no-ci"), target)
    assert list(target.iterdir()) == []


def test_leaderboard_onto_a_directory(results: Path, tmp_path: Path) -> None:
    target = tmp_path / "board.md"
    target.mkdir()
    refused(cli("leaderboard", "--output", results, "--format", "markdown", "-o", target), target)
    assert list(target.iterdir()) == []


def test_report_charts_onto_a_file(results: Path, tmp_path: Path) -> None:
    target = tmp_path / "charts"
    target.write_text("a file\n")
    refused(cli("report", results / "r", "-o", tmp_path / "report.html", "--no-ci", "--png", target), target)
    assert target.read_text() == "a file\n"


def test_a_file_size_limit_reached_mid_run(tmp_path: Path) -> None:
    """A record that cannot be written (a file size limit here; a full disk fails the same way, in flush(),
    whose error names no file) ends the run with a message naming the file; the same command without the
    limit then completes the run, each sample once."""
    results = tmp_path / "results"
    limited = awbench_limited("RLIMIT_FSIZE", 6000, *RUN, "--output", results)
    no_traceback(limited)
    assert limited.returncode == 2, limited.stderr
    assert "error: cannot write " in limited.stderr and "File too large" in limited.stderr, limited.stderr
    assert str(results / "r" / "predictions.jsonl") in limited.stderr.replace("\n", ""), limited.stderr

    again = awbench(*RUN, "--output", results)
    assert again.returncode == 0, again.stderr
    keys = [record["key"] for record in jsonl_lines(results / "r" / "predictions.jsonl")]
    assert len(keys) == len(set(keys)) > 0


# --- Outputs never replace or enter a run --------------------------------------------------------------------

INTO_THE_RUN = {  # name -> (the command's arguments after the results directory, the option, the path under tmp_path)
    "report onto run.json": (["report", "{run}", "-o", "{run}/run.json", "--no-ci"], "--out", "results/r/run.json"),
    "leaderboard onto predictions.jsonl": (
        ["leaderboard", "--output", "{results}", "--format", "csv", "-o", "{run}/predictions.jsonl"],
        "--out",
        "results/r/predictions.jsonl",
    ),
    "report as a new file inside": (
        ["report", "{run}", "-o", "{run}/judges/report.html", "--no-ci"],
        "--out",
        "results/r/judges/report.html",
    ),
    "report charts into the run": (
        ["report", "{run}", "-o", "{tmp}/report.html", "--no-ci", "--png", "{run}"],
        "--png",
        "results/r",
    ),
    "official export into the run": (
        ["export", "r", "--output", "{results}", "--official", "{run}/official"],
        "--official",
        "results/r/official",
    ),
    "hub export into the run": (
        ["export", "r", "--output", "{results}", "--hf-eval-results", "{run}"],
        "--hf-eval-results",
        "results/r",
    ),
    "rewards inside the run": (
        ["score", "r", "--output", "{results}", "--reward", "{run}/rewards.jsonl"],
        "--reward",
        "results/r/rewards.jsonl",
    ),
    "a run made inside a run": ([*RUN, "--output", "{run}/nested"], "--output", "results/r/nested"),
    "a link to run.json": (
        ["leaderboard", "--output", "{results}", "--format", "json", "-o", "{tmp}/board.json"],
        "--out",
        "board.json",
    ),
}


@pytest.mark.parametrize("case", INTO_THE_RUN)
def test_an_output_into_a_run_is_refused_and_the_run_is_untouched(case: str, results: Path, tmp_path: Path) -> None:
    args, option, target = INTO_THE_RUN[case]
    if case == "a link to run.json":
        (tmp_path / "board.json").symlink_to(results / "r" / "run.json")
    before = tree(tmp_path)
    fields = {"run": results / "r", "results": results, "tmp": tmp_path}
    result = cli(*(arg.format(**fields) for arg in args))
    refused(result, tmp_path / target)
    assert refusal(result) == (2, "output_in_run") and option in result.stderr
    assert f"the run directory {(results / 'r').resolve()}" in result.stderr.replace("\n", "")
    assert tree(tmp_path) == before


def limited(limit: int, *args: object) -> subprocess.CompletedProcess[str]:
    return awbench_limited("RLIMIT_FSIZE", limit, *args)


@pytest.mark.parametrize("command", ["report", "leaderboard", "official"])  # (score rewrites scores.json first)
def test_a_failed_write_leaves_the_previous_file_as_it_was(command: str, results: Path, tmp_path: Path) -> None:
    """A file size limit (a full disk fails the same way) stops the write of the new file: exit 2 naming the
    file, the old file's bytes unchanged, no temporary file left beside it."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / {"report": "report.html", "leaderboard": "board.json", "official": "predictions.jsonl"}[command]
    target.write_bytes(b"the previous file\n")
    args = {
        "report": ["report", results / "r", "-o", target, "--no-ci"],
        "leaderboard": ["leaderboard", "--output", results, "--format", "json", "-o", target],
        "official": ["export", "r", "--output", results, "--official", out],
    }[command]
    run_before = tree(results)
    result = limited(300, *args)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: cannot write {target}: File too large" in result.stderr.replace("\n", ""), result.stderr
    assert target.read_bytes() == b"the previous file\n"
    assert sorted(p.name for p in out.iterdir()) == [target.name]
    assert tree(results) == run_before


def test_charts_that_cannot_be_written_leave_the_previous_ones(results: Path, tmp_path: Path) -> None:
    """The report fits under the file size limit, its first chart does not: the chart's previous file stays."""
    charts = tmp_path / "charts"
    args = ["report", results / "r", "-o", tmp_path / "report.html", "--no-ci", "--png", charts]
    first = limited(2**30, *args)
    assert first.returncode == 0, first.stderr
    report_size, chart = (tmp_path / "report.html").stat().st_size, charts / "chart-domains-1.png"
    assert chart.stat().st_size > report_size + 1000  # so that a limit between the two fails only the charts
    chart.write_bytes(b"the previous chart\n")
    result = limited(report_size + 500, *args)
    no_traceback(result)
    assert result.returncode == 2, result.stderr
    assert f"error: cannot write {chart}: File too large" in result.stderr.replace("\n", ""), result.stderr
    assert chart.read_bytes() == b"the previous chart\n"
    assert not [p for p in charts.iterdir() if p.name.startswith(".")]


def test_an_output_whose_parent_is_a_file(results: Path, tmp_path: Path) -> None:
    parent = tmp_path / "a-file"
    parent.write_text("keep me\n")
    refused(cli("leaderboard", "--output", results, "--format", "csv", "-o", parent / "board.csv"), parent)
    assert parent.read_text() == "keep me\n"

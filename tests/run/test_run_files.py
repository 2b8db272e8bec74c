"""What a command does to a run's files: run.json is read once per command (the manifest is passed down, not
read again), and a command whose job is to read (ls, show, leaderboard, compare, report, judges, the dry runs)
changes no file of any run: not a byte, not a modification time, no file added or removed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from awbench.cli import app
from awbench.run.store import RunManifest, RunStore

KEY_ENV = "AWBENCH_TEST_RUN_FILES_KEY"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
RUN = "run --model {model} --judge rules --data sample --limit 1 --run-name {name}"
RUN_ORACLE = RUN.format(model="baseline:oracle", name="oracle")


def invoke(*args: object) -> object:
    result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "250", KEY_ENV: "sk-test-run-files"})
    assert result.exit_code in (0, 1), (args, result.output)  # 1: a measurement the run's rules call incomplete
    return result


def make_run(out: Path, name: str, model: str) -> None:
    invoke(*RUN.format(model=model, name=name).split(), "--output", out)


def choice_judge(server: FakeOpenAIServer) -> list[str]:
    return ["--judge-base-url", server.url, "--judge-api-key-env", KEY_ENV, "--judge-model", "judge-x",
            "--judge-price-in", "1", "--judge-price-out", "10"]  # fmt: skip


def always_a(body: dict) -> Reply:
    return Reply("Response A it is. \\boxed{A}", usage=USAGE)


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """Two rule-judged runs of the bundled sample (the oracle twice), the first also with a Turing test."""
    out = tmp_path / "results"
    make_run(out, "oracle", "baseline:oracle")
    make_run(out, "twin", "baseline:oracle")
    with FakeOpenAIServer(responder=always_a) as server:
        invoke("turing", "oracle", "--output", out, *choice_judge(server))
    return out


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each run's run.json is read (by run directory name)."""
    counted: Counter[str] = Counter()
    original = RunStore._read_manifest_file

    def counting(store: RunStore) -> RunManifest:
        counted[store.path.name] += 1
        return original(store)

    monkeypatch.setattr(RunStore, "_read_manifest_file", counting)
    return counted


def test_each_command_reads_run_json_once(runs: Path, reads: Counter[str]) -> None:
    out = str(runs)
    with FakeOpenAIServer(responder=always_a) as server:
        commands: list[tuple[list[object], dict[str, int]]] = [
            ([*RUN_ORACLE.split(), "--output", out], {"oracle": 1}),
            (["judge", "oracle", "--output", out], {"oracle": 1}),
            (["judge", "oracle", "--output", out, "--judge-model", "judge-x", "--dry-run"], {"oracle": 1}),
            (["score", "oracle", "--output", out], {"oracle": 1}),
            (["turing", "twin", "--output", out, *choice_judge(server)], {"twin": 1}),
            (["turing", "oracle", "--output", out, *choice_judge(server), "--dry-run"], {"oracle": 1}),
            (
                ["compare", "oracle", "twin", "--output", out, "--pairwise", *choice_judge(server)],
                {"oracle": 1, "twin": 1},
            ),
            (["leaderboard", out, "--pairwise", *choice_judge(server)], {"oracle": 1, "twin": 1}),
            (["show", "oracle", "--output", out], {"oracle": 1}),
            (["compare", "oracle", "twin", "--output", out], {"oracle": 1, "twin": 1}),
            (["leaderboard", out], {"oracle": 1, "twin": 1}),
            (["judges", "oracle", "twin", "--output", out], {"oracle": 1, "twin": 1}),
        ]
        for args, expected in commands:
            reads.clear()
            invoke(*args)
            assert dict(reads) == expected, args
        assert server.requests  # the Turing test and the pairwise judge did ask


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_commands_that_read_change_no_file(runs: Path, tmp_path: Path) -> None:
    out = str(runs)
    before = files_of(runs)
    with FakeOpenAIServer(responder=always_a) as server:
        for args in (
            ["ls", out],
            ["ls", out, "--format", "json"],
            ["show", "oracle", "--output", out],
            ["show", "twin", "--output", out, "--format", "json"],
            ["leaderboard", out],
            ["leaderboard", out, "--format", "csv"],
            ["compare", "oracle", "twin", "--output", out],
            ["report", out, "--out", tmp_path / "report.html"],
            ["judges", "oracle", "--output", out, "--format", "json"],
            ["judge", "oracle", "--output", out, "--judge-model", "judge-x", "--dry-run"],
            ["turing", "oracle", "--output", out, *choice_judge(server), "--dry-run"],
            ["compare", "oracle", "twin", "--output", out, "--pairwise", *choice_judge(server), "--dry-run"],
        ):
            invoke(*args)
        assert server.requests == []  # a dry run asks nothing
    assert files_of(runs) == before
    assert json.loads((runs / "oracle" / "run.json").read_text())["schema_version"] == 2

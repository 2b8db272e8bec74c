"""The README's examples, reproduced as a user at an 80-column terminal (or in a pipe) gets them (issue 36): the
Quickstart's commands with their exit codes and what the README says they print, the `ls` table, the pairwise
comparison's output and the TOML config file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from awbench.cli import app
from awbench.cli.config_file import read_toml
from awbench.data.dataset import read_source

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
TERMINAL = {"COLUMNS": "80", "TTY_COMPATIBLE": "1"}  # stdout taken for an 80-column terminal
PIPE = {"COLUMNS": "80", "TTY_COMPATIBLE": "0"}
TIME = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d")


def blocks(section: str, language: str = "") -> list[str]:
    """The code blocks of a README section (from its heading to the next heading of the same level or above)."""
    level = len(section.split(" ")[0])
    found: list[str] = []
    current: list[str] | None = None  # the lines of a block of `language` being read
    inside, code = False, False
    for line in README.splitlines():
        if line.startswith("```"):
            if code:
                if inside and current is not None:
                    found.append("\n".join(current))
                code, current = False, None
            else:
                code, current = True, ([] if line == f"```{language}" else None)
            continue
        if code:
            if current is not None:
                current.append(line)
            continue
        heading = re.match(r"(#+) ", line)
        if heading and len(heading.group(1)) <= level:
            inside = line == section
    return [block + "\n" for block in found]


def commands(section: str) -> list[list[str]]:
    """The `awbench` commands of a section's bash blocks, as arguments (comments and other programs left out)."""
    found = []
    for block in blocks(section, "bash"):
        for line in block.splitlines():
            words = line.split("#")[0].split()
            if words[:1] == ["awbench"]:
                found.append(words[1:])
    return found


def invoke(*args: object, env: dict[str, str] = PIPE):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def test_the_quickstart_runs_as_the_readme_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first command succeeds (exit 0) and shows the main job; the persistence baseline's failures come next,
    as the lesson, exit 1; `show --failed` and `ls` then work."""
    monkeypatch.chdir(tmp_path)
    ran = commands("## Quickstart")
    assert ran == [
        ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample"],
        ["run", "--model", "baseline:last-observation", "--judge", "rules", "--data", "sample"],
        ["show", "results/baseline-last-observation__rules", "--failed"],
        ["ls"],
    ]
    oracle, persistence, failed, listed = (invoke(*args) for args in ran)
    assert oracle.exit_code == 0, oracle.output
    assert "Overall (macro)" in oracle.stdout and "100.00" in oracle.stdout
    assert oracle.stdout.endswith("run saved in results/baseline-oracle__rules\n")
    assert Path("results/baseline-oracle__rules/run.json").is_file()

    assert persistence.exit_code == 1
    assert "26.41" in persistence.stdout and "Overall 26.41" in " ".join(README.split())
    assert "13 empty predictions: first turn: no previous observation to repeat" in persistence.stderr
    assert "`awbench show results/baseline-last-observation__rules --failed`" in persistence.stderr
    firsts = sum(s.record.turn_idx == 1 for s in read_source("sample")[0])
    assert firsts == 13

    assert failed.exit_code == 0 and len(failed.stdout.splitlines()) == 1 + firsts
    assert listed.exit_code == 0
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == [
        "baseline-last-observation__rules",
        "baseline-oracle__rules",
    ]


def test_the_ls_example_at_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (
        *commands("## Quickstart")[:2],
        ["run", "--model", "baseline:empty", "--judge", "rules", "--data", "sample"],
        ["infer", "--model", "baseline:oracle", "--data", "sample", "--run-name", "oracle-predictions"],
    ):
        invoke(*args)
    shown = next(b for b in blocks("### Listing runs") if b.startswith("run / model"))
    table = invoke("ls", env=TERMINAL)
    assert table.exit_code == 0, table.output
    got = [line.rstrip() for line in table.stdout.splitlines() if line.strip()]
    assert [TIME.sub("T", line) for line in got] == [TIME.sub("T", line) for line in shown.splitlines()]
    assert max(map(len, got)) <= 80
    # in a pipe: the README's `grep | cut` line
    piped = invoke("ls")
    rows = [line.split("\t") for line in piped.stdout.splitlines() if "oracle" in line]
    assert [(row[0], row[4]) for row in rows] == [("baseline-oracle__rules", "100.00"), ("oracle-predictions", "–")]


def picks_the_real_one(body: dict) -> Reply:
    """The pairwise judge of the README's example: the response that is the real observation (A when both)."""
    user = body["messages"][1]["content"]
    real = user.split("## Real observation (ground truth)\n\n", 1)[1]
    fence = real.split("\n", 1)[0]
    real = real.split("\n", 1)[1].split(f"\n{fence}\n", 1)[0]
    shown_b = user.split("## Response B\n\n", 1)[1]
    fence_b = shown_b.split("\n", 1)[0]
    b = shown_b.split("\n", 1)[1].split(f"\n{fence_b}\n", 1)[0]
    a_section = user.split("## Response A\n\n", 1)[1]
    fence_a = a_section.split("\n", 1)[0]
    a = a_section.split("\n", 1)[1].split(f"\n{fence_a}\n", 1)[0]
    choice = "B" if a != real and b == real else "A"
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
    return Reply(f"Comparing both with the real output... \\boxed{{{choice}}}", usage=usage)


def test_the_pairwise_example_at_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-readme")
    for model in ("baseline:oracle", "baseline:last-observation"):
        assert invoke("infer", "--model", model, "--data", "sample").exit_code == 0
    (shown,) = [b for b in blocks("### Pairwise comparison") if b.startswith("warning:")]
    with FakeOpenAIServer(responder=picks_the_real_one) as server:
        result = invoke(
            "compare", "baseline-oracle__unjudged", "baseline-last-observation__unjudged", "--pairwise",
            "--judge-base-url", server.url, env=TERMINAL,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    got = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    head, tail = ([line.rstrip() for line in part.splitlines()] for part in shown.split("...\n"))
    assert got[: len(head)] == head
    assert got[-len(tail) :] == tail
    assert max(map(len, got)) <= 80


def test_the_toml_example_is_a_config_file_for_the_same_run(tmp_path: Path) -> None:
    (example,) = blocks("## Commands", "toml")
    config = tmp_path / "served.toml"
    config.write_text(example)
    assert read_toml(config)["model"] == "Qwen/Qwen-AgentWorld-35B-A3B"
    (line,) = [c for c in commands("## Commands") if "--print-config" in c]
    args = [str(config) if a == "served.toml" else a for a in line[: line.index(">")]]
    printed = invoke(*args)
    assert printed.exit_code == 0, printed.output
    (tmp_path / "printed.toml").write_text(printed.stdout)
    options = read_toml(tmp_path / "printed.toml")
    assert options["temperature"] == 0 and options["base_url"] == ["http://a:8000/v1", "http://b:8000/v1"]
    assert options["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}

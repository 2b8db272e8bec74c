"""What `--help` and the docs promise is what the commands do: defaults shown for every judge option, the
judge command's default (the run's primary judge), `--max-retries`, a free dry run."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from fake_openai import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from awbench.cli import app
from awbench.config import JudgeSettings, ModelSettings, ScoringSettings
from awbench.data.dataset import read_source

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs"
JUDGE = JudgeSettings()

RUN_DEFAULTS = {
    "--judge": "llm",
    "--judge-model": f"{JUDGE.model}, the published setting",
    "--judge-base-url": "OPENAI_BASE_URL, else OpenAI",
    "--judge-api-key-env": "OPENAI_API_KEY",
    "--judge-temperature": "0.6",
    "--judge-max-tokens": "32768",
    "--judge-reasoning-effort": "the model's",
    "--judge-extra-body": "none",
    "--judge-concurrency": "32",
    "--judge-max-retries": "5",
    "--judge-request-timeout": "600",
    "--judge-structured": "no-judge-structured",
    "--judge-samples": "1",
    "--judge-price-in": "known models' list price",
    "--judge-price-out": "known models' list price",
    "--judge-prompts": "rubric",
    "--judge-template": "the prompt set's",
    "--max-cost": "no limit",
    "--failure-policy": "minimum",
    "--max-failure-rate": "0.05",
}


def option_help(command: list[str]) -> dict[str, str]:
    """Each option's line of `--help`, on a terminal wide enough that none wraps."""
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    lines = {}
    for line in result.stdout.splitlines():
        match = re.match(r"│\s+(?:\*\s+)?(--(?!no-)[a-z-]+)\s", line)  # a flag's --no- form: the line below
        if match:
            lines[match.group(1)] = line.rstrip(" │")
    return lines


def test_run_help_shows_every_judge_and_scoring_default():
    lines = option_help(["run"])
    for option, default in RUN_DEFAULTS.items():
        assert lines[option].endswith(f"[default: {default}]"), lines[option]
    # the values shown are the settings' own
    assert (
        JUDGE.kind,
        JUDGE.temperature,
        JUDGE.max_tokens,
        JUDGE.concurrency,
        JUDGE.max_retries,
        JUDGE.samples,
        JUDGE.prompts,
    ) == ("llm", 0.6, 32768, 32, 5, 1, "rubric")
    assert (ScoringSettings().failure_policy, ScoringSettings().max_failure_rate) == ("minimum", 0.05)
    assert lines["--max-retries"].endswith(
        "At most 1 + N calls per generation (transient errors only are retried; "
        "rate-limit refusals wait and do not count). "
        f"[default: {ModelSettings(model='m', backend='openai').max_retries}]"
    )


def test_judge_help_says_it_resumes_the_primary_judge_by_default():
    result = runner.invoke(app, ["judge", "--help"], env={"COLUMNS": "400"})
    text = " ".join(result.stdout.split())
    assert (
        "By default (no judge option given) it resumes the run's primary judge, the one the run was made with" in text
    )
    lines = option_help(["judge"])
    for option in RUN_DEFAULTS:
        if option not in ("--failure-policy", "--max-failure-rate"):
            assert lines[option].endswith("[default: the run's primary judge's]"), lines[option]
    score = option_help(["score"])
    assert score["--failure-policy"].endswith("[default: the run's]")
    assert score["--max-failure-rate"].endswith("[default: the run's]")
    assert score["--judge"].endswith("[default: the primary]")


def test_analysis_help_shows_the_judge_default():
    for command in (["leaderboard"], ["show", "r"], ["compare", "a"], ["report"]):
        assert option_help(command)["--judge"].endswith(
            "[default: each run's primary; the leaderboard: every evaluation]"
        )
    assert option_help(["export", "r"])["--judge"].endswith("[default: the primary]")


def test_docs_and_behaviour_of_max_retries_agree(tmp_path):
    text = " ".join((DOCS / "backends.md").read_text().split())
    assert "`--max-retries N` (default 6) bounds one generation to at most 1 + N calls" in text
    with FakeOpenAIServer(responder=lambda body: Reply(status=503, headers={"Retry-After": "0"})) as server:
        result = runner.invoke(
            app,
            [
                "infer",
                "--model",
                "m",
                "--base-url",
                server.url,
                "--max-retries",
                "2",
                "--data",
                "sample",
                "--domains",
                "os",
                "--limit",
                "1",
                "--output",
                tmp_path,
            ],
        )
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 3  # 1 + N
    assert "infer: 1 generated (1 failed), 0 reused" in result.stdout


def test_a_rule_judged_dry_run_costs_nothing(tmp_path):
    n = len(read_source("sample")[0])
    result = runner.invoke(
        app,
        [
            "run",
            "--model",
            "baseline:oracle",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--dry-run",
            "--output",
            tmp_path / "results",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"dry run: {n} samples; {n} generations to make; 0 judge calls, ~0 prompt and ~0 "
        "completion tokens; estimated judge cost $0.0000. Nothing was spent.\n"
    )
    assert "unknown" not in result.output and not (tmp_path / "results").exists()
    one = runner.invoke(app, ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--ids",
                              "os/2/1", "--dry-run", "--output", tmp_path / "results"])  # fmt: skip
    assert one.stdout.startswith("dry run: 1 sample; 1 generation to make; ")  # issue 36: "1 samples"


@pytest.mark.parametrize("command", [["run"], ["judge"]])
def test_every_judge_option_has_a_default_in_help(command):
    lines = option_help(command)
    judge_options = [o for o in lines if o.startswith("--judge") and o != "--judge-id"] + [
        "--max-cost",
        "--check-timeout",
    ]
    assert len(judge_options) == 28  # the in-process judge's engine: --judge-engine-arg alone
    assert all("[default: " in lines[o] for o in judge_options)


def test_run_lists_at_most_66_options_in_groups():
    """Issue 39: each engine setting once, in config.EngineSettings; the candidate's most used ones as options, any
    other (and every one of the judge's engine) as a KEY=VALUE pair. Issues 36 and 38 added --check-timeout and
    --prompt-cache-key, each one option for the candidate and the judge alike; --tensor-parallel-size and
    --gpu-memory-utilization became KEY=VALUE pairs too: 66."""
    lines = option_help(["run"])
    assert len(lines) <= 66
    assert "--engine-arg" in lines and "--judge-engine-arg" in lines
    assert not {"--dtype", "--batch-size", "--tensor-parallel-size", "--judge-max-model-len"} & lines.keys()
    assert "--check-timeout" in lines and "--judge-check-timeout" not in lines


def test_options_are_listed_by_group_and_config_files_are_for_run_infer_and_judge():
    for command, panels in (
        (
            ["run"],
            ["Data and selection", *MODEL_PANELS, "Output", *JUDGE_PANELS, "Scoring"],
        ),
        (["infer"], ["Data and selection", *MODEL_PANELS, "Output"]),
        (["judge", "r"], [*JUDGE_PANELS, "Output"]),
        (["score", "r"], ["Scoring", "Output"]),
    ):
        text = runner.invoke(app, [*command[:1], "--help"], env={"COLUMNS": "200"}).stdout
        assert [p for p in re.findall(r"╭─ (.+?) ─", text) if p not in ("Arguments", "Options")] == panels
        lines = option_help(command[:1])
        assert ("--config" in lines and "--print-config" in lines) == (command[0] != "score")
    model = ModelSettings(model="m", backend="openai")
    assert option_help(["infer"])["--concurrency"].endswith(f"[default: {model.concurrency}]")


MODEL_PANELS = ["Model and sampling", "Model endpoint (--base-url)", "Model engine (--backend vllm: in this process)"]
JUDGE_PANELS = ["Judge", "Judge endpoint and engine", "Judge cost and Batch API"]


def test_the_command_list_folds_each_summary_at_the_terminal_width():
    """`awbench --help` lists each command with its docstring's first paragraph as one text, not with the
    docstring's own line breaks (which cut `ls`'s summary after "state (complete,")."""
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    (ls,) = [line for line in result.output.splitlines() if line.startswith("│ ls ")]
    assert "state (complete, incomplete x of N judged, not scored, or running with the process that holds it)" in ls
    assert ls.rstrip(" │").endswith("with their status (scored, failed, predicted or pending).")


def every_command() -> list[tuple[list[str], list[Any]]]:
    """Each command's words (`data info`) and its options and arguments, as typer made them."""
    group = typer.main.get_command(app)
    found = []

    def walk(command: Any, words: list[str]) -> None:
        ctx = typer.Context(command)
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*words, name])
        else:
            found.append((words, command.get_params(ctx)))

    walk(group, [])
    return found


@pytest.mark.parametrize("width", [80, 120, 60])
def test_every_option_name_is_whole_in_help_at_80_and_120_columns(width):
    """Issue 36: typer's layout cut 36 names in `run --help` at 80 columns (`--request-time...`), and at 120 too."""
    commands = every_command()
    assert len(commands) == 16
    for words, params in commands:
        result = runner.invoke(app, [*words, "--help"], env={"COLUMNS": str(width)})
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert max(len(line) for line in lines) <= width
        assert "…" not in result.stdout
        cells = {name for line in lines for name in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*|[A-Z_]{2,})", line)}
        for param in params:
            names = param.opts + param.secondary_opts if param.param_type_name == "option" else [param.name.upper()]
            assert set(names) <= cells, (words, names)


def test_help_shows_short_metavars_and_the_negative_flag_below():
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "80"})
    lines = result.stdout.splitlines()
    assert len(lines) < 220  # 405 with typer's type column
    text = "\n".join(line.strip("│ ") for line in lines)
    for shown in (
        "--limit N ",
        "--top-p 0..1",
        "--request-timeout SECONDS ",
        "--max-cost USD ",
        "--judge-extra-body JSON ",
        "--engine-arg KEY=VALUE ",
        "--judge llm|rules|both ",
        "--data TEXT ",
    ):
        assert shown in text, shown
    (positive,) = [at for at, line in enumerate(lines) if "│ --judge-batch " in line]
    assert lines[positive + 1].startswith("│ --no-judge-batch ")

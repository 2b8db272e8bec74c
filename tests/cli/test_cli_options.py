"""Bad option values: every command says which option and why, in one line of its own words (never pydantic's
wording or its URL), on stderr, with exit code 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from fake_openai import FakeOpenAIServer
from pydantic import ValidationError
from refusals import refusal
from typer.testing import CliRunner

from awbench.cli import app
from awbench.cli.config_file import toml_document
from awbench.cli.errors import reported_errors
from awbench.cli.options import Options
from awbench.cli.run_commands import cli_judge_settings
from awbench.config import JudgeSettings, ModelSettings

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

runner = CliRunner()

RUN = ["run", "--model", "m"]
CASES = [
    # choices
    (RUN + ["--judge", "foo"], "--judge: 'foo' is not one of 'llm', 'rules', 'both'"),
    (RUN + ["--failure-policy", "worst"], "--failure-policy: 'worst' is not one of 'minimum', 'exclude'"),
    (RUN + ["--overlength", "cut"], "--overlength: 'cut' is not one of 'skip', 'truncate-history'"),
    (RUN + ["--backend", "imported"], "--backend: 'imported' is not one of 'baseline', 'openai', 'vllm', 'python'"),
    (
        ["infer", "--model", "m", "--backend", "imported"],
        "--backend: 'imported' is not one of 'baseline', 'openai', 'vllm', 'python'",
    ),
    (["judge", "r", "--judge", "all"], "--judge: 'all' is not one of 'llm', 'rules', 'both'; did you mean 'llm'?"),
    (["score", "r", "--failure-policy", "zero"], "--failure-policy: 'zero' is not one of 'minimum', 'exclude'"),
    (["leaderboard", "--by", "model"], "--by: 'model' is not one of 'domain', 'dimension'"),
    (["leaderboard", "--format", "yaml"], "--format: 'yaml' is not one of 'table', 'markdown', 'csv', 'json', 'html'"),
    (["compare", "a", "b", "--format", "csv"], "--format: 'csv' is not one of 'table', 'json'"),
    # ranges
    (RUN + ["--concurrency", "0"], "--concurrency: must be at least 1, got 0"),
    (RUN + ["--max-failure-rate", "2"], "--max-failure-rate: must be at most 1, got 2"),
    (RUN + ["--max-failure-rate", "-0.5"], "--max-failure-rate: must be at least 0, got -0.5"),
    (RUN + ["--judge-samples", "0"], "--judge-samples: must be at least 1, got 0"),
    (RUN + ["--max-model-len", "0"], "--max-model-len: must be at least 1, got 0"),
    (RUN + ["--limit", "0"], "--limit: must be at least 1, got 0"),
    (RUN + ["--sample", "0"], "--sample: must be at least 1, got 0"),
    (RUN + ["--max-tokens", "0"], "--max-tokens: must be at least 1, got 0"),
    (RUN + ["--generations", "0"], "--generations: must be at least 1, got 0"),
    (RUN + ["--request-timeout", "0"], "--request-timeout: must be at least 0.001, got 0"),
    (RUN + ["--max-retries", "-1"], "--max-retries: must be at least 0, got -1"),
    (RUN + ["--engine-arg", "tensor_parallel_size=0"], "--engine-arg tensor_parallel_size: must be at least 1, got 0"),
    (RUN + ["--engine-arg", "batch_size=0"], "--engine-arg batch_size: must be at least 1, got 0"),
    (
        RUN + ["--judge-backend", "vllm", "--judge-engine-arg", "gpu_memory_utilization=2"],
        "--judge-engine-arg gpu_memory_utilization: must be at most 1, got 2",
    ),
    (
        RUN + ["--engine-arg", "gpu_memory_utilization=1.5"],
        "--engine-arg gpu_memory_utilization: must be at most 1, got 1.5",
    ),
    (RUN + ["--temperature", "-0.1"], "--temperature: must be at least 0, got -0.1"),
    (RUN + ["--top-p", "1.5"], "--top-p: must be at most 1, got 1.5"),
    (RUN + ["--judge-temperature", "-1"], "--judge-temperature: must be at least 0, got -1"),
    (RUN + ["--judge-max-tokens", "0"], "--judge-max-tokens: must be at least 1, got 0"),
    (RUN + ["--judge-concurrency", "0"], "--judge-concurrency: must be at least 1, got 0"),
    (RUN + ["--judge-max-retries", "-1"], "--judge-max-retries: must be at least 0, got -1"),
    (RUN + ["--judge-request-timeout", "0"], "--judge-request-timeout: must be at least 0.001, got 0"),
    (RUN + ["--judge-price-in", "-1"], "--judge-price-in: must be at least 0, got -1"),
    (RUN + ["--judge-price-out", "-1"], "--judge-price-out: must be at least 0, got -1"),
    (RUN + ["--max-cost", "-1"], "--max-cost: must be at least 0, got -1"),
    (["judge", "r", "--judge-samples", "0"], "--judge-samples: must be at least 1, got 0"),
    (["score", "r", "--max-failure-rate", "1.5"], "--max-failure-rate: must be at most 1, got 1.5"),
    (["leaderboard", "--resamples", "10"], "--resamples: must be at least 2000, got 10"),
    (["compare", "a", "b", "--resamples", "0"], "--resamples: must be at least 2000, got 0"),
    (["show", "r", "--worst", "0"], "--worst: must be at least 1, got 0"),
    (["show", "r", "--limit", "0"], "--limit: must be at least 1, got 0"),
    (["show", "r", "--max-chars", "10"], "--max-chars: must be at least 200, got 10"),
    (["report", "--worst", "-1"], "--worst: must be at least 0, got -1"),
    (["report", "--resamples", "1"], "--resamples: must be at least 2000, got 1"),
    # the engine options of earlier versions, KEY=VALUE pairs now
    (
        RUN + ["--tensor-parallel-size", "4"],
        "no option --tensor-parallel-size: did you mean --engine-arg tensor_parallel_size=4?",
    ),
    (
        RUN + ["--gpu-memory-utilization=0.5"],
        "no option --gpu-memory-utilization: did you mean --engine-arg gpu_memory_utilization=0.5?",
    ),
    (
        RUN + ["--data-parallel-size", "2"],
        "no option --data-parallel-size: did you mean --engine-arg data_parallel_size=2?",
    ),
    (RUN + ["--dtype=half"], "no option --dtype: did you mean --engine-arg dtype=half?"),
    (
        RUN + ["--no-prefix-caching"],
        "no option --no-prefix-caching: did you mean --engine-arg enable_prefix_caching=false?",
    ),
    (
        ["judge", "r", "--judge-max-model-len", "4096"],
        "no option --judge-max-model-len: did you mean --judge-engine-arg max_model_len=4096?",
    ),
    # not numbers at all
    (RUN + ["--concurrency", "many"], "--concurrency: expected a whole number, got 'many'"),
    (RUN + ["--temperature", "hot"], "--temperature: expected a number, got 'hot'"),
    (["leaderboard", "--seed", "1.5"], "--seed: expected a whole number, got '1.5'"),
]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_a_bad_option_value_is_one_line_naming_the_option(args, message, tmp_path):
    result = runner.invoke(app, [*args, "--output", str(tmp_path / "results")])
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: {message}\n")
    assert not (tmp_path / "results").exists()


def test_backend_help_offers_only_what_a_user_can_choose():
    result = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert (
        "baseline, openai, vllm, python, or one an installed package adds" in result.stdout
        and "imported" not in result.stdout
    )


def _no_pydantic(text: str) -> None:
    assert "pydantic" not in text and "validation error" not in text and "http" not in text


def test_settings_that_fail_validation_are_named_by_their_options(capsys):
    with pytest.raises(typer.Exit) as stopped, reported_errors():
        cli_judge_settings(None, Options({}, {"judge_samples": 0, "judge_concurrency": 0}))
    assert stopped.value.exit_code == 2
    err = capsys.readouterr().err
    assert (
        err
        == "error: --judge-samples: must be at least 1, got 0\nerror: --judge-concurrency: must be at least 1, got 0\n"
    )
    _no_pydantic(err)


@pytest.mark.parametrize(
    ("build", "lines"),
    [
        (
            lambda: ModelSettings(model="m", backend="openai", temperature="hot", max_tokens=0),
            ["--temperature: expected a number, got 'hot'", "--max-tokens: must be at least 1, got 0"],
        ),
        (
            lambda: ModelSettings(
                model="m", backend="openai", engine={"engine_args": [1]}, base_urls="x", **{"bogus": 1}
            ),
            [
                "--base-url: invalid value 'x'",
                "--engine-arg: invalid value [1]",
                "--bogus: is not a setting awbench knows",
            ],
        ),
        (
            lambda: JudgeSettings(kind="llm", structured="maybe", temperature="warm"),
            [
                "--judge-temperature: expected a number, got 'warm'",
                "--judge-structured: expected true or false, got 'maybe'",
            ],
        ),
    ],
)
def test_the_handler_turns_a_validation_error_into_option_lines(build, lines, capsys):
    with pytest.raises(typer.Exit), reported_errors():
        build()
    err = capsys.readouterr().err
    assert sorted(err.splitlines()) == sorted(f"error: {line}" for line in lines)
    _no_pydantic(err)


def test_a_validation_error_is_never_shown_raw(capsys):
    with pytest.raises(ValidationError) as raw:
        JudgeSettings(samples=0)
    assert "errors.pydantic.dev" in str(raw.value)  # what the handler keeps from the user
    with pytest.raises(typer.Exit), reported_errors():
        JudgeSettings(samples=0)
    assert capsys.readouterr().err == "error: --judge-samples: must be at least 1, got 0\n"  # named by its option


# --- --config FILE.toml and --print-config ---------------------------------------------------------------------

# A model behind an endpoint: the sampling options are its (a baseline refuses them).
RUN_TOML = """\
model = "m"
base_url = ["{url}"]
judge = "rules"
data = "sample"
domains = ["os", "mcp"]
seed = 3
temperature = 0.2
extra_body = { chat_template_kwargs = { enable_thinking = false } }
skip_invalid = true
run_name = "r"
"""
RUN_FLAGS = [
    "--model",
    "m",
    "--base-url",
    "{url}",
    "--judge",
    "rules",
    "--data",
    "sample",
    "--domains",
    "os",
    "--domains",
    "mcp",
    "--seed",
    "3",
    "--temperature",
    "0.2",
    "--extra-body",
    '{"chat_template_kwargs": {"enable_thinking": false}}',
    "--skip-invalid",
    "--run-name",
    "r",
]


def _run_config(run_dir: Path) -> dict:
    config = json.loads((run_dir / "run.json").read_text())["config"]
    config.pop("output")
    return config


def test_a_run_from_a_config_file_has_the_settings_of_the_same_run_from_flags(tmp_path):
    config = tmp_path / "run.toml"
    with FakeOpenAIServer() as server:
        config.write_text(RUN_TOML.replace("{url}", server.url))
        from_file = runner.invoke(app, ["run", "--config", str(config), "--output", str(tmp_path / "a")])
        flags = [flag.replace("{url}", server.url) for flag in RUN_FLAGS]
        from_flags = runner.invoke(app, ["run", *flags, "--output", str(tmp_path / "b")])
    assert (from_file.exit_code, from_flags.exit_code) == (0, 0), from_file.output + from_flags.output
    assert from_file.stdout == from_flags.stdout.replace(str(tmp_path / "b"), str(tmp_path / "a"))
    settings = _run_config(tmp_path / "a" / "r")
    assert settings == _run_config(tmp_path / "b" / "r")
    assert (settings["data"]["domains"], settings["model"]["temperature"], settings["judge"]["kind"]) == (
        ["os", "mcp"],
        0.2,
        "rules",
    )
    assert settings["model"]["extra_body"] == {"chat_template_kwargs": {"enable_thinking": False}}


def test_print_config_prints_the_options_given_and_runs_nothing(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text(RUN_TOML.replace("{url}", "http://127.0.0.1:9/v1"))
    result = runner.invoke(
        app,
        [
            "run",
            "--config",
            str(config),
            "--temperature",
            "0.7",
            "--ids",
            "a,b",
            "--print-config",
            "--output",
            str(tmp_path / "results"),
        ],
    )
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (
        'data = "sample"\ndomains = ["os", "mcp"]\nids = ["a,b"]\nseed = 3\nskip_invalid = true\nmodel = "m"\n'
        'base_url = ["http://127.0.0.1:9/v1"]\ntemperature = 0.7\n'  # the flag overrides the file
        "extra_body = { chat_template_kwargs = { enable_thinking = false } }\n"
        f'run_name = "r"\noutput = {json.dumps(str(tmp_path / "results"))}\njudge = "rules"\n'
    )
    assert not (tmp_path / "results").exists()
    printed = tmp_path / "printed.toml"  # what it prints is a config file for the same options
    printed.write_text(result.stdout)
    again = runner.invoke(app, ["run", "--config", str(printed), "--print-config"])
    assert (again.exit_code, again.stdout) == (0, result.stdout)


@pytest.mark.parametrize(
    ("option", "value"),
    [("--max-cost", "inf"), ("--check-timeout", "1e999"), ("--judge-batch-poll-interval", "nan")],
)
def test_print_config_never_prints_a_file_that_run_refuses(option, value, tmp_path):
    """`--max-cost inf --print-config` printed `max_cost = inf`, a config file `run` then refused: refused at
    once, as `run` refuses the flag, and nothing printed."""
    judge = ["--judge-model", "m", "--judge-base-url", "http://127.0.0.1:9/v1"]
    if option == "--judge-batch-poll-interval":
        judge.append("--judge-batch")
    result = runner.invoke(app, ["run", "--model", "baseline:oracle", *judge, option, value, "--print-config"])
    shown = {"inf": "inf", "1e999": "inf", "nan": "nan"}[value]
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == f"error: {option}: must be a finite number, got {shown}\n"


def test_infer_and_judge_read_a_config_file_too(tmp_path):
    config = tmp_path / "infer.toml"
    config.write_text(
        f'model = "baseline:oracle"\ndata = "sample"\ndomains = "os"\nrun_name = "r"\noutput = "{tmp_path / "out"}"\n'
    )
    inferred = runner.invoke(app, ["infer", "--config", str(config)])
    assert inferred.exit_code == 0, inferred.output
    assert _run_config(tmp_path / "out" / "r")["data"]["domains"] == ["os"]
    judged = tmp_path / "judge.toml"
    judged.write_text(f'judge = "rules"\noutput = "{tmp_path / "out"}"\n')
    assert runner.invoke(app, ["judge", "r", "--config", str(judged), "--print-config"]).stdout == judged.read_text()
    result = runner.invoke(app, ["judge", "r", "--config", str(judged)])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "out" / "r" / "run.json").read_text())["config"]["judge"]["kind"] == "rules"


NOT_FINITE = "is not a finite number (JSON has no NaN or infinity)"
BAD_FILES = [
    (
        'model = "m"\njudge_modle = "x"\n',
        "line 2: judge_modle: not an option of `awbench run`; did you mean judge_model, judge_samples, judge_rpm?",
    ),
    (
        'model = "m"\ndtype = "half"\nprefix_caching = false\n',
        'line 2: dtype: no such option: did you mean engine_arg = ["dtype=half"]?',
    ),
    (
        'model = "m"\nprefix_caching = false\n',
        'line 2: prefix_caching: no such option: did you mean engine_arg = ["enable_prefix_caching=false"]?',
    ),
    (
        'model = "m"\noverwrite = true\n',
        "line 2: overwrite: give --overwrite on the command line; a config file holds settings only",
    ),
    ('model = "m"\n\nconcurrency = "4"\n', "line 3: concurrency: expected a whole number, got '4'"),
    ("concurrency = 0\n", "line 1: concurrency: must be at least 1, got 0"),
    ('temperature = "hot"\n', "line 1: temperature: expected a number, got 'hot'"),
    ('judge = "all"\n', "line 1: judge: expected 'llm', 'rules' or 'both', got 'all'"),
    ("skip_invalid = 1\n", "line 1: skip_invalid: expected true or false, got 1"),
    ("base_url = [1]\n", "line 1: base_url: expected a string, got 1"),
    ("domains = 3\n", "line 1: domains: expected a list, got 3"),
    ("extra_body = [1]\n", "line 1: extra_body: expected a table, got [1]"),
    ("judge_extra_body = '[1]'\n", "line 1: judge_extra_body: expected a table, got [1]"),
    ("extra_body = '{\"a\": '\n", "line 1: extra_body: not valid JSON (Expecting value at character 6)"),
    ("extra_body = { a = { b = nan } }\n", f"line 1: extra_body: a.b: nan {NOT_FINITE}"),
    ("judge_extra_body = '{\"a\": [Infinity]}'\n", f"line 1: judge_extra_body: a.0: inf {NOT_FINITE}"),
    ("extra_body.deep.list = [1, -inf]\n", f"line 1: extra_body: deep.list.1: -inf {NOT_FINITE}"),
    ("model = \n", "not valid TOML: Invalid value (at line 1, column 9)"),
    ('[model]\nname = "m"\n', "line 1: model: expected a string, got {'name': 'm'}"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES, ids=[m for _, m in BAD_FILES])
def test_a_bad_config_file_is_one_line_naming_the_file_and_key(text, message, tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text(text)
    result = runner.invoke(app, ["run", "--config", str(config), "--output", str(tmp_path / "results")])
    separator = ": " if message.startswith("not valid") else ", "
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: {config}{separator}{message}\n")
    assert not (tmp_path / "results").exists()


def test_a_missing_config_file_is_named(tmp_path):
    result = runner.invoke(app, ["infer", "--config", str(tmp_path / "none.toml")])
    assert refusal(result) == (2, "bad_config_file") and str(tmp_path / "none.toml") in result.stderr


def test_a_judge_config_file_takes_only_judge_options(tmp_path):
    config = tmp_path / "judge.toml"
    config.write_text('model = "m"\n')
    result = runner.invoke(app, ["judge", "r", "--config", str(config)])
    assert refusal(result) == (2, "bad_config_file") and result.stderr.endswith("; did you mean judge_model?\n")


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        'quote " and \\ backslash',
        "new\nline\ttab",
        "ünï ✓ 😀",
        "del \x7f and bell \x07",
        "",
        3,
        -2,
        0.1,
        1e300,
        float("inf"),
        True,
        False,
        ["a", "b"],
        [],
        [1, 2.5],
        {"a": {"b": [True, "x"]}, "key with space": 1},
        {},
    ],
)
def test_toml_values_read_back_as_written(value):
    assert tomllib.loads(toml_document({"key": value})) == {"key": value}

"""Hostile numbers and bytes where they enter (issue 35): NaN and infinities in every float option of every
command, in config files and inside JSON-valued options; bytes that are not UTF-8; numbers and nesting Python's
readers give up on; config files that never end. Each is one line on stderr naming the option (or the file, line
and key), exit 2, and nothing written. Files an older version wrote with an infinity as null are named with the
way out, and `--overwrite` takes it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer
from fake_openai import FakeOpenAIServer, Reply
from pydantic import BaseModel, ValidationError
from reliability_helpers import (
    CHOICE_KEY_ENV,
    REPO,
    awbench_command,
    awbench_limited,
    choice_judge_args,
    clean_env,
    cli,
    judge_text,
    no_traceback,
)

from awbench.cli import app
from awbench.config import EngineSettings, JudgeSettings, ModelSettings, ScoringSettings
from awbench.judging import JUDGE_ID

SAMPLE = ["--data", "sample", "--domains", "os", "--limit", "1"]
OPENAI = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]  # nothing is sent: refused before
NOT_FINITE = ("nan", "inf", "-inf")
# How each command is given a run to work on (runs `a` and `b`, made once) or told to make one.
COMMANDS = {
    "run": ["run", *OPENAI, *SAMPLE, "--run-name", "new"],
    "infer": ["infer", *OPENAI, *SAMPLE, "--run-name", "new"],
    "judge": ["judge", "a"],
    "score": ["score", "a"],
    "turing": ["turing", "a"],
    "compare": ["compare", "a", "b", "--pairwise"],
    "leaderboard": ["leaderboard", "--pairwise"],
    "plan": ["plan", "--judge-sd", "1", "--generation-sd", "1", "--item-sd", "1"],  # the option given again wins
}


def float_options() -> list[tuple[str, str]]:
    """(command, option) for every float option of every command: a new one is in this list by itself."""
    found = []
    for name, command in typer.main.get_command(app).commands.items():  # type: ignore[attr-defined]
        for param in getattr(command, "commands", {}).values() or [command]:
            for option in param.params:
                descriptor = getattr(option, "type_descriptor", None)
                if descriptor is not None and descriptor.annotation is float:
                    found.append((name, max(option.opts, key=len)))
    return found


FLOAT_OPTIONS = float_options()


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def one_line(result: Any, line: str) -> None:
    no_traceback(result)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: {line}\n")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("made") / "results"
    for name in ("a", "b"):
        made = cli(
            "run", "--model", "baseline:oracle", "--judge", "rules", *SAMPLE, "--run-name", name, "--output", results
        )
        assert made.exit_code == 0, made.output
    return results


@pytest.fixture
def results(made: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "results"))  # each test's own copy of the runs


def test_every_command_with_a_float_option_is_covered():
    assert {command for command, _ in FLOAT_OPTIONS} == set(COMMANDS)
    assert len(FLOAT_OPTIONS) >= 45  # run 12, infer 4, judge 7, score 1, turing, compare, leaderboard 7 each, plan 5
    assert len(SETTINGS_FIELDS) >= 11  # every float of the settings: a new one is in the list by itself


@pytest.mark.parametrize("value", NOT_FINITE)
@pytest.mark.parametrize(("command", "option"), FLOAT_OPTIONS, ids=[" ".join(c) for c in FLOAT_OPTIONS])
def test_a_float_option_refuses_nan_and_infinities(results, command, option, value):
    before = tree(results)
    result = cli(*COMMANDS[command], option, value, "--output", results)
    one_line(result, f"{option}: must be a finite number, got {value}")
    assert tree(results) == before


CONFIG_OPTIONS = [(c, o) for c, o in FLOAT_OPTIONS if c in ("run", "infer", "judge")]  # those with --config


@pytest.mark.parametrize("value", NOT_FINITE)
@pytest.mark.parametrize(("command", "option"), CONFIG_OPTIONS, ids=[" ".join(c) for c in CONFIG_OPTIONS])
def test_a_float_in_a_config_file_refuses_nan_and_infinities(results, tmp_path, command, option, value):
    key = option.removeprefix("--").replace("-", "_")
    config = tmp_path / "options.toml"
    config.write_text(f"# hostile\n{key} = {value}\n")
    before = tree(results)
    result = cli(*COMMANDS[command], "--config", config, "--output", results)
    one_line(result, f"{config}, line 2: {key}: must be a finite number, got {value}")
    assert tree(results) == before


NOT_FINITE_JSON = [
    (["run", *OPENAI, "--extra-body", '{"a": NaN}'], "--extra-body: a: nan"),
    (["run", *OPENAI, "--extra-body", '{"a": {"b": [1, Infinity]}}'], "--extra-body: a.b.1: inf"),
    (["run", *OPENAI, "--extra-body", '{"t": 1e999}'], "--extra-body: t: inf"),
    (["run", *OPENAI, "--judge-extra-body", '{"x": -Infinity}'], "--judge-extra-body: x: -inf"),
    (["infer", "--model", "python:m:M", "--model-arg", "v=NaN"], "--model-arg: v: nan"),
    (["infer", "--model", "python:m:M", "--model-arg", "v=1e999"], "--model-arg: v: inf"),
    (["infer", "--model", "python:m:M", "--model-arg", 'v=[{"w": -1e400}]'], "--model-arg: v.0.w: -inf"),
    (["infer", "--model", "m", "--backend", "vllm", "--engine-arg", 'x={"y": NaN}'], "--engine-arg: x.y: nan"),
    (
        ["run", "--model", "baseline:oracle", "--judge-backend", "vllm", "--judge-engine-arg", "s=Infinity"],
        "--judge-engine-arg: s: inf",
    ),
    (["turing", "a", "--judge-extra-body", '{"k": [[NaN]]}'], "--judge-extra-body: k.0.0: nan"),
    (["compare", "a", "b", "--pairwise", "--judge-extra-body", '{"k": Infinity}'], "--judge-extra-body: k: inf"),
]


@pytest.mark.parametrize(("args", "message"), NOT_FINITE_JSON, ids=[m for _, m in NOT_FINITE_JSON])
def test_json_options_refuse_nan_and_infinities_at_any_depth(results, args, message):
    before = tree(results)
    result = cli(*args, "--output", results)
    one_line(result, f"{message} is not a finite number (JSON has no NaN or infinity)")
    assert tree(results) == before


def test_model_args_in_a_config_file_are_named_by_their_option(tmp_path):
    config = tmp_path / "options.toml"
    config.write_text('model = "python:m:M"\nmodel_arg = ["v=Infinity"]\n')
    result = cli("infer", "--config", config, "--output", tmp_path / "results")
    one_line(result, "--model-arg: v: inf is not a finite number (JSON has no NaN or infinity)")
    assert not (tmp_path / "results").exists()


def _float_fields(model: type[BaseModel]) -> list[str]:
    return [name for name, field in model.model_fields.items() if "float" in str(field.annotation)]


SETTINGS: list[tuple[type[BaseModel], dict[str, str]]] = [
    (ModelSettings, {"model": "m", "backend": "openai"}),
    (JudgeSettings, {}),
    (EngineSettings, {}),
    (ScoringSettings, {}),
]
SETTINGS_FIELDS = [(model, base, name) for model, base in SETTINGS for name in _float_fields(model)]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    ("model", "base", "name"), SETTINGS_FIELDS, ids=[f"{m.__name__}.{n}" for m, _, n in SETTINGS_FIELDS]
)
def test_every_float_setting_of_the_python_api_is_finite(model, base, name, value):
    with pytest.raises(ValidationError) as refused:
        model(**base, **{name: value})
    (error,) = refused.value.errors()
    assert error["loc"] == (name,)
    assert error["type"] in ("finite_number", "greater_than_equal", "less_than_equal")  # NaN is below no bound


# --- Files an older version wrote with null for an infinity -----------------------------------------------------


def _set(path: Path, where: list[str], value: Any) -> None:
    document = json.loads(path.read_text())
    inner = document
    for key in where[:-1]:
        inner = inner[key]
    inner[where[-1]] = value
    path.write_text(json.dumps(document, indent=2))


def test_a_run_json_with_null_for_an_infinity_names_the_way_out_and_overwrite_takes_it(results):
    """`--temperature inf` was stored as null; every later command on the run failed, --overwrite included."""
    run_json = results / "a" / "run.json"
    _set(run_json, ["config", "model", "temperature"], None)
    for command in (["score", "a"], ["show", "a"], ["judge", "a", "--judge", "rules"]):
        refused = cli(*command, "--output", results)
        one_line(
            refused,
            f"{run_json}: config.model.temperature: Input should be a valid number; this run cannot be read: make "
            "it again with --overwrite",
        )
    for command in (["infer"], ["run", "--judge", "rules"]):
        _set(run_json, ["config", "model", "temperature"], None)
        again = cli(
            *command, "--model", "baseline:oracle", *SAMPLE, "--run-name", "a", "--overwrite", "--output", results
        )
        assert again.exit_code == 0, again.output
        assert json.loads(run_json.read_text())["config"]["model"]["temperature"] == 0.6


def test_a_judge_json_with_null_for_an_infinity_names_the_way_out_and_overwrite_takes_it(results):
    (judge_json,) = (results / "a" / "judges").glob("*/judge.json")
    _set(judge_json, ["settings", "temperature"], None)
    refused = cli("score", "a", "--output", results)
    one_line(
        refused,
        f"{judge_json}: settings.temperature: Input should be a valid number; this evaluation cannot be read: "
        f"remove {judge_json.parent} to drop it, or make the run again with --overwrite",
    )
    again = cli(
        "run",
        "--model",
        "baseline:oracle",
        "--judge",
        "rules",
        *SAMPLE,
        "--run-name",
        "a",
        "--overwrite",
        "--output",
        results,
    )
    assert again.exit_code == 0, again.output
    assert cli("score", "a", "--output", results).exit_code == 0


def test_a_turing_json_with_null_for_an_infinity_is_named_by_awbench_judges(results):
    """A Turing test at `--judge-temperature inf` broke `awbench judges` for good."""
    folder = results / "a" / "turing" / "judge-turing-0a1b2c"
    folder.mkdir(parents=True)
    info = {"id": folder.name, "settings": JudgeSettings().model_dump(mode="json"), "seed": 0}
    info["settings"]["temperature"] = None
    (folder / "turing.json").write_text(json.dumps(info))
    refused = cli("judges", "a", "--output", results)
    one_line(
        refused,
        f"{folder / 'turing.json'}: settings.temperature: Input should be a valid number; this evaluation cannot "
        f"be read: remove {folder} to drop it, or make the run again with --overwrite",
    )
    shutil.rmtree(folder)  # the way out named: then the run reads as one without a Turing test
    one_line(
        cli("judges", "a", "--output", results),
        "no Turing test in a, nor two LLM judges of two of them: run `awbench turing RUN --judge-model ...`, or "
        "`awbench judge RUN --judge-model ...` with another judge",
    )


# --- Bytes that are not UTF-8, and what Python's readers give up on --------------------------------------------

BYTES = [
    (["--model", b"baseline:oracle\xff"], "--model: byte 0xff at character 15 is not UTF-8 text"),
    (
        ["--model", "python:m:M", "--model-arg", b"prefix=\xfe\xff"],
        "--model-arg: byte 0xfe at character 7 is not UTF-8 text",
    ),
    (["--model", "baseline:oracle", "--stop", b"### \xc3("], "--stop: byte 0xc3 at character 4 is not UTF-8 text"),
    ([*OPENAI, "--extra-body", b'{"a": "\xff"}'], "--extra-body: byte 0xff at character 7 is not UTF-8 text"),
]


@pytest.mark.parametrize(("args", "line"), BYTES, ids=[line.split(":")[0] for _, line in BYTES])
def test_bytes_that_are_not_utf8_are_refused_before_a_run_directory_is_made(tmp_path, args, line):
    command = [os.fsencode(a) if isinstance(a, str) else a for a in awbench_command("infer", *SAMPLE)]
    output = tmp_path / "results"
    done = subprocess.run(
        [*command, *(a if isinstance(a, bytes) else a.encode() for a in args), b"--output", os.fsencode(output)],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", f"error: {line}\n")
    assert not output.exists()


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--model", "python:m:M", "--model-arg", "v=" + "7" * 5000],
            "--model-arg v: a whole number of more than 4300 digits",
        ),
        (
            [*OPENAI, "--extra-body", '{"n": ' + "7" * 5000 + "}"],
            "--extra-body: a whole number of more than 4300 digits",
        ),
        (
            [*OPENAI, "--extra-body", "[" * 5000 + "]" * 5000],
            "--extra-body: nested more than 100 levels deep (arrays and objects within each other)",
        ),
        (
            ["--model", "python:m:M", "--model-arg", "v=" + '{"a":' * 5000 + "1" + "}" * 5000],
            "--model-arg v: nested more than 100 levels deep (arrays and objects within each other)",
        ),
        (
            [*OPENAI, "--extra-body", '{"a": "\\ud800"}'],
            "--extra-body: a: a lone surrogate \\ud800 at character 0: not valid Unicode, so it cannot be written as UTF-8",
        ),
    ],
    ids=["5000-digit model arg", "5000-digit extra body", "deep extra body", "deep model arg", "surrogate escape"],
)
def test_json_python_gives_up_on_names_the_option(tmp_path, args, line):
    result = cli("infer", *SAMPLE, *args, "--output", tmp_path / "results")
    one_line(result, line)
    assert not (tmp_path / "results").exists()


# --- Config files that cannot be read --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("extra_body = " + "[" * 5000 + "]" * 5000, "not valid TOML: nested more than 100 levels deep"),
        ("extra_body = " + "{ a = " * 5000 + "1" + " }" * 5000, "not valid TOML: nested more than 100 levels deep"),
        ("#" + "x" * (1 << 20), "cannot read the config file: larger than 1,048,576 bytes"),
    ],
    ids=["arrays 5,000 deep", "tables 5,000 deep", "over 1 MiB"],
)
def test_a_config_file_python_cannot_read_is_one_line(tmp_path, text, reason):
    config = tmp_path / "options.toml"
    config.write_text(text)
    result = cli("run", "--config", config, "--output", tmp_path / "results")
    no_traceback(result)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr.startswith(f"error: {config}: {reason}") and result.stderr.count("\n") == 1
    assert not (tmp_path / "results").exists()


def test_a_config_file_that_is_a_device_a_fifo_or_a_directory_is_refused_without_reading(tmp_path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)  # nobody writes to it: opening it to read would wait for ever
    for path in (Path("/dev/zero"), fifo, tmp_path):
        done = subprocess.run(
            awbench_command("run", "--config", path, "--output", tmp_path / "results"),
            cwd=REPO,
            env=clean_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        reason = "Is a directory" if path == tmp_path else "not a regular file"
        assert (done.returncode, done.stderr) == (2, f"error: {path}: cannot read the config file: {reason}\n")
    assert not (tmp_path / "results").exists()


# --- Repeated samples in the reference script's files -----------------------------------------------------------


def judged_row(i: int, gen: str = "", observation: str = "") -> dict[str, Any]:
    """A judged.jsonl row of the reference script: the benchmark record of os/i/1 and what the script adds."""
    truth = f"**Environment Observation:**\n{observation or f'listing {i}'}"
    return {
        "task": "agentworld/os",
        "id": i,
        "prompt": [f"### Turn 1\n**Action:**\nls {i}"],
        "response": [truth],
        "current_prompt": f"### Turn 1\n**Action:**\nls {i}",
        "system_str": "",
        "turn_idx": 1,
        "total_turns": 1,
        "gen": gen or truth,
        "total_score": 4.0,
        **dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), 4),
        "failed": 0.0,
    }


def import_rows(tmp_path: Path, rows: list[dict[str, Any]], judge_model: str = "j") -> tuple[Path, Any]:
    path = tmp_path / "judged.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    output = tmp_path / "results"
    return path, cli("import", path, "--run-name", "r", "--judge-model", judge_model, "--output", output)


REPEAT_NOTE = ", where the reference's eval.py counts every row (its numbers will differ)"


def test_a_row_given_twice_alike_is_imported_once_with_a_warning(tmp_path):
    """Two partial outputs joined with an overlap: the repeat was imported as a second sample (os/1/1#2)."""
    path, result = import_rows(tmp_path, [judged_row(1), judged_row(2), judged_row(1)])
    assert result.exit_code == 0, result.output
    assert f"warning: {path}:3: repeats line 1 (sample os/1/1): taken once{REPEAT_NOTE}\n" in result.stderr
    assert "imported 2 predictions and 2 judgments" in result.stdout
    run = tmp_path / "results" / "r"
    assert json.loads((run / "run.json").read_text())["config"]["data"]["ids"] is None  # the whole file: its data
    # the run's data is the file less its repeat, whenever it is read again (the loader takes a repeat once)
    score = cli("score", run, "--format", "json")
    assert score.exit_code == 0, score.output
    assert json.loads(score.stdout)["completeness"] == {"selected": 2, "judged": 2}


def test_a_row_given_twice_with_another_generation_is_refused_naming_both_lines(tmp_path):
    path, result = import_rows(
        tmp_path, [judged_row(1), judged_row(2), {**judged_row(1), "gen": "other", "quality": 2}]
    )
    no_traceback(result)
    assert result.exit_code == 2
    assert (
        f"error: {path}:3: sample os/1/1 is on line 1 too, with other values (gen, quality): which to take is not "
        "known; remove the row that is not wanted\n"
    ) in result.stderr
    assert not (tmp_path / "results" / "r").exists()


def test_one_key_with_two_records_is_two_samples_as_the_android_file_has(tmp_path):
    _, result = import_rows(tmp_path, [judged_row(1), judged_row(1, observation="another listing")])
    assert result.exit_code == 0, result.output
    assert "repeats" not in result.stderr and "imported 2 predictions and 2 judgments" in result.stdout
    keys = {json.loads(line)["key"] for line in (tmp_path / "results" / "r" / "predictions.jsonl").open()}
    assert keys == {"os/1/1", "os/1/1#2"}


# --- Judge ids: a folder of their own --------------------------------------------------------------------------


@pytest.mark.parametrize("judge_id", ["..", ".", ".hidden", "a/b", ""])
def test_a_judge_id_is_a_plain_folder_name(judge_id):
    assert not JUDGE_ID.fullmatch(judge_id)


@pytest.mark.parametrize("model", ["..", ".", "../..", ".hidden-judge"])
def test_a_judge_model_named_like_a_folder_still_gives_a_folder_of_its_own(tmp_path, model):
    _, result = import_rows(tmp_path, [judged_row(1)], judge_model=model)
    assert result.exit_code == 0, result.output
    run = tmp_path / "results" / "r"
    (info,) = (run / "judges").glob("*/judge.json")
    assert JUDGE_ID.fullmatch(info.parent.name) and not info.parent.name.startswith(".")
    assert json.loads(info.read_text())["settings"]["model"] == model
    assert sorted(p.name for p in run.iterdir()) == ["judges", "predictions.jsonl", "run.json", "scores.json"]


# --- Numbers off their scales (issue 35's trial, finding 7) -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", *OPENAI, *SAMPLE, "--judge", "llm", "--judge-model", "j", "--judge-samples", "1000"],
         "--judge-samples: must be at most 100, got 1000"),
        (["run", "--model", "baseline:oracle", *SAMPLE, "--judge", "rules", "--rule-workers", str(10**20)],
         f"--rule-workers: must be at most 64, got {10**20}"),
        (["turing", "a", "--judge-model", "j", "--judge-price-in", "1e308"],
         "--judge-price-in: must be at most 1e+06, got 1e308"),
    ],
    ids=["judge samples", "rule workers", "price"],
)  # fmt: skip
def test_options_that_size_memory_or_costs_are_bounded(results, args, line):
    """`--generations 1000000000` was a MemoryError traceback; a price of 1e308 made a cost of infinity."""
    before = tree(results)
    one_line(cli(*args, "--output", results), line)
    assert tree(results) == before


def test_a_billion_generations_are_refused_in_one_line(results):
    """`--generations 1000000000` was a MemoryError traceback (without a limit, it exhausts the memory): a process
    under a 4 GB address space, so that a regression fails this test, not the machine."""
    result = awbench_limited("RLIMIT_AS", 4 * 2**30, "run", "--model", "baseline:oracle", "--judge", "rules", *SAMPLE,
                             "--generations", "1000000000", "--output", results)  # fmt: skip
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "error: --generations: must be at most 100, got 1000000000\n"


def test_a_config_files_generations_are_bounded_and_so_is_the_python_api(tmp_path):
    config = tmp_path / "run.toml"
    config.write_text('model = "baseline:oracle"\ngenerations = 1000000000\n')
    result = awbench_limited("RLIMIT_AS", 4 * 2**30, "run", "--config", config, "--judge", "rules", *SAMPLE,
                             "--output", tmp_path / "results")  # fmt: skip
    assert (result.returncode, result.stderr) == (2, f"error: {config}, line 2: generations: must be at most 100, got "
                                                     "1000000000\n")  # fmt: skip
    with pytest.raises(ValidationError, match="less than or equal to 100"):
        ModelSettings(model="m", backend="openai", generations=10**9)


SCORES_READERS = {
    "leaderboard": ["leaderboard"],
    "compare": ["compare", "a", "b"],
    "show": ["show", "a"],
    "report": ["report"],
}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"high"', "Input should be a valid number, unable to parse string as a number"),
        ("NaN", "Input should be a finite number"),
        ("Infinity", "Input should be a finite number"),
        ("-5", "Input should be greater than or equal to 0"),
        ("1e308", "Input should be less than or equal to 100"),
    ],
)
@pytest.mark.parametrize("command", SCORES_READERS)
def test_a_scores_file_awbench_did_not_write_is_one_line_naming_the_file_and_field(results, command, value, message):
    """scores.json edited by hand: "high" was a pydantic traceback; NaN, Infinity and -5 were ranked and printed."""
    (path,) = (results / "a" / "judges").glob("*/scores.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "overall": "@"}).replace('"@"', value))
    where = [results, "-o", results.parent / "r.html"] if command == "report" else ["--output", results]
    one_line(
        cli(*SCORES_READERS[command], *where),
        f"{path}: overall: {message}; make it again with `awbench score`",
    )
    assert cli("score", "a", "--output", results).exit_code == 0  # the way out named
    assert json.loads(path.read_text())["overall"] is None  # one domain of seven: no Overall


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("NaN", "Input should be a finite number"),
        ("1e308", "Input should be less than or equal to 100"),
        ("-1e308", "Input should be greater than or equal to 0"),
    ],
)
def test_a_judgment_score_off_its_scale_is_one_line_naming_the_file_and_line(results, value, message):
    """A judgment's score NaN or 1e308 was averaged: the score printed nan, or a number of 300 digits."""
    (path,) = (results / "a" / "judges").glob("*/judgments.jsonl")
    path.write_text(path.read_text().replace('"score":100.0', f'"score":{value}', 1))
    one_line(cli("score", "a", "--output", results), f"{path}:1: score: {message}")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (float("nan"), "Input should be a finite number"),
        (1e308, "Input should be less than or equal to 1000000000"),
        (-3, "Input should be greater than or equal to 0"),
    ],
)
def test_a_turing_answers_cost_off_its_scale_is_one_line_naming_the_file_and_line(results, value, message):
    """Costs NaN, 1e308 and -3 in answers.jsonl printed as cost nan, inf and -3000.00 (`judges`, `turing`)."""
    with FakeOpenAIServer(responder=lambda body: Reply("\\boxed{A}")) as server:
        with pytest.MonkeyPatch.context() as env:
            env.setenv(CHOICE_KEY_ENV, "sk-test-choice")
            assert cli("turing", "a", *choice_judge_args(server.url), "--output", results).exit_code == 0
    (path,) = (results / "a" / "turing").glob("*/answers.jsonl")
    answers = [json.loads(line) for line in path.read_text().splitlines()]
    assert answers[0]["cost_usd"] > 0
    path.write_text("".join(json.dumps({**a, "cost_usd": value}) + "\n" for a in answers))
    for command in (["judges", "a"], ["leaderboard"]):
        one_line(cli(*command, "--output", results), f"{path}:1: cost_usd: {message}")


# --- Samples and runs that are one and the same (issue 35's trial, finding 13) ------------------------------------


def test_rows_given_twice_alike_are_evaluated_once_by_run_as_import_takes_them(tmp_path):
    """Three rows repeated identically were evaluated twice by `run` (`import` took them once, with a warning)."""
    rows = (REPO / "data" / "sample" / "os_test.jsonl").read_text().splitlines()
    data = tmp_path / "data" / "os_test.jsonl"
    data.parent.mkdir()
    data.write_text("\n".join(rows + rows[:3]) + "\n")
    result = cli("run", "--model", "baseline:oracle", "--judge", "rules", "--data", data.parent, "--run-name", "d",
                 "--output", tmp_path / "results")  # fmt: skip
    assert result.exit_code == 0, result.output
    warned = [line for line in result.stderr.splitlines() if "taken once" in line]
    keys = [json.loads(row)["id"] for row in rows[:3]]
    assert warned == [
        f"warning: {data}:{len(rows) + i + 1}: repeats line {i + 1} (sample os/{keys[i]}/{i + 1}): taken once{REPEAT_NOTE}"
        for i in range(3)
    ]
    scores = json.loads((tmp_path / "results" / "d" / "scores.json").read_text())
    assert scores["domains"]["os"]["n"] == len(rows)
    made = (tmp_path / "results" / "d" / "predictions.jsonl").read_text().splitlines()
    assert len(made) == len(rows) and not any("#" in json.loads(line)["key"] for line in made)


@pytest.mark.parametrize("name", ["pairwise", "Pairwise"])
def test_a_run_may_not_take_the_name_of_awbenchs_own_folder(tmp_path, name):
    """A run named `pairwise` was accepted; every `compare --pairwise` under that --output then failed."""
    one_line(
        cli("run", "--model", "baseline:oracle", "--judge", "rules", *SAMPLE, "--run-name", name, "--output", tmp_path),
        f"--run-name: {name!r} is the folder of awbench's pairwise comparisons under --output: choose another",
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("name", "said"), [("r ", "U+0020 at position 1"), (" r", "U+0020 at position 0")])
def test_a_run_name_with_a_space_at_either_end_is_refused_naming_it(tmp_path, name, said):
    """A run named `r ` printed as `r`, beside the run `r`."""
    one_line(
        cli("run", "--model", "baseline:oracle", "--judge", "rules", *SAMPLE, "--run-name", name, "--output", tmp_path),
        f"--run-name: must not start or end with a space: {said}; got {name!r}",
    )


@pytest.mark.parametrize(("made", "new"), [("r", "\uff52"), ("caf\u00e9", "cafe\u0301"), ("cafe\u0301", "caf\u00e9")])
def test_a_new_run_name_that_only_its_unicode_form_tells_from_a_run_beside_it_is_refused(tmp_path, made, new):
    """Issue 35's trial: a full-width `ｒ` beside `r`, or `café` with its accent composed beside one with it
    combined, made two runs that every listing shows alike."""
    run = ("run", "--model", "baseline:oracle", "--judge", "rules", *SAMPLE, "--output", tmp_path)
    assert cli(*run, "--run-name", made).exit_code == 0
    one_line(
        cli(*run, "--run-name", new),
        f"run name {new!r} looks the same as {made!r}, already in {tmp_path} (they differ only in the characters' "
        "Unicode form): nothing was written; choose another --run-name, or use that run",
    )
    assert [p.name for p in tmp_path.iterdir()] == [made]
    assert cli(*run, "--run-name", made).exit_code == 0  # the run itself resumes as before


def test_default_run_names_of_judges_alike_but_for_punctuation_are_distinct(tmp_path):
    """Judges `j/x` and `j:x` gave one default run name: the second judge was added to the first's run."""
    output = tmp_path / "results"
    with (
        FakeOpenAIServer(responder=lambda body: Reply(judge_text(body))) as server,
        pytest.MonkeyPatch.context() as env,
    ):
        env.setenv(CHOICE_KEY_ENV, "sk-test")
        for model in ("j/x", "j:x", "j/x", "j:x"):  # made, then each resumed by the same command
            result = cli("run", "--model", "baseline:oracle", *SAMPLE, "--judge-model", model, "--judge-base-url",
                         server.url, "--judge-api-key-env", CHOICE_KEY_ENV, "--output", output)  # fmt: skip
            assert result.exit_code == 0, result.output
        asked = len(server.requests)
    hashed = f"baseline-oracle__j-x-{hashlib.sha256(b'baseline:oracle__j:x').hexdigest()[:6]}"
    assert sorted(p.name for p in output.iterdir()) == ["baseline-oracle__j-x", hashed]
    judges = {run: json.loads((output / run / "run.json").read_text())["config"]["judge"]["model"] for run in
              ("baseline-oracle__j-x", hashed)}  # fmt: skip
    assert judges == {"baseline-oracle__j-x": "j/x", hashed: "j:x"}
    assert asked == 2  # one sample judged once by each judge: the second commands resumed their own runs

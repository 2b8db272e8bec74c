"""One user-facing error type (awbench.errors.AwbenchError), reported in one place (awbench.cli.errors): its message
and hint as `error: ...` lines on stderr, its exit code, its key reachable from the exit; every refusal class of the
package is one."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
import typer
from pydantic import ValidationError
from refusals import refusal
from typer.testing import CliRunner

import awbench
from awbench.cli import app
from awbench.cli.errors import MAX_PROBLEMS_SHOWN, reported_errors
from awbench.config import RunConfig
from awbench.data.problems import DataError, Problem
from awbench.errors import AwbenchError
from awbench.judging import BudgetExhausted
from awbench.judging.rules.workers import RuleWorkerFailed
from awbench.run.store import StoreError
from awbench.transport.endpoints import FatalAPIError


def reported(error: BaseException, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(typer.Exit) as stopped, reported_errors():
        raise error
    return stopped.value.exit_code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("error", "code", "stderr"),
    [
        (StoreError("no run 'x'"), 2, "error: no run 'x'\n"),
        (FatalAPIError("the judge: 401 bad key"), 2, "error: the judge: 401 bad key; retrying cannot help\n"),
        (
            BudgetExhausted("judge spend would pass --max-cost 1"),
            1,
            "error: judge spend would pass --max-cost 1. The run is resumable: run the same command again with a "
            "higher --max-cost; until then its evaluation is incomplete, and never ranked nor exported.\n",
        ),
        (
            RuleWorkerFailed("a rule worker stopped"),
            1,
            "error: a rule worker stopped\nerror: The run is resumable: run the same command again.\n",
        ),
        (AwbenchError("nothing to rank", exit_code=1), 1, "error: nothing to rank\n"),
        (
            FileExistsError(17, "File exists", "out/report.html"),
            2,
            "error: cannot write out/report.html: File exists\n",
        ),
        (KeyboardInterrupt(), 130, "error: interrupted; run the same command again to resume\n"),
    ],
)
def test_each_refusal_is_its_message_hint_and_exit_code(error, code, stderr, capsys):
    assert reported(error, capsys) == (code, stderr)


def test_a_data_error_lists_its_problems_first_at_most_fifty(capsys):
    problems = [Problem(path="d.jsonl", line=n, field="id", message="missing") for n in range(1, 53)]
    code, err = reported(DataError("d.jsonl: 52 errors", problems), capsys)
    lines = err.splitlines()
    assert (
        code == 2
        and lines[0] == "d.jsonl:1: id: missing"
        and lines[MAX_PROBLEMS_SHOWN - 1] == "d.jsonl:50: id: missing"
    )
    assert lines[MAX_PROBLEMS_SHOWN:] == [
        "... and 2 more (awbench data validate lists all)",
        "error: d.jsonl: 52 errors",
    ]


def test_settings_are_named_by_their_options_and_other_errors_stay_bugs(capsys):
    with pytest.raises(ValidationError) as invalid:
        RunConfig.model_validate({"run_name": "../x", "model": {"model": "m", "backend": "openai"}})
    code, err = reported(invalid.value, capsys)
    assert (code, err.split(":")[:2]) == (2, ["error", " --run-name"])
    with pytest.raises(ZeroDivisionError), reported_errors():  # not the user's: a traceback, as any bug
        raise ZeroDivisionError
    with pytest.raises(OSError), reported_errors():  # an OSError that names no file is no output's
        raise OSError("no file")


def test_the_key_of_a_refusal_is_reachable_from_the_command_line_exit(tmp_path):
    result = CliRunner().invoke(app, ["show", "nobody", "--output", str(tmp_path)])
    assert refusal(result) == (2, "unknown_run")
    assert result.stderr.startswith("error: no run 'nobody'")
    assert refusal(CliRunner().invoke(app, ["ls", str(tmp_path)])) == (0, None)


OPTIONAL_EXTRAS = {"inspect_ai", "vllm", "torch", "transformers"}  # modules that import them need their extra


def _refusal_classes() -> list[type[Exception]]:
    """Every exception class defined in the package that the user is shown (named *Error, or one of the few
    others), imported from its module; a module that needs an extra not installed here is left out."""
    found = []
    for module in pkgutil.walk_packages(awbench.__path__, "awbench."):
        if "_bundled" in module.name:  # the sample's scripts
            continue
        try:
            imported = importlib.import_module(module.name)
        except ModuleNotFoundError as missing:
            if (missing.name or "").split(".")[0] in OPTIONAL_EXTRAS:
                continue
            raise
        for _, cls in inspect.getmembers(imported, inspect.isclass):
            if issubclass(cls, Exception) and cls.__module__ == module.name and not cls.__name__.startswith("_"):
                found.append(cls)
    return found


def test_every_refusal_class_of_the_package_is_an_awbench_error_with_a_key():
    refusals = {
        "StoreError", "RunLocked", "DataError", "PromptError", "ReferenceCodeError", "MissingAPIKey",
        "FatalAPIError", "EndpointDown", "BudgetExhausted", "PipelineError", "BackendUnavailable",
        "UnknownBaseline", "WorldModelError", "UnknownPlugin", "CostUnknown", "RuleWorkerFailed",
        "ConfigFileError", "CompareError", "SettingsError",
    }  # fmt: skip
    classes = {cls.__name__: cls for cls in _refusal_classes()}
    assert refusals <= classes.keys()
    for name in refusals:
        refusal_class = classes[name]
        assert issubclass(refusal_class, AwbenchError) and refusal_class.key not in ("", AwbenchError.key), name
    # The others are the transport's and the Batch API runner's (retried, or recorded on a sample), never shown
    # as a refusal.
    assert {n for n, c in classes.items() if not issubclass(c, AwbenchError)} == {
        "EndpointError",
        "StatusError",
        "ConnectionFailed",
        "MalformedResponse",
        "RequestTimeout",
        "NotRun",
    }

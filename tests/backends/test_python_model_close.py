"""A Python world model's object is closed when the run ends: `aclose()` awaited, else `close()` called, once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from reliability_helpers import no_traceback
from test_python_models import awbench

from awbench.backends import python_model
from awbench.config import ModelSettings

# Each logs its predictions and its closing to the file LOG names, so the order is on disk.
CLOSING = """
import os

LOG = os.environ["WM_LOG"]


def _log(line):
    with open(LOG, "a") as log:
        log.write(line + "\\n")


class Plain:
    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        _log("predict")
        return sample.action

    def close(self):
        _log("close")


class Async:
    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        _log("predict")
        return sample.action

    def close(self):
        _log("close, not aclose")

    async def aclose(self):
        _log("aclose")
"""


def test_the_object_is_closed_once_when_the_run_ends(tmp_path: Path) -> None:
    (tmp_path / "wm_closing.py").write_text(CLOSING)
    for name, closing in (("Plain", "close"), ("Async", "aclose")):
        log = tmp_path / f"{name}.log"
        args = ["run", "--model", f"python:wm_closing:{name}", "--judge", "rules", "--data", "sample"]
        result = awbench(tmp_path, *args, "--domains", "os", "--run-name", name, WM_LOG=str(log))
        assert result.returncode == 0, result.stderr
        made = (tmp_path / "results" / name / "predictions.jsonl").read_text().splitlines()
        assert all(json.loads(line)["status"] == "ok" for line in made)
        assert log.read_text().splitlines() == ["predict"] * len(made) + [closing]


def test_aclose_twice_closes_once_and_a_function_has_nothing_to_close(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "wm_closing.py").write_text(CLOSING)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WM_LOG", str(tmp_path / "log"))
    backend = python_model.create(ModelSettings(backend="python", model="python:wm_closing:Plain"))
    asyncio.run(backend.aclose())
    asyncio.run(backend.aclose())
    assert (tmp_path / "log").read_text() == "close\n"
    (tmp_path / "wm_function.py").write_text(
        "def close():\n    raise AssertionError('not a model object')\n\n"
        "def predict(messages, *, sample, seed, max_tokens, temperature):\n"
        "    return ''\n"
    )
    function = python_model.create(ModelSettings(backend="python", model="python:wm_function:predict"))
    asyncio.run(function.aclose())  # the module's close() is not the model's


FAILING_TO_CLOSE = """
import os
import sys


class Raises:
    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return sample.action

    def close(self):
        raise OSError("the simulator's socket is gone")


class Exits:
    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return sample.action

    async def aclose(self):
        sys.exit(1)


class OsExits:
    def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return sample.action

    def close(self):
        os._exit(0)


class AsyncOsExits:
    async def predict(self, messages, *, sample, seed, max_tokens, temperature):
        return sample.action

    async def aclose(self):
        os._exit(2)
"""


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("Raises", "close() raised OSError: the simulator's socket is gone"),
        ("Exits", "aclose() called sys.exit(1): a world model may not end awbench's process"),
        ("OsExits", "close() called os._exit(0): a world model may not end awbench's process"),
        ("AsyncOsExits", "aclose() called os._exit(2): a world model may not end awbench's process"),
    ],
)
def test_a_model_that_fails_to_close_loses_no_scores(tmp_path: Path, name: str, said: str) -> None:
    """A `close()` that raised lost `scores.json` (a traceback after the predictions), one that called os._exit
    ended the process with exit 0 and no word: the run is scored as usual, and the failure is one warning."""
    (tmp_path / "wm_failing_close.py").write_text(FAILING_TO_CLOSE)
    args = ["run", "--model", f"python:wm_failing_close:{name}", "--judge", "rules", "--data", "sample"]
    result = awbench(tmp_path, *args, "--domains", "os", "--run-name", name)
    no_traceback(result)
    assert result.returncode == 0, result.stderr
    scores = json.loads((tmp_path / "results" / name / "scores.json").read_text())
    assert scores["completeness"] == {"judged": 8, "selected": 8}  # every OS sample scored
    warning = f"the world model was not closed: python:wm_failing_close:{name}: {said}; its predictions are kept"
    assert warning in result.stderr.replace("\n", ""), result.stderr

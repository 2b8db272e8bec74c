"""Backends and judges from installed packages (`awbench.plugins`): a package on sys.path with a `.dist-info`
whose entry_points.txt names a backend (group `awbench.backends`) and a judge (group `awbench.judges`) is
found by importlib.metadata as an installed one is, and `awbench run` uses them by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from awbench import plugins

REPO = Path(__file__).resolve().parent.parent

BACKEND = '''
"""A candidate that shouts the real observation back."""
import asyncio

from awbench.backends import BackendBase
from awbench.errors import AwbenchError
from awbench.records import Generation

LOADED = True


class Shouting(BackendBase):
    async def generate(self, requests):
        for request in requests:
            yield Generation(key=request.key, generation=request.generation,
                             text=request.sample.record.ground_truth.upper(), finish_reason="stop")
            await asyncio.sleep(0)


def preflight(settings):
    if settings.model != "loud":
        raise AwbenchError(f"shouting has no model {settings.model!r}")


def create(settings, endpoints=None):
    return Shouting()
'''

JUDGE = '''
"""A judge that gives 4 on every dimension to a prediction equal to the observation ignoring case, else 2."""
from awbench.domains import DIMENSIONS, to_100
from awbench.judging import JudgeBase, prediction_request
from awbench.records import JudgmentRecord, content_hash


class CaseBlind(JudgeBase):
    kind = "llm"
    id = "case-blind-v1"

    def describe(self):
        return {"protocol": "awbench", "judge": "case-blind"}

    def request(self, sample, prediction):
        return prediction_request(sample, prediction)

    def cache_key(self, request):
        return content_hash(["case-blind", request.sample.hash, request.prediction])

    async def judge(self, requests):
        async for request in requests:
            same = request.prediction.lower() == request.sample.record.ground_truth.lower()
            grade = 4.0 if same else 2.0
            yield JudgmentRecord(key=request.key, generation=request.generation, domain=request.domain, judge="llm",
                                 cache_key=self.cache_key(request), status="ok", score=to_100(grade),
                                 dimensions={d: grade for d in DIMENSIONS})


def create(settings, endpoints=None):
    return CaseBlind()
'''


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """The directory that, on sys.path, makes package `shouting` installed with its two entry points."""
    site = tmp_path / "site"
    (site / "shouting").mkdir(parents=True)
    (site / "shouting" / "__init__.py").write_text(BACKEND)
    (site / "shouting" / "judge.py").write_text(JUDGE)
    info = site / "shouting-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shouting\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent("""\
        [awbench.backends]
        shouting = shouting

        [awbench.judges]
        case-blind = shouting.judge
        """)
    )
    return site


def awbench(site: Path | None, *args: str) -> subprocess.CompletedProcess[str]:
    paths = [*([str(site)] if site else []), str(REPO)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths), "AWBENCH_BROWSER": "none", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", "from awbench.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_a_run_uses_a_backend_and_a_judge_an_installed_package_adds(installed: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = awbench(
        installed,
        "run",
        "--backend",
        "shouting",
        "--model",
        "loud",
        "--judge-backend",
        "case-blind",
        "--data",
        "sample",
        "--domains",
        "os",
        "--limit",
        "2",
        "--output",
        str(out),
        "--run-name",
        "r",
    )
    assert result.returncode == 0, result.stderr
    predictions = [json.loads(line) for line in (out / "r" / "predictions.jsonl").read_text().splitlines()]
    assert [p["key"] for p in predictions] == ["os/2/1", "os/2/2"]
    assert all(p["status"] == "ok" and p["prediction"] == p["prediction"].upper() != "" for p in predictions)
    judgments = [
        json.loads(line)
        for line in (out / "r" / "judges" / "case-blind-v1" / "judgments.jsonl").read_text().splitlines()
    ]
    assert [(j["key"], j["judge"], j["score"]) for j in judgments] == [("os/2/1", "llm", 75.0), ("os/2/2", "llm", 75.0)]
    scores = json.loads((out / "r" / "scores.json").read_text())
    assert scores["domains"]["os"]["score"] == 75.0 and scores["domains"]["os"]["dimensions"]["realism"] == 75.0
    manifest = json.loads((out / "r" / "run.json").read_text())
    assert manifest["config"]["model"]["backend"] == "shouting" and manifest["primary_judge"] == "case-blind-v1"
    assert manifest["primary_described"] == {"protocol": "awbench", "judge": "case-blind"}


def test_a_package_backend_s_own_checks_run_before_anything_is_written(installed: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs"
    result = awbench(
        installed,
        "run",
        "--backend",
        "shouting",
        "--model",
        "quiet",
        "--judge",
        "rules",
        "--data",
        "sample",
        "--limit",
        "1",
        "--output",
        str(out),
        "--run-name",
        "r",
    )
    assert (result.returncode, result.stderr) == (
        2,
        "error: shouting has no model 'quiet'\n",
    )  # a refusal, no traceback
    assert not out.exists()


def test_an_unknown_name_is_refused_naming_the_known_ones_installed_ones_included(
    installed: Path, tmp_path: Path
) -> None:
    result = awbench(installed, "run", "--backend", "whisper", "--model", "m", "--output", str(tmp_path))
    assert result.returncode == 2
    assert "--backend: 'whisper' is not one of 'baseline', 'openai', 'vllm', 'python', 'shouting'" in result.stderr
    result = awbench(
        installed, "run", "--model", "baseline:oracle", "--judge-backend", "nope", "--output", str(tmp_path)
    )
    assert result.returncode == 2
    assert "--judge-backend: 'nope' is not one of 'openai', 'vllm', 'case-blind'" in result.stderr
    without = awbench(None, "run", "--backend", "shouting", "--model", "loud", "--output", str(tmp_path))
    assert (
        without.returncode == 2
        and "--backend: 'shouting' is not one of 'baseline', 'openai', 'vllm', 'python'\n" in without.stderr
    )


def test_the_registry_loads_only_the_name_used() -> None:
    assert plugins.names("awbench.backends")[:4] == ["baseline", "openai", "vllm", "python"]
    assert plugins.names("awbench.judges")[:2] == ["openai", "vllm"]
    with pytest.raises(
        plugins.UnknownPlugin, match=r"unknown backend 'whisper'; known: baseline, openai, vllm, python"
    ):
        plugins.load("awbench.backends", "whisper")
    code = (
        "import sys; from awbench import plugins; plugins.load('awbench.backends', 'baseline'); "
        "print('awbench.backends.vllm_offline' in sys.modules, 'openai' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    assert subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout.split() == ["False", "False"]

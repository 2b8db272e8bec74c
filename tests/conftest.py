"""Shared fixtures. The tests are in folders that follow awbench's packages; they import helpers from this folder
(fake_openai, tiny_model, ...), which is on sys.path as the folder of this conftest.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from tiny_model import ensure_tiny_model
from vllm_fixtures import Server, offline_settings, require_vllm, running_server

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig
from awbench.resources import sample_dir


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on a real vLLM engine are slow (an engine starts in 24 to 85 s on CPU): marked so where they
    are found, by the fixture they all start from."""
    for item in items:
        if "tiny_model" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def sample_path() -> Path:
    path = sample_dir()
    assert sorted(p.name for p in path.glob("*_test.jsonl")), f"the bundled sample is missing at {path}"
    return path


@pytest.fixture
def make_config(tmp_path):
    """A RunConfig on the bundled sample, writing under tmp_path."""

    def make(
        model_name: str = "baseline:oracle", judge: str | None = "rules", judge_options: dict | None = None, **changes
    ) -> RunConfig:
        backend = "baseline" if model_name.startswith("baseline:") else changes.pop("backend", "openai")
        model_settings = ModelSettings(model=model_name, backend=backend, **changes.pop("model", {}))
        return RunConfig(
            run_name=changes.pop("run_name", "run"),
            output=tmp_path / "results",
            data=DataSettings(**{"source": "sample", **changes.pop("data", {})}),
            model=model_settings,
            judge=JudgeSettings(kind=judge, **(judge_options or {})) if judge else None,
            **changes,
        )

    return make


@pytest.fixture
def any_trajectories(monkeypatch):
    """Intervals from however few trajectories: for tests of the interval arithmetic on data small enough to
    check by hand, which the reports themselves call too few to tell (`stats.MIN_TRAJECTORIES`)."""
    import awbench.analysis.report
    import awbench.cli.analysis_views  # noqa: F401
    from awbench.analysis import stats

    monkeypatch.setattr(stats, "MIN_TRAJECTORIES", 1)


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    require_vllm()
    return ensure_tiny_model()


@pytest.fixture(scope="session")
def offline_backend(tiny_model: Path) -> Iterator[object]:
    """The offline backend made by `create`, as the CLI makes it; its engine lives for the whole session."""
    from awbench.backends.vllm_offline import create

    backend = create(offline_settings(tiny_model))
    yield backend
    asyncio.run(backend.aclose())


@pytest.fixture(scope="session")
def vllm_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The tiny model served with the qwen3 reasoning parser, as thinking models usually are."""
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    with running_server(tiny_model, log, ["--reasoning-parser", "qwen3", "--enforce-eager"]) as server:
        yield server


@pytest.fixture(scope="module")
def choice_judge() -> Iterator[FakeOpenAIServer]:
    """A judge that always answers Response A (`turing`, `compare --pairwise`: `reliability_helpers.choice_judge_args`
    gives its options)."""
    with FakeOpenAIServer(responder=lambda body: Reply("Response A is the real one. \\boxed{A}")) as judge:
        yield judge

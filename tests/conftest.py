"""Shared fixtures. Test modules import helpers from this folder (fake_openai, tiny_model, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig
from awbench.resources import sample_dir


@pytest.fixture(scope="session")
def sample_path() -> Path:
    path = sample_dir()
    assert sorted(p.name for p in path.glob("*_test.jsonl")), f"the bundled sample is missing at {path}"
    return path


@pytest.fixture
def make_config(tmp_path):
    """A RunConfig on the bundled sample, writing under tmp_path."""

    def make(model_name: str = "baseline:oracle", judge: str | None = "rules", judge_options: dict | None = None,
             **changes) -> RunConfig:
        backend = "baseline" if model_name.startswith("baseline:") else changes.pop("backend", "openai")
        model_settings = ModelSettings(model=model_name, backend=backend, **changes.pop("model", {}))
        return RunConfig(
            run_name=changes.pop("run_name", "run"), output=tmp_path / "results",
            data=DataSettings(**{"source": "sample", **changes.pop("data", {})}),
            model=model_settings, judge=JudgeSettings(kind=judge, **(judge_options or {})) if judge else None,
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

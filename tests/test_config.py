from pathlib import Path

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig, default_run_name, differing_settings, identity


def _config(**model):
    return RunConfig(run_name="r", model=ModelSettings(model="m", backend="openai", **model), judge=JudgeSettings())


def test_identity_leaves_out_operational_settings():
    flat = identity(_config())
    assert "model.temperature" in flat and "judge.model" in flat and "data.source" in flat
    assert "model.concurrency" not in flat and "output" not in flat and "judge.api_key_env" not in flat


def test_differing_settings_names_each_difference():
    a, b = _config(temperature=0.6), _config(temperature=1.0, concurrency=3)
    assert differing_settings(a, b) == ["model.temperature: 0.6 -> 1.0"]


def test_default_run_name_is_a_safe_directory_name():
    assert default_run_name("Qwen/Qwen-AgentWorld-35B-A3B", JudgeSettings()) == "Qwen-Qwen-AgentWorld-35B-A3B__gpt-5.2-2025-12-11"
    assert default_run_name("baseline:oracle", JudgeSettings(kind="rules")) == "baseline-oracle__rules"
    assert default_run_name("m", JudgeSettings(kind="both")) == "m__gpt-5.2-2025-12-11+rules"
    assert default_run_name("m", None) == "m__unjudged"
    assert default_run_name("./my-model", None) == "my-model__unjudged"  # never a hidden directory
    assert default_run_name("../up/m", JudgeSettings(kind="rules")) == "up-m__rules"


def test_run_dir_joins_output_and_name():
    config = RunConfig(run_name="x", output=Path("/tmp/out"), data=DataSettings(source="sample"),
                       model=ModelSettings(model="baseline:oracle", backend="baseline"))
    assert config.run_dir == Path("/tmp/out/x")

import asyncio
import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from awbench.cli import app
from awbench.config import (
    DataSettings,
    EngineSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    default_run_name,
    differing_settings,
    identity,
    judge_settings,
)
from awbench.run import pipeline
from awbench.run.store import RunStore

SCORES = {"format": 5, "factuality": 4, "consistency": 3, "realism": 4, "quality": 2}
VERDICT = (
    '<final_evaluation>\n```json\n{"strengths": ["s"], "weaknesses": ["w"], "scores": '
    + json.dumps(SCORES)
    + "}\n```\n</final_evaluation>"
)


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
    assert (
        default_run_name("Qwen/Qwen-AgentWorld-35B-A3B", JudgeSettings())
        == "Qwen-Qwen-AgentWorld-35B-A3B__gpt-5.2-2025-12-11"
    )
    assert default_run_name("baseline:oracle", JudgeSettings(kind="rules")) == "baseline-oracle__rules"
    assert default_run_name("m", JudgeSettings(kind="both")) == "m__gpt-5.2-2025-12-11+rules"
    assert default_run_name("m", None) == "m__unjudged"
    assert default_run_name("./my-model", None) == "my-model__unjudged"  # never a hidden directory
    assert default_run_name("../up/m", JudgeSettings(kind="rules")) == "up-m__rules"


def test_run_dir_joins_output_and_name():
    config = RunConfig(
        run_name="x",
        output=Path("/tmp/out"),
        data=DataSettings(source="sample"),
        model=ModelSettings(model="baseline:oracle", backend="baseline"),
    )
    assert config.run_dir == Path("/tmp/out/x")


# --- The in-process engines' settings: one model (EngineSettings), and run.json files of awbench 0.3 -----------

# ModelSettings' engine fields, and JudgeSettings.engine, as awbench 0.3 wrote them in run.json.
ENGINE_OF_0_3 = {
    "max_model_len": 8192,
    "dtype": "bfloat16",
    "engine_args": {"enforce_eager": True},
    "tensor_parallel_size": 2,
    "data_parallel_size": 1,
    "gpu_memory_utilization": 0.5,
    "trust_remote_code": True,
    "enable_prefix_caching": True,
    "distributed_executor_backend": None,
    "batch_size": 64,
}
JUDGE_ENGINE_OF_0_3: dict[str, object] = {
    "max_model_len": None,
    "dtype": "auto",
    "engine_args": {},
    "tensor_parallel_size": 1,
    "gpu_memory_utilization": 0.9,
    "trust_remote_code": False,
    "enable_prefix_caching": False,
    "distributed_executor_backend": "ray",
    "batch_size": 8,
}


def test_a_run_json_of_awbench_0_3_is_read_without_being_written(tmp_path):
    args = ["--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--domains", "os", "--limit", "1"]
    made = CliRunner().invoke(app, ["run", *args, "--output", str(tmp_path), "--run-name", "old"])
    assert made.exit_code == 0, made.output
    path = tmp_path / "old" / "run.json"
    written = json.loads(path.read_text())
    del written["config"]["model"]["engine"]
    written["config"]["model"] |= ENGINE_OF_0_3
    written["config"]["judge"]["engine"] = JUDGE_ENGINE_OF_0_3
    path.write_text(json.dumps(written, indent=2))
    before = path.read_bytes()

    config = RunStore(tmp_path / "old").read_manifest().config
    engine = config.model.engine
    assert (engine.max_model_len, engine.tensor_parallel_size, engine.gpu_memory_utilization) == (8192, 2, 0.5)
    # What vllm.LLM was given beyond awbench's defaults is its arguments now.
    assert engine.batch_size == 64 and engine.engine_args == {
        "enforce_eager": True,
        "dtype": "bfloat16",
        "trust_remote_code": True,
    }
    assert config.judge is not None
    judge_engine = config.judge.engine
    assert judge_engine.batch_size == 8 and judge_engine.engine_args == {
        "enable_prefix_caching": False,
        "distributed_executor_backend": "ray",
    }
    # The same settings given today are the same run, resumable.
    today = ModelSettings(
        model="baseline:oracle",
        backend="baseline",
        seed=0,
        engine={"max_model_len": 8192, "engine_args": {"enforce_eager": True, "dtype": "bfloat16"}},
    )
    assert differing_settings(config.model, today) == [
        "engine.engine_args: {'enforce_eager': True, 'dtype': 'bfloat16', 'trust_remote_code': True} -> "
        "{'enforce_eager': True, 'dtype': 'bfloat16'}"
    ]
    same = today.model_copy(update={"engine": today.engine.model_copy(update={"engine_args": engine.engine_args})})
    assert differing_settings(config.model, same) == []
    # Commands that read the run leave its file as it was.
    for command in (["show", "old"], ["ls", "old"], ["score", "old"]):
        result = CliRunner().invoke(app, [*command, "--output", str(tmp_path)])
        assert result.exit_code == 0, result.output
    assert path.read_bytes() == before


def test_an_engine_setting_is_kept_in_one_place_however_it_is_given():
    given = EngineSettings(engine_args={"batch_size": 8, "max_model_len": 4096, "quantization": "fp8"})
    assert given == EngineSettings(batch_size=8, max_model_len=4096, engine_args={"quantization": "fp8"})
    assert (
        EngineSettings(max_model_len=2048, engine_args={"max_model_len": 4096}).max_model_len == 4096
    )  # as vLLM got it
    legacy = ModelSettings.model_validate({"model": "m", "backend": "vllm", "max_model_len": 4096, "batch_size": 8})
    assert legacy.engine == EngineSettings(max_model_len=4096, batch_size=8)


# --- Merging judge options into a run's judge (the CLI's `awbench judge RUN --judge-...` and the Python API) ---


def test_judge_options_merge_over_the_base_judge():
    base = JudgeSettings(model="j", temperature=0.0, engine={"batch_size": 8})
    merged = judge_settings(base, {"samples": 2, "engine": {"max_model_len": 4096}})
    assert (merged.model, merged.temperature, merged.samples) == ("j", 0.0, 2)
    assert (merged.engine.batch_size, merged.engine.max_model_len) == (8, 4096)
    assert judge_settings(None, {}) == JudgeSettings()


def test_llm_judge_settings_on_a_rule_judge_ask_for_an_llm_judge():
    rules = JudgeSettings(kind="rules")
    assert judge_settings(rules, {"model": "j"}).kind == "llm"
    assert judge_settings(rules, {"engine": {"dtype": "bfloat16"}}).kind == "llm"
    assert judge_settings(rules, {"rule_workers": 0}).kind == "rules"  # the rule judge's own
    assert judge_settings(rules, {"max_cost": 1.0}).kind == "llm"  # a cap is an LLM judge's: the rule judge is free
    with pytest.raises(ValueError) as refused:
        judge_settings(None, {"kind": "rules", "model": "j", "engine": {"dtype": "half"}})
    assert (
        str(refused.value)
        == "model, engine.dtype do not apply to kind rules (an LLM judge's settings; the rule judge is offline and "
        "free): leave them out, or use kind llm or both"
    )
    names = {"JudgeSettings.kind": "--judge", "JudgeSettings.model": "--judge-model"}
    with pytest.raises(ValueError) as refused:
        judge_settings(None, {"kind": "rules", "model": "j"}, names=names)
    assert (
        str(refused.value)
        == "--judge-model does not apply to --judge rules (an LLM judge's settings; the rule judge is offline and "
        "free): leave it out, or use --judge llm or both"
    )


def test_a_judge_endpoint_means_the_http_judge():
    local = JudgeSettings(backend="vllm")
    assert judge_settings(local, {"base_url": "http://127.0.0.1:9/v1"}).backend == "openai"
    with pytest.raises(ValueError, match=r"^base_url is for backend openai: the vllm judge runs in this process$"):
        judge_settings(None, {"base_url": "http://127.0.0.1:9/v1", "backend": "vllm"})


def test_the_python_api_adds_an_llm_judge_to_a_rule_judged_run_as_the_cli_does(make_config, monkeypatch):
    """`pipeline.judge(store, changes)` is `awbench judge RUN --judge-model ... --judge-base-url ...`."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-config-0001")
    config = make_config("baseline:oracle", judge="rules", data={"domains": ["os"]})
    asyncio.run(pipeline.run(config))
    store = RunStore(config.run_dir)
    rules = store.read_manifest().primary_judge
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT)) as server:
        outcome = asyncio.run(pipeline.judge(store, {"model": "judge-x", "base_url": server.url}))
    (summary,) = outcome.stages
    (llm,) = set(outcome.scores) - {rules}
    assert store.read_manifest().primary_judge == rules  # the rule judge stays the primary
    assert summary.stage == f"judge {llm}" and summary.computed == len(server.requests) > 0
    assert server.requests[0]["model"] == "judge-x"
    assert json.loads((store.path / "judges" / llm / "judge.json").read_text())["settings"]["kind"] == "llm"
    (resumed,) = asyncio.run(pipeline.judge(store)).stages  # no changes: the primary judge resumes, nothing to redo
    assert (resumed.stage, resumed.computed) == (f"judge {rules}", 0)

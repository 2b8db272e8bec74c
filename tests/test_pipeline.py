import asyncio

import pytest

from awbench import pipeline
from awbench.domains import DOMAINS


def test_oracle_scores_100_everywhere_with_the_rule_judge(make_config):
    outcome = asyncio.run(pipeline.run(make_config("baseline:oracle")))
    scores = outcome.scores
    assert outcome.exit_code == 0
    assert list(scores.domains) == list(DOMAINS)
    assert scores.judge == "rules"
    assert scores.overall == pytest.approx(100.0) and scores.overall_micro == pytest.approx(100.0)
    assert all(d.failed == 0 and d.unscored == 0 and d.scored == d.n for d in scores.domains.values())


def test_empty_baseline_fails_everything_and_exits_1(make_config):
    outcome = asyncio.run(pipeline.run(make_config("baseline:empty")))
    assert outcome.exit_code == 1
    assert outcome.scores.overall == 0.0
    assert all(d.failed == d.n for d in outcome.scores.domains.values())


def test_exclude_policy_leaves_failures_out(make_config):
    config = make_config("baseline:empty")
    config.scoring.failure_policy = "exclude"
    outcome = asyncio.run(pipeline.run(config))
    assert outcome.scores.overall is None and outcome.exit_code == 1


def test_resume_after_a_crash_recomputes_only_the_torn_record(make_config):
    config = make_config("baseline:last-observation")
    store, samples = pipeline.prepare(config)
    first = asyncio.run(pipeline.infer(store, samples))
    assert (first.computed, first.reused) == (len(samples), 0)

    path = store.predictions.path
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])  # the process died while writing the last record
    store, samples = pipeline.prepare(config)
    second = asyncio.run(pipeline.infer(store, samples))
    assert (second.computed, second.reused) == (1, len(samples) - 1)
    assert len(store.predictions.load()) == len(samples)


def test_rerunning_a_finished_run_computes_nothing(make_config):
    config = make_config("baseline:oracle")
    asyncio.run(pipeline.run(config))
    store, samples = pipeline.prepare(config)
    assert asyncio.run(pipeline.infer(store, samples)).computed == 0
    assert [s.computed for s in asyncio.run(pipeline.judge(store, samples))] == [0]


def test_changed_settings_are_refused_with_their_names(make_config):
    pipeline.prepare(make_config("baseline:oracle", model={"temperature": 0.6}))
    with pytest.raises(pipeline.PipelineError) as error:
        pipeline.prepare(make_config("baseline:oracle", model={"temperature": 1.0}, data={"domains": ["mcp"]}))
    message = str(error.value)
    assert "model.temperature: 0.6 -> 1.0" in message
    assert "data.domains: None -> ['mcp']" in message
    assert "--overwrite" in message


def test_operational_settings_may_change_on_resume(make_config):
    pipeline.prepare(make_config("baseline:oracle", model={"concurrency": 4}))
    store, _ = pipeline.prepare(make_config("baseline:oracle", model={"concurrency": 8}))
    assert store.read_manifest().config.model.concurrency == 8


def test_overwrite_replaces_the_run(make_config):
    config = make_config("baseline:oracle")
    asyncio.run(pipeline.run(config))
    store, _ = pipeline.prepare(make_config("baseline:oracle", model={"temperature": 0.1}), overwrite=True)
    assert not store.predictions.path.exists()
    assert store.read_manifest().config.model.temperature == 0.1


def test_run_json_records_the_environment_and_no_secret(make_config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written")
    asyncio.run(pipeline.run(make_config("baseline:oracle")))
    run_dir = make_config().run_dir
    manifest = (run_dir / "run.json").read_text()
    for field in ('"awbench_version"', '"python"', '"data_fingerprint"', '"started_at"', '"finished_at"', '"rules_version"'):
        assert field in manifest
    for path in run_dir.iterdir():
        assert "sk-test-never-written" not in path.read_text()


def test_changed_data_is_detected_when_judging_later(make_config, sample_path, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    source = sample_path / "os_test.jsonl"
    (data_dir / "os_test.jsonl").write_bytes(source.read_bytes())
    config = make_config("baseline:oracle", data={"source": str(data_dir)})
    store, _ = pipeline.prepare(config)
    lines = (data_dir / "os_test.jsonl").read_text().split("\n")
    (data_dir / "os_test.jsonl").write_text("\n".join(lines[1:]))
    with pytest.raises(pipeline.PipelineError, match="is not what run run was made with"):
        pipeline.run_samples(store)


def test_seeds_are_per_sample_and_stable():
    assert pipeline.sample_seed(None, "a") is None
    assert pipeline.sample_seed(1, "a") == pipeline.sample_seed(1, "a")
    assert len({pipeline.sample_seed(1, k) for k in ("a", "b", "c")}) == 3
    assert pipeline.sample_seed(1, "a") != pipeline.sample_seed(2, "a")

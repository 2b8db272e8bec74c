import asyncio
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from awbench.domains import DOMAINS
from awbench.judging.rules.judge import RuleJudge
from awbench.run import pipeline
from awbench.run.stages import sample_seed
from awbench.run.store import RunStore
from awbench.transport.endpoints import EndpointDown


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
    config = make_config("baseline:last-observation", judge=None)
    first = asyncio.run(pipeline.infer(config))
    n = first.computed
    assert (first.computed, first.reused) == (n, 0) and n == 65

    store = RunStore(config.run_dir)
    data = store.predictions.path.read_bytes()
    store.predictions.path.write_bytes(data[: len(data) - 10])  # the process died while writing the last record
    assert len(store.predictions.load()) == n - 1  # a reader ignores the torn line
    second = asyncio.run(pipeline.infer(config))
    assert (second.computed, second.reused) == (1, n - 1)
    assert len(store.predictions.load()) == n
    assert store.predictions.path.read_bytes().count(b"\n") == n  # the torn piece was cut off, not kept


def test_rerunning_a_finished_run_computes_nothing(make_config):
    config = make_config("baseline:oracle")
    asyncio.run(pipeline.run(config))
    again = asyncio.run(pipeline.run(config))
    assert [s.computed for s in again.stages] == [0, 0]
    assert [s.reused for s in again.stages] == [65, 65]


def test_changed_settings_are_refused_with_their_names(make_config):
    asyncio.run(pipeline.infer(make_config("baseline:oracle", judge=None, model={"temperature": 0.6})))
    with pytest.raises(pipeline.PipelineError) as error:
        asyncio.run(
            pipeline.infer(
                make_config("baseline:oracle", judge=None, model={"temperature": 1.0}, data={"domains": ["mcp"]})
            )
        )
    message = str(error.value)
    assert "model.temperature: 0.6 -> 1.0" in message
    assert "data.domains: None -> ['mcp']" in message
    assert "--overwrite" in message


def test_operational_settings_may_change_on_resume(make_config):
    asyncio.run(pipeline.infer(make_config("baseline:oracle", judge=None, model={"concurrency": 4})))
    config = make_config("baseline:oracle", judge=None, model={"concurrency": 8})
    asyncio.run(pipeline.infer(config))
    assert RunStore(config.run_dir).read_manifest().config.model.concurrency == 8


def test_overwrite_replaces_the_run(make_config):
    config = make_config("baseline:oracle")
    asyncio.run(pipeline.run(config))
    changed = make_config("baseline:oracle", model={"temperature": 0.1}, data={"domains": ["os"]})
    asyncio.run(pipeline.run(changed, overwrite=True))
    store = RunStore(changed.run_dir)
    assert store.read_manifest().config.model.temperature == 0.1
    assert {p.domain for p in store.predictions.load().values()} == {"os"}


def test_run_json_records_the_environment_and_no_secret(make_config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-written")
    asyncio.run(pipeline.run(make_config("baseline:oracle")))
    run_dir = make_config().run_dir
    manifest = (run_dir / "run.json").read_text()
    for field in (
        '"awbench_version"',
        '"python"',
        '"data_fingerprint"',
        '"started_at"',
        '"finished_at"',
        '"primary_judge": "rules-v',
    ):
        assert field in manifest
    assert '"rules_version"' in (run_dir / "judges" / RuleJudge.id / "judge.json").read_text()
    for path in run_dir.rglob("*"):
        assert path.is_dir() or "sk-test-never-written" not in path.read_text()


def test_changed_data_is_detected_when_judging_later(make_config, sample_path, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    source = sample_path / "os_test.jsonl"
    (data_dir / "os_test.jsonl").write_bytes(source.read_bytes())
    config = make_config("baseline:oracle", judge=None, data={"source": str(data_dir)})
    asyncio.run(pipeline.infer(config))
    lines = (data_dir / "os_test.jsonl").read_text().split("\n")
    (data_dir / "os_test.jsonl").write_text("\n".join(lines[1:]))
    with pytest.raises(pipeline.PipelineError, match="is not what run run was made with"):
        pipeline.run_samples(RunStore(config.run_dir))


def test_a_run_that_fails_before_its_first_record_leaves_nothing(make_config):
    config = make_config("world-model", judge=None, model={"base_urls": ["http://127.0.0.1:9/v1"]})
    with pytest.raises(EndpointDown, match=r"127.0.0.1:9/v1 cannot be reached"):
        asyncio.run(pipeline.infer(config))
    assert not config.run_dir.exists()


def test_seeds_are_per_sample_and_generation_and_stable():
    assert sample_seed(None, "a") is None
    assert sample_seed(1, "a") == sample_seed(1, "a")
    assert len({sample_seed(1, k) for k in ("a", "b", "c")}) == 3
    assert sample_seed(1, "a") != sample_seed(2, "a")
    assert len({sample_seed(1, "a", g) for g in range(4)}) == 4
    # the first generation keeps the seed runs made before generations existed had
    assert sample_seed(7, "a") == int.from_bytes(hashlib.sha256(b"7:a").digest()[:4], "big")


def test_a_resumed_run_reads_fresh_scores_and_recomputes_stale_ones(make_config):
    config = make_config("baseline:oracle")
    asyncio.run(pipeline.run(config))
    store = RunStore(config.run_dir)
    (evaluation,) = store.evaluations()
    doctored = evaluation.scores_path.read_text().replace('"overall": 100.0', '"overall": 99.0', 1)
    evaluation.scores_path.write_text(doctored)  # written after every record: taken as it is
    assert asyncio.run(pipeline.run(config)).scores.overall == 99.0
    with evaluation.judgments.appender() as append:  # a record newer than the scores: they are computed again
        append(next(iter(evaluation.judgments.load().values())))
    assert asyncio.run(pipeline.run(config)).scores.overall == 100.0


def test_the_readme_python_api_example_runs_as_written(tmp_path):
    """The README's "Python API" block, run as a user would in a fresh directory; the old import path too."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["100.0", "100.0"]
    assert (tmp_path / "results" / "oracle" / "scores.json").is_file()
    import awbench

    assert awbench.pipeline is pipeline  # `from awbench import pipeline` is the run's API

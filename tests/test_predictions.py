import pytest

from awbench.records import BenchmarkRecord, Generation, Sample
from awbench.world_model.predictions import prediction_record


@pytest.fixture
def sample():
    record = BenchmarkRecord(task="os", id=1, prompt=["a"], response=["b"], current_prompt="a", system_str="", turn_idx=1,
                             total_turns=1)
    return Sample(key="os/1/1", record=record, origin="f:1")


@pytest.mark.parametrize(
    ("generation", "status", "prediction"),
    [
        (dict(text="<think>x</think><predicted_observation>ls</predicted_observation>"), "ok", "ls"),
        (dict(text="<think>only thinking</think>"), "empty", ""),
        (dict(text=None), "empty", ""),
        (dict(text="<think>long...", finish_reason="length"), "truncated", ""),
        (dict(error="HTTP 500: boom"), "error", ""),
        (dict(overlength=True), "overlength", ""),
        (dict(overlength=True, error="HTTP 400: maximum context length is 8192 tokens"), "overlength", ""),
    ],
)
def test_status_of_each_outcome(sample, generation, status, prediction):
    record = prediction_record(sample, Generation(key=sample.key, **generation))
    assert (record.status, record.prediction) == (status, prediction)
    assert record.failed == (status != "ok")
    assert record.raw == generation.get("text")


def test_reasoning_and_usage_are_kept(sample):
    record = prediction_record(sample, Generation(key=sample.key, text="out", reasoning="why", latency_s=0.5))
    assert (record.prediction, record.reasoning, record.latency_s, record.sample_hash) == ("out", "why", 0.5, sample.hash)

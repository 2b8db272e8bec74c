import json

import pytest

from awbench.files import JsonlTable
from awbench.records import BenchmarkRecord, Generation, PredictionRecord, Sample
from awbench.world_model.predictions import prediction_record


@pytest.fixture
def sample():
    record = BenchmarkRecord(
        task="os", id=1, prompt=["a"], response=["b"], current_prompt="a", system_str="", turn_idx=1, total_turns=1
    )
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


@pytest.mark.parametrize(
    ("generation", "status", "content"),
    [
        # The content filter stopped an answer that has text: a failed generation to awbench, but the text is
        # what the reference's inference stage keeps as `gen`, and its judge stage judges.
        (
            dict(text="<predicted_observation>ls</predicted_observation>", finish_reason="content_filter",
                 error="the endpoint's content filter refused to answer"),
            "error",
            "<predicted_observation>ls</predicted_observation>",
        ),
        (dict(text="<think>long...", finish_reason="length"), "truncated", "<think>long..."),
        (dict(error="HTTP 500: boom"), "error", ""),  # no answer came
        (dict(overlength=True, error="HTTP 400: maximum context length is 8192 tokens"), "overlength", ""),
    ],
)  # fmt: skip
def test_content_is_the_answers_text_whatever_its_status(sample, tmp_path, generation, status, content):
    _, back = stored(prediction_record(sample, Generation(key=sample.key, **generation)), tmp_path)
    assert (back.status, back.prediction, back.content) == (status, "", content)


def test_reasoning_and_usage_are_kept(sample):
    record = prediction_record(sample, Generation(key=sample.key, text="out", reasoning="why", latency_s=0.5))
    assert (record.prediction, record.reasoning, record.latency_s, record.sample_hash) == (
        "out",
        "why",
        0.5,
        sample.hash,
    )


# --- predictions.jsonl: the raw text only where it differs from the prediction ------------------------------


def stored(record: PredictionRecord, tmp_path) -> tuple[dict, PredictionRecord]:
    """The line `record` makes in a run's predictions.jsonl, and the record read back from it."""
    table = JsonlTable(tmp_path / "predictions.jsonl", PredictionRecord, key=lambda r: (r.key, r.generation))
    with table.appender() as append:
        append(record)
    (line,) = table.path.read_text(encoding="utf-8").splitlines()
    return json.loads(line), table.load()[(record.key, record.generation)]


def test_an_answer_that_is_its_own_prediction_is_stored_once(sample, tmp_path):
    long_answer = "total 0\ndrwxr-xr-x  2 root root 4096 build\n" * 100_000  # 4.3 MB, as a 50 MB one would be
    record = prediction_record(sample, Generation(key=sample.key, text=long_answer.strip()))
    line, back = stored(record, tmp_path)
    assert "raw" not in line and line["prediction"] == long_answer.strip()
    assert (tmp_path / "predictions.jsonl").stat().st_size < len(long_answer) * 1.1  # once, with its escapes
    assert back == record and back.raw == back.prediction == long_answer.strip()


@pytest.mark.parametrize(
    ("text", "prediction"),
    [
        ("<think>x</think><predicted_observation>ls</predicted_observation>", "ls"),
        ("  ls\n", "ls"),  # surrounding whitespace is stripped from the prediction: the raw text differs
        ("<think>only thinking</think>", ""),
    ],
)
def test_an_answer_that_differs_from_its_prediction_keeps_its_raw_text(sample, tmp_path, text, prediction):
    line, back = stored(prediction_record(sample, Generation(key=sample.key, text=text)), tmp_path)
    assert (line["raw"], line["prediction"]) == (text, prediction)
    assert (back.raw, back.prediction) == (text, prediction)


@pytest.mark.parametrize("generation", [dict(text=None), dict(error="HTTP 500: boom"), dict(overlength=True)])
def test_a_generation_without_text_keeps_raw_null(sample, tmp_path, generation):
    line, back = stored(prediction_record(sample, Generation(key=sample.key, **generation)), tmp_path)
    assert (line["raw"], line["prediction"]) == (None, "")
    assert (back.raw, back.prediction) == (None, "")


def test_an_empty_answer_reads_back_empty_not_null(sample, tmp_path):
    line, back = stored(prediction_record(sample, Generation(key=sample.key, text="")), tmp_path)
    assert "raw" not in line and (back.raw, back.prediction, back.status) == ("", "", "empty")


def test_lines_written_before_with_both_texts_still_load(tmp_path):
    """predictions.jsonl as earlier versions wrote it: `raw` always given, equal to the prediction or not."""
    common = {"schema_version": 1, "domain": "os", "sample_hash": "h", "status": "ok", "generation": 0}
    rows = [
        {**common, "key": "os/1/1", "prediction": "ls", "raw": "ls"},
        {**common, "key": "os/2/1", "prediction": "ls", "raw": "<predicted_observation>ls"},
        {**common, "key": "os/3/1", "status": "error", "prediction": "", "raw": None},
    ]
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    loaded = JsonlTable(path, PredictionRecord, key=lambda r: r.key).load()
    assert [(r.raw, r.prediction) for r in loaded.values()] == [
        ("ls", "ls"),
        ("<predicted_observation>ls", "ls"),
        (None, ""),
    ]


@pytest.mark.parametrize(
    ("generation", "error"),
    [
        (dict(text="", usage={"completion_tokens": 2}), "the model's answer is empty (2 completion tokens)"),
        (dict(text=None), "the model's answer is empty"),
        (
            dict(text=None, reasoning="thinking it over", usage={"completion_tokens": 40}),
            "the model's answer is thinking only, no prediction (40 completion tokens)",
        ),
        (
            dict(text="<think>only thinking</think>"),
            "the model's answer has no prediction (nothing left after removing the thinking)",
        ),
    ],
)
def test_an_empty_prediction_says_what_the_answer_held(sample, generation, error):
    """Issue 36: an answer of 2 tokens and no thinking was "nothing left after removing the thinking"."""
    record = prediction_record(sample, Generation(key=sample.key, **generation))
    assert (record.status, record.error) == ("empty", error)

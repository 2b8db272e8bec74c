"""Advice that fits what was given and what the cause was (issue 36): the end-of-run summary's "what to change"
for a failure every sample got alike names no option already given, no server's log where there is no server,
the cause where it is known, and promises no rerun of an imported run. Exact words, from the summary's own
function (`failures.describe`) on the groups a run's records make, and from real runs on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import cli

from awbench.config import JudgeSettings, ModelSettings, RunConfig
from awbench.judging.llm.direct import verdict_schema
from awbench.run.failures import FailureGroup, Setup, describe

TRUNCATED = "cut off by the token limit (--max-tokens) before the answer ended"


def group(stage: str, status: str, example: str, transient: bool = False) -> FailureGroup:
    """Three failures alike: likely to recur."""
    return FailureGroup(
        stage=stage, status=status, reason=example, count=3, example_key="os/2/1", example=example,
        transient=transient, same_error=True,
    )  # fmt: skip


def advice(failure: FailureGroup, setup: Setup | None = None) -> str:
    (line,) = describe([failure], setup or Setup())
    return line.split("so it is likely to recur: ", 1)[1] if "likely to recur" in line else line


def test_a_stop_given_is_not_suggested_again() -> None:
    truncated = group("generation", "truncated", TRUNCATED)
    assert advice(truncated) == (
        "a base model runs on to the token limit: give --stop (e.g. --stop '### Turn') or a larger --max-tokens, "
        "then run again with --retry-failed"
    )
    assert advice(truncated, Setup(stop=("### Turn",))) == (
        "the answers ran to the token limit (--stop '### Turn' given): give a larger --max-tokens, then run again "
        "with --retry-failed"
    )


@pytest.mark.parametrize(
    ("backend", "where"),
    [
        ("openai", "the server's log"),
        ("python", "the world model's code: the example is what it raised"),
        ("vllm", "vLLM's output above"),
    ],
)
def test_an_unknown_cause_is_looked_for_where_the_model_runs(backend: str, where: str) -> None:
    failure = group("generation", "error", "predict returned int, not str")
    assert advice(failure, Setup(backend=backend)) == f"find out why in {where}, then run again with --retry-failed"


def test_a_known_cause_of_a_judges_failure_is_named() -> None:
    cut = group("judge", "unscored", "no complete verdict: the judge's answer was cut off by its token limit")
    assert advice(cut) == "give a larger --judge-max-tokens, or --judge-stop, then run again with --retry-failed"
    overflow = group(
        "judge",
        "unscored",
        "no complete verdict: HTTP 400: This model's maximum context length is 8192 tokens. However, you requested "
        "9000 tokens",
    )
    assert advice(overflow) == (
        "the judge's prompt is longer than its context window: serve the judge with a longer one (llama.cpp -c, "
        "vLLM --max-model-len), or use a judge model with a longer one, then run again with --retry-failed"
    )


def test_a_weak_judges_hints_lead_to_json_object_with_the_schema_not_round_in_a_loop() -> None:
    """Issue 36: "try --judge-structured", then the server refuses json_schema, then "try --no-judge-structured"."""
    unparsed = group("judge", "unscored", "no complete verdict: no JSON object found")
    assert advice(unparsed) == (
        "use a judge model that answers in the verdict's format, or ask for its JSON schema: --judge-structured, or "
        "json_object with the verdict's schema in --judge-extra-body, as a llama.cpp server takes it "
        "(docs/backends.md), then run again with --retry-failed"
    )
    refused = group(
        "judge", "unscored", "no complete verdict: HTTP 500: 'msg': \"Input should be 'text' or 'json_object'\", "
        "'input': 'json_schema'",
    )  # fmt: skip
    assert advice(refused, Setup(judge_structured=True)) == (
        "the server takes no json_schema response format: leave out --judge-structured, and give it json_object with "
        "the verdict's schema in --judge-extra-body, as a llama.cpp server takes it (docs/backends.md), then run "
        "again with --retry-failed"
    )
    assert "--judge-structured" not in advice(unparsed, Setup(judge_structured=True))


def test_an_imported_runs_failures_promise_no_rerun() -> None:
    """Issue 36: `score` on an imported inspect run suggested --retry-failed."""
    imported = Setup(backend="imported")
    assert describe([group("generation", "error", "predict returned int, not str")], imported) == [
        "3 error predictions: predict returned int, not str (e.g. os/2/1)"
    ]
    assert describe([group("generation", "error", "HTTP 503: busy", transient=True)], imported) == [
        "3 error predictions: HTTP 503: busy (e.g. os/2/1)"
    ]


def test_the_setup_is_read_from_the_runs_settings() -> None:
    config = RunConfig(
        run_name="r",
        model=ModelSettings(model="m", backend="openai", stop=["### Turn"]),
        judge=JudgeSettings(structured=True, backend="openai"),
    )
    assert Setup.of(config) == Setup(backend="openai", stop=("### Turn",), judge_structured=True)


def test_the_documented_json_object_judge_gets_complete_verdicts(tmp_path: Path, monkeypatch) -> None:
    """docs/backends.md's llama.cpp judge: the verdict's schema as json_object in --judge-extra-body, sent as given;
    the server's JSON answers are complete verdicts."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-advice")
    docs = (Path(__file__).resolve().parents[2] / "docs" / "backends.md").read_text()
    assert "from awbench.judging.llm.direct import verdict_schema" in docs
    extra = json.dumps({"response_format": {"type": "json_object", "schema": verdict_schema()}})
    answer = json.dumps({"strengths": ["s"], "weaknesses": ["w"], "scores": dict.fromkeys(
        ("format", "factuality", "consistency", "realism", "quality"), 4)})  # fmt: skip
    with FakeOpenAIServer(responder=lambda body: Reply(answer)) as server:
        result = cli(
            "run", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--judge-model", "small",
            "--judge-base-url", server.url, "--judge-extra-body", extra, "--output", tmp_path,
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert all(
        body["response_format"] == {"type": "json_object", "schema": verdict_schema()} for body in server.requests
    )
    scores = json.loads((tmp_path / "baseline-oracle__small" / "scores.json").read_text())
    assert scores["domains"]["os"]["score"] == 75.0 and scores["completeness"]["judged"] == len(server.requests)

"""A failure that every attempt of a request got alike (issue 26, point 6): the retry policy knows it, the record
keeps how many attempts failed so (`same_error_attempts`), and the end-of-run summary says it is likely to recur,
even for one sample, instead of promising that a rerun helps. Errors are alike when their messages are, numbers
aside (the summary's grouping key).

The runs talk to a real HTTP server on 127.0.0.1 (tests/fake_openai.py), through the CLI in-process; the 503s
carry `Retry-After: 0.01`, so the retries wait that instead of a backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reliability_helpers import CANDIDATE_MODEL, JUDGE_MODEL, cli, jsonl_lines, judgments_path

from awbench.transport.chat_client import ConnectionFailed, StatusError
from awbench.transport.retry_policy import Attempts

SECRET = "sk-test-recurring-errors-5521-SECRET"
ONE_SAMPLE = ["--data", "sample", "--domains", "os", "--limit", "1", "--run-name", "r"]


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


def busy(messages: list[str]) -> Iterator[Reply]:
    for message in messages:
        yield Reply(status=503, headers={"Retry-After": "0.01"}, error_message=message)


def summary_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("  ")]


def run_candidate(messages: list[str], output: Path) -> tuple[list[str], dict, int]:
    """One sample, 1 + 2 attempts, each answered by the next message's 503: (summary, record, requests)."""
    replies = busy(messages)
    with FakeOpenAIServer(responder=lambda body: next(replies)) as server:
        result = cli(
            "run", "--model", CANDIDATE_MODEL, "--base-url", server.url, "--judge", "rules", "--max-retries", "2",
            *ONE_SAMPLE, "--output", str(output),
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    (record,) = jsonl_lines(output / "r" / "predictions.jsonl")
    return summary_lines(result.stderr), record, len(server.requests)


@pytest.mark.parametrize(
    "messages",
    [["model is loading"] * 3, ["worker 1 is busy", "worker 2 is busy", "worker 12 is busy"]],
    ids=["one body", "numbers aside"],
)
def test_one_sample_whose_every_attempt_got_one_error_is_likely_to_recur(messages: list[str], tmp_path: Path) -> None:
    summary, record, requests = run_candidate(messages, tmp_path)
    assert requests == 3
    assert (record["status"], record["transient"], record["same_error_attempts"]) == ("error", True, 3)
    assert summary == [
        f"  1 error predictions: HTTP 503 (e.g. os/2/1: HTTP 503: {messages[-1]}); all 3 attempts got the same "
        "error, so it is likely to recur: find out why in the server's log, before running the same command again"
    ]


def test_one_sample_whose_attempts_got_different_errors_keeps_the_promise_of_a_retry(tmp_path: Path) -> None:
    summary, record, requests = run_candidate(["model is loading", "queue full", "model is loading"], tmp_path)
    assert requests == 3
    assert (record["status"], record["transient"], record["same_error_attempts"]) == ("error", True, None)
    assert summary == [
        "  1 error predictions: HTTP 503 (e.g. os/2/1: HTTP 503: model is loading); retried when you run the same "
        "command again"
    ]


def test_the_judges_verdict_keeps_its_attempts_alike_and_the_summary_says_it_recurs(tmp_path: Path) -> None:
    replies = busy(["judge model is loading"] * 3)
    with FakeOpenAIServer(responder=lambda body: next(replies)) as server:
        result = cli(
            "run", "--model", "baseline:oracle", "--judge-model", JUDGE_MODEL, "--judge-base-url", server.url,
            "--judge-max-retries", "2", *ONE_SAMPLE, "--output", str(tmp_path),
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert len(server.requests) == 3
    (record,) = jsonl_lines(judgments_path(tmp_path / "r"))
    (verdict,) = record["verdicts"]
    assert (record["transient"], verdict["attempts"], verdict["same_error_attempts"]) == (True, 3, 3)
    assert summary_lines(result.stderr) == [
        "  1 unscored by the judge: no complete verdict: HTTP 503: judge model is loading (e.g. os/2/1); all 3 "
        "attempts got the same error, so it is likely to recur: find out why in the server's log, before running "
        "the same command again"
    ]


# --- The policy on its own ----------------------------------------------------------------------------------------


def same_error_after(outcomes: list[object], budget: int = 3, first: int = 1) -> int | None:
    pending = iter(outcomes)

    async def call(attempt: int) -> str:
        outcome = next(pending)
        if isinstance(outcome, BaseException):
            raise outcome
        assert isinstance(outcome, str)
        return outcome

    attempts = Attempts(budget, first)
    try:
        asyncio.run(attempts.run(call, again=lambda answer: answer == "unusable"))
    except (StatusError, ConnectionFailed):
        pass
    return attempts.same_error


def test_the_policy_counts_attempts_only_when_every_call_failed_alike() -> None:
    assert same_error_after([StatusError(503, "busy 1"), StatusError(503, "busy 2"), StatusError(503, "busy 3")]) == 3
    assert same_error_after([StatusError(400, "bad request")]) == 1  # not retried: one attempt, one error
    assert same_error_after([StatusError(503, "busy"), StatusError(502, "busy"), StatusError(503, "busy")]) is None
    assert same_error_after([StatusError(503, "busy"), ConnectionFailed("refused"), StatusError(503, "busy")]) is None
    assert same_error_after([StatusError(503, "busy"), "unusable", StatusError(503, "busy")]) is None  # one answered
    assert same_error_after([StatusError(503, "busy"), "ok"]) is None
    assert same_error_after([StatusError(503, "busy")] * 2, first=2) is None  # attempt 1 was made elsewhere

"""What a real server's refusals look like at the end of a run (issue 26, "against a real server"): a 5xx that
says the request itself is invalid is permanent (one call, stored as permanent); a failure that every sample got
alike is summarised as likely to recur, with what to change; the server's message is printed on one line, cut
at a whole word, keys masked, its numbers as the server wrote them; a base URL without a model listing fails
the check before anything is sent, suggesting the `/v1` it lacks; `awbench ls RUN` lists a run's samples.

Every run here talks to a real HTTP server on 127.0.0.1 (tests/fake_openai.py), through the CLI in-process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from reliability_helpers import CANDIDATE_MODEL, JUDGE_MODEL, cli, jsonl_lines, judgments_path

from awbench.safe_text import one_line
from awbench.transport.chat_client import StatusError
from awbench.transport.endpoints import is_invalid_request, is_retryable

SECRET = "sk-test-server-messages-4417-SECRET"
N = 3
COMMON = ["--data", "sample", "--domains", "os", "--limit", str(N), "--run-name", "r"]
KEYS = ["os/2/1", "os/2/2", "os/2/3"]


def llama_cpp_500(message: str) -> Reply:
    """A 500 as llama.cpp's server sends it: the error's code a number, its type `server_error`."""
    body = {"error": {"code": 500, "message": message, "type": "server_error"}}
    return Reply(status=500, raw_body=json.dumps(body).encode())


def candidate_args(url: str, output: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        url,
        "--judge",
        "rules",
        "--max-retries",
        "3",
        "--concurrency",
        "1",  # records in data order: the example each summary line names is the first sample
        *COMMON,
        "--output",
        str(output),
        *extra,
    ]


def judge_args(url: str, output: Path, *extra: str) -> list[str]:
    return [
        "run",
        "--model",
        "baseline:oracle",
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        url,
        "--judge-max-retries",
        "3",
        "--judge-concurrency",
        "1",
        *COMMON,
        "--output",
        str(output),
        *extra,
    ]


def summary_lines(stderr: str) -> list[str]:
    """The reasons of the end-of-run summary (the lines it indents)."""
    return [line for line in stderr.splitlines() if line.startswith("  ")]


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "200")


# --- A 5xx that says the request is invalid --------------------------------------------------------------------

CHAT_TEMPLATE = (
    "serve the model with a chat template that takes a system message and alternating roles, "
    "then run again with --retry-failed"
)


@pytest.mark.parametrize(
    "message, remedy",
    [
        ("System role not supported", CHAT_TEMPLATE),
        ("Conversation roles must alternate user/assistant/user/assistant/...", CHAT_TEMPLATE),
        (
            "response_format type json_schema is not supported by this server",
            "take response_format out of --extra-body, then run again with --retry-failed",
        ),
    ],
)
def test_a_500_refusing_the_request_is_permanent_and_its_summary_says_what_to_change(
    message: str, remedy: str, tmp_path: Path
) -> None:
    with FakeOpenAIServer(responder=lambda body: llama_cpp_500(message)) as server:
        result = cli(*candidate_args(server.url, tmp_path))
    assert result.exit_code == 1, result.output
    assert len(server.requests) == N  # one call per sample: not retried within --max-retries 3
    records = jsonl_lines(tmp_path / "r" / "predictions.jsonl")
    assert [(r["key"], r["status"], r["error"], r["transient"]) for r in records] == [
        (key, "error", f"HTTP 500: {message}", False) for key in KEYS
    ]
    assert summary_lines(result.stderr) == [
        f"  3 error predictions: HTTP 500 (e.g. os/2/1: HTTP 500: {message}); all 3 got the same error, so it is "
        f"likely to recur: {remedy}"
    ]
    # permanent: the same command leaves them as they are, without a call
    with FakeOpenAIServer(port=server.port, responder=lambda body: llama_cpp_500(message)) as again:
        rerun = cli(*candidate_args(again.url, tmp_path))
    assert rerun.exit_code == 1 and again.requests == []


def test_the_judge_refused_a_json_schema_names_the_option_that_turns_it_off(tmp_path: Path) -> None:
    """llama.cpp refuses a `response_format` it cannot take with a pydantic validation error, newlines and all; the
    advice leads to what it takes (issue 36: it pointed back to --no-judge-structured, then to --judge-structured)."""
    refusal = (
        "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
        "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
    )
    with FakeOpenAIServer(responder=lambda body: llama_cpp_500(refusal)) as server:
        result = cli(*judge_args(server.url, tmp_path, "--judge-structured"))
    assert result.exit_code == 1, result.output
    assert len(server.requests) == N
    assert all("response_format" in body for body in server.requests)
    records = jsonl_lines(judgments_path(tmp_path / "r"))
    assert [(r["status"], r["transient"], r["verdicts"][0]["attempts"]) for r in records] == [("failed", False, 1)] * N
    assert summary_lines(result.stderr) == [
        "  3 unscored by the judge: no complete verdict: HTTP 500: 1 validation error: {'type': 'literal_error', "
        "'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': "
        "'json_schema'} (e.g. os/2/1); all 3 got the same error, so it is likely to recur: the server takes no "
        "json_schema response format: leave out --judge-structured, and give it json_object with the verdict's schema "
        "in --judge-extra-body, as a llama.cpp server takes it (docs/backends.md), then run again with --retry-failed"
    ]


@pytest.mark.parametrize(
    "message",
    [
        "internal error",
        "CUDA out of memory. Tried to allocate 2.00 GiB",
        "upstream connect error or disconnect/reset before headers",
        "Loading model",
        "the server is busy: the request is not supported right now",  # "not supported", but no response_format
    ],
)
def test_other_5xx_stay_transient(message: str) -> None:
    error = StatusError(500, message)
    assert (is_invalid_request(error), is_retryable(error)) == (False, True)


def test_the_phrases_make_a_5xx_permanent_but_leave_429_and_4xx_as_they_were() -> None:
    for status in (500, 502, 503):
        assert not is_retryable(StatusError(status, "2 validation errors for ChatCompletionRequest"))
    assert is_retryable(StatusError(429, "1 validation error"))  # a rate limit whatever it says
    assert not is_invalid_request(StatusError(400, "System role not supported"))  # a 400 is permanent anyway


# --- The summary keeps the server's words readable -------------------------------------------------------------


def test_the_summary_prints_the_servers_message_on_one_line_cut_at_a_word_with_keys_masked(tmp_path: Path) -> None:
    """A validation error as llama-cpp-python words it: several lines, numbers, and here a key it echoes."""
    message = (
        f"1 validation error for ChatCompletionRequest (key {SECRET})\nmessages.0.role\n"
        "  Input should be 'user' or 'assistant' [type=literal_error, input_value='system', input_type=str]\n"
        "    For further information visit https://errors.pydantic.dev/2.9/v/literal_error"
    )
    with FakeOpenAIServer(responder=lambda body: Reply(status=500, error_message=message)) as server:
        result = cli(*candidate_args(server.url, tmp_path))
    assert len(server.requests) == N
    assert SECRET not in result.output and SECRET not in (tmp_path / "r" / "predictions.jsonl").read_text()
    assert summary_lines(result.stderr) == [
        "  3 error predictions: HTTP 500 (e.g. os/2/1: HTTP 500: 1 validation error for ChatCompletionRequest "
        "(key ***) messages.0.role Input should be 'user' or 'assistant' [type=literal_error, "
        "input_value='system', input_type=str] For further…); all 3 got the same error, so it is "
        "likely to recur: change what the requests carry (--extra-body, --stop, the sampling options), then run "
        "again with --retry-failed"
    ]


def test_different_transient_errors_keep_the_promise_of_a_retry(tmp_path: Path) -> None:
    """Failures of one status but different messages are not one recurring error: a rerun retries them."""
    answers = iter(["worker 1 crashed", "worker 2 crashed", "queue full"] * 4)
    with FakeOpenAIServer(responder=lambda body: Reply(status=500, error_message=next(answers))) as server:
        result = cli(*candidate_args(server.url, tmp_path, "--max-retries", "0"))
    assert len(server.requests) == N
    assert summary_lines(result.stderr) == [
        "  3 error predictions: HTTP 500 (e.g. os/2/1: HTTP 500: worker 1 crashed); retried when you run the same "
        "command again"
    ]


def test_a_base_model_that_runs_to_the_token_limit_is_told_about_stop(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=lambda body: Reply("### Turn 2\n" * 50, finish_reason="length")) as server:
        result = cli(*candidate_args(server.url, tmp_path))
    assert len(server.requests) == N
    assert summary_lines(result.stderr) == [
        "  3 truncated predictions: cut off by the token limit (--max-tokens) before the answer ended (e.g. os/2/1); "
        "all 3 got the same error, so it is likely to recur: a base model runs on to the token limit: give --stop "
        "(e.g. --stop '### Turn') or a larger --max-tokens, then run again with --retry-failed"
    ]


# --- The check before the first request needs a model listing --------------------------------------------------


@pytest.mark.parametrize("party", ["candidate", "judge"])
def test_a_base_url_without_v1_fails_the_check_and_is_told_to_add_it(party: str, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        root = server.url.removesuffix("/v1")
        args = candidate_args(root, tmp_path) if party == "candidate" else judge_args(root, tmp_path)
        result = cli(*args)
    option = "--base-url" if party == "candidate" else "--judge-base-url"
    assert refusal(result) == (2, "no_model_listing") and f": try {option} {root}/v1;" in result.stderr
    assert server.requests == [] and not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "listing, detail",
    [
        (Reply(status=404, error_message="Not Found"), "HTTP 404: Not Found"),
        (
            Reply(raw_body=b"<!doctype html><title>chat</title>", content_type="text/html"),
            "MalformedResponse: the response is not JSON: '<!doctype html><title>chat</title>'",
        ),
        (
            Reply(raw_body=b'{"detail": "Not Found"}'),
            "MalformedResponse: the answer is not a model listing: \"{'detail': 'Not Found'}\"",
        ),
    ],
    ids=["404", "a web page", "JSON that is not a listing"],
)
def test_a_listing_that_cannot_be_read_fails_the_check(listing: Reply, detail: str, tmp_path: Path) -> None:
    """The URL ends with /v1 already: no suggestion, the server's answer."""
    with FakeOpenAIServer(models=listing) as server:
        result = cli(*candidate_args(server.url, tmp_path))
    assert refusal(result) == (2, "no_model_listing") and result.stderr.endswith(f"({detail}); nothing was sent\n")
    assert server.requests == []


# --- `awbench ls RUN` -------------------------------------------------------------------------------------------


def test_ls_of_a_run_lists_its_sample_keys_with_their_status(tmp_path: Path) -> None:
    """Predicted by `infer` (the baseline's first turn is an empty prediction: failed), then scored by `judge`."""
    output = str(tmp_path / "results")
    inferred = cli("infer", "--model", "baseline:last-observation", *COMMON, "--output", output)
    assert inferred.exit_code == 0, inferred.output
    listed = cli("ls", "r", "--output", output)  # in a pipe: tab-separated, as `ls` of runs (issue 36)
    assert (listed.exit_code, listed.stdout, listed.stderr) == (
        0,
        "os/2/1\tfailed\nos/2/2\tpredicted\nos/2/3\tpredicted\n",
        "r: 3 samples (1 failed, 2 predicted)\n",
    )
    aligned = cli("ls", "r", "--output", output, env={"TTY_COMPATIBLE": "1"})  # in a terminal: aligned
    assert aligned.stdout == "os/2/1  failed\nos/2/2  predicted\nos/2/3  predicted\n"
    judged = cli("judge", "r", "--judge", "rules", "--output", output)
    assert judged.exit_code == 1, judged.output
    listed = cli("ls", str(tmp_path / "results" / "r"), "--format", "json")
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.stdout) == {
        "schema_version": 1,
        "run": "r",
        "judge": json.loads(listed.stdout)["judge"],
        "samples": [
            {"key": "os/2/1", "status": "failed"},
            {"key": "os/2/2", "status": "scored"},
            {"key": "os/2/3", "status": "scored"},
        ],
    }
    assert json.loads(listed.stdout)["judge"].startswith("rules-")
    assert listed.stderr == "r: 3 samples (2 scored, 1 failed)\n"


def test_one_line_collapses_whitespace_and_cuts_at_a_word() -> None:
    assert one_line("a\n  b\tc\r\n", 10) == "a b c"
    assert one_line("validation error: input", 23) == "validation error: input"  # fits exactly: whole
    assert one_line("validation error: input", 22) == "validation error:…"
    assert one_line("x" * 30, 10) == "x" * 9 + "…"  # one word longer than the limit: cut inside it

"""Failures that heal: every fault kind an endpoint can show, for the candidate and for the judge.

For each (fault, role): the first `awbench run` against the faulty endpoint, then the same command against
a healthy one on the same URL. Asserted: each record's status, `transient` and error text; the exit code;
the number of calls (at most 1 + --max-retries per generation, 1 + --judge-max-retries per verdict); and
what the rerun does: transient failures are asked again, exactly those samples; permanent ones are kept
(no call) unless --retry-failed; an error that would fail every sample alike (401, 404) stops the run at
once with the server's message and leaves nothing of that role behind.

The commands run in this process (typer's CliRunner) against real HTTP servers on 127.0.0.1.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from reliability_helpers import (
    CANDIDATE_MODEL,
    CHOICE_KEY_ENV,
    JUDGE_MODEL,
    REPO,
    awbench_command,
    candidate_text,
    choice_judge_args,
    clean_env,
    cli,
    deterministic,
    digest,
    free_port,
    jsonl_lines,
    judgments_path,
    no_traceback,
    verdict_text,
)

from awbench.data.dataset import read_source
from awbench.judging.llm.prompts import load_prompt_set, render_messages
from awbench.records import JudgeRequest
from awbench.run.stages import sample_seed
from awbench.transport import endpoints
from awbench.transport.endpoints import check_patience

N = 3  # samples: --domains os --limit 3
SAMPLES = [s for s in read_source("sample")[0] if s.domain == "os"][:N]
KEYS = {s.key for s in SAMPLES}
BUDGET = 2  # 1 + --max-retries 1, 1 + --judge-max-retries 1
TIMEOUT_S = 1.0
RETRY_AFTER_S = 0.4
COMMON = ["--data", "sample", "--domains", "os", "--limit", str(N), "--run-name", "r"]


def args_for(role: str, url: str, output: Path, *extra: str) -> list[str]:
    if role == "candidate":
        return [
            "run",
            "--model",
            CANDIDATE_MODEL,
            "--base-url",
            url,
            "--judge",
            "rules",
            "--max-retries",
            str(BUDGET - 1),
            "--request-timeout",
            str(TIMEOUT_S),
            "--concurrency",
            str(N),
            *COMMON,
            "--output",
            str(output),
            *extra,
        ]
    return [
        "run",
        "--model",
        "baseline:oracle",
        "--judge-model",
        JUDGE_MODEL,
        "--judge-base-url",
        url,
        "--judge-max-retries",
        str(BUDGET - 1),
        "--judge-request-timeout",
        str(TIMEOUT_S),
        "--judge-concurrency",
        str(N),
        *COMMON,
        "--output",
        str(output),
        *extra,
    ]


def completion_body(message: dict | None = None, **fields: object) -> bytes:
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    return json.dumps(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [choice], **fields}
    ).encode()


OVERFLOW = "This model's maximum context length is 4096 tokens. However, your prompt contains 9000 input tokens."
REFUSAL = "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."


def surrogate_answer(body: dict) -> Reply:
    """A JSON `\\ud800` escape inside the answer: a lone surrogate, which UTF-8 cannot encode."""
    if body["model"] == JUDGE_MODEL:
        return Reply(
            verdict_text(
                {"format": 5, "factuality": 4, "consistency": 4, "realism": 3, "quality": 4}, "bad \ud800 byte"
            )
        )
    return Reply(candidate_text(body).replace("observation ", "observation \ud800 "))


def unreadable_usage(body: dict) -> Reply:
    """A good answer whose usage is not counts: the answer is used, the usage left unknown."""
    return Reply(
        deterministic(body).content, usage={"prompt_tokens": "many", "completion_tokens": -1, "total_tokens": None}
    )


@dataclass(frozen=True)
class Fault:
    name: str
    reply: Callable[[dict], Reply]
    kind: str  # transient | permanent | fatal | ok
    reason: str  # in the recorded error (or in the message, for fatal ones)
    status: str = "error"  # the candidate's record status, for failed generations
    roles: tuple[str, ...] = ("candidate", "judge")
    reasked: bool = False  # a permanent failure asked again within the budget (an unusable verdict)


def always(reply: Reply) -> Callable[[dict], Reply]:
    return lambda body: reply


FAULTS = [
    Fault("connection closed mid-request", always(Reply(close=True)), "transient", "ConnectionFailed"),
    Fault("timeout", always(Reply(delay_s=TIMEOUT_S + 1.0)), "transient", "RequestTimeout"),
    Fault(
        "429 with Retry-After",
        always(Reply(status=429, headers={"Retry-After": str(RETRY_AFTER_S)}, error_message="rate limited")),
        "transient",
        "HTTP 429",
    ),
    Fault("500", always(Reply(status=500, error_message="internal error")), "transient", "HTTP 500"),
    Fault("503", always(Reply(status=503, error_message="overloaded")), "transient", "HTTP 503"),
    Fault("malformed JSON body", always(Reply(raw_body=b'{"choices": [ not json')), "transient", "MalformedResponse"),
    Fault(
        "HTML page with status 200",
        always(Reply(raw_body=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")),
        "transient",
        "MalformedResponse",
    ),
    Fault(
        "200 without choices",
        always(Reply(raw_body=b'{"id": "x", "object": "chat.completion", "choices": []}')),
        "transient",
        "MalformedResponse",
    ),
    Fault(
        "200 whose choice has no message",
        always(Reply(raw_body=completion_body(None))),
        "transient",
        "MalformedResponse",
    ),
    Fault(
        "200 whose content is not text",
        always(Reply(raw_body=completion_body({"role": "assistant", "content": [{"type": "text"}]}))),
        "transient",
        "MalformedResponse",
    ),
    Fault(
        "200 whose choices are not a list",
        always(Reply(raw_body=b'{"id": "x", "choices": "none"}')),
        "transient",
        "MalformedResponse",
    ),
    Fault(
        "lone surrogate in an error message",
        always(Reply(status=500, error_message="upstream \ud800 failed")),
        "transient",
        "upstream \ufffd failed",
    ),
    Fault(
        "400 context overflow",
        always(Reply(status=400, error_message=OVERFLOW)),
        "permanent",
        "maximum context length",
        "overlength",
    ),
    Fault(
        "400 content-policy refusal",
        always(Reply(status=400, error_message=REFUSAL)),
        "permanent",
        "content management policy",
    ),
    Fault(
        "judge answers without a verdict",
        always(Reply("I cannot judge this.")),
        "permanent",
        "no JSON object",
        roles=("judge",),
        reasked=True,
    ),
    Fault("401", always(Reply(status=401, error_message="Incorrect API key provided")), "fatal", "HTTP 401"),
    Fault(
        "401 with a lone surrogate in its message",
        always(Reply(status=401, error_message="bad key \ud800")),
        "fatal",
        "HTTP 401",
    ),
    Fault(
        "404 model not found",
        always(Reply(status=404, error_message="The model `x` does not exist")),
        "fatal",
        "HTTP 404",
    ),
    Fault("lone surrogate in the content", surrogate_answer, "ok", "\ufffd"),
    Fault("200 with unreadable usage", unreadable_usage, "ok", ""),
]
# A timeout is waited for, attempt after attempt.
CASES = [
    pytest.param(f, role, id=f"{role}: {f.name}", marks=[pytest.mark.slow] if f.name == "timeout" else [])
    for f in FAULTS
    for role in f.roles
]


def records_of(role: str, run_dir: Path) -> dict[str, dict]:
    path = run_dir / "predictions.jsonl" if role == "candidate" else judgments_path(run_dir)
    return {r["key"]: r for r in jsonl_lines(path)}


def asked(role: str, requests: list[dict], run_dir: Path) -> list[str]:
    """The sample keys a list of requests was for."""
    if role == "candidate":
        seeds = {sample_seed(0, s.key): s.key for s in SAMPLES}
        return sorted(seeds[b["seed"]] for b in requests)
    prompts = load_prompt_set("rubric")
    predictions = {r["key"]: r["prediction"] for r in jsonl_lines(run_dir / "predictions.jsonl")}
    keys = {
        digest(render_messages(prompts, JudgeRequest(sample=s, prediction=predictions[s.key]))): s.key for s in SAMPLES
    }
    return sorted(keys[digest(b["messages"])] for b in requests)


def healthy(body: dict) -> Reply:
    return deterministic(body)


def rerun(role: str, port: int, output: Path, *extra: str):
    with FakeOpenAIServer(responder=healthy, port=port) as server:
        result = cli(*args_for(role, server.url, output, *extra))
    no_traceback(result)
    return result, server


def assert_failed(role: str, record: dict, fault: Fault, transient: bool) -> None:
    if role == "candidate":
        assert record["status"] == (fault.status if not transient else "error"), record
    else:
        assert record["status"] == "failed" and record["score"] is None, record
        assert (
            all(v["status"] != "complete" for v in record["verdicts"]) and record["verdicts"][0]["attempts"] <= BUDGET
        )
    assert record["transient"] is transient, record
    assert fault.reason in record["error"], record


@pytest.mark.parametrize("fault, role", CASES)
def test_fault(fault: Fault, role: str, tmp_path: Path) -> None:
    output = tmp_path / "results"
    run_dir = output / "r"
    with FakeOpenAIServer(responder=fault.reply) as server:
        first = cli(*args_for(role, server.url, output))
    no_traceback(first)
    calls = len(server.requests)

    if fault.kind == "fatal":
        assert first.exit_code == 2, first.output
        assert "retrying cannot help" in first.output and fault.reason in first.output
        assert 1 <= calls <= N  # the ones already in flight; nothing after the first refusal
        if role == "candidate":
            assert not run_dir.exists()  # nothing was recorded: the new run is removed again
        else:
            assert not (run_dir / "judges").exists() and len(jsonl_lines(run_dir / "predictions.jsonl")) == N
        again, healthy_server = rerun(role, server.port, output)
        assert again.exit_code == 0, again.output
        assert len(healthy_server.requests) == N
        return

    records = records_of(role, run_dir)
    assert set(records) == KEYS and len(jsonl_lines(records_path(role, run_dir))) == N

    if fault.kind == "ok":
        assert first.exit_code == 0, first.output
        assert calls == N
        for record in records.values():
            assert record["status"] == "ok", record
            if fault.reason:  # the surrogate was replaced, the record says so, and it was written
                flags = record["flags"] if role == "candidate" else record["verdicts"][0]["flags"]
                text = record["prediction"] if role == "candidate" else " ".join(record["verdicts"][0]["strengths"])
                assert "replaced_invalid_text" in flags and fault.reason in text, record
            else:
                usage = record["usage"] if role == "candidate" else record["verdicts"][0]["usage"]
                assert usage["prompt_tokens"] is None and usage["completion_tokens"] is None, record
        again, healthy_server = rerun(role, server.port, output)
        assert again.exit_code == 0 and healthy_server.requests == []
        return

    transient = fault.kind == "transient"
    for record in records.values():
        assert_failed(role, record, fault, transient)
    assert first.exit_code == 1, first.output  # nothing scored: more failures than tolerated
    if transient:  # every sample got the same error: the summary says it is likely to recur, not that a rerun helps
        assert f"all {N} got the same error, so it is likely to recur: " in first.output, first.output
        assert "before running the same command again" in first.output
    # every attempt of the budget, or just one; a rate-limit refusal is sent once more for free, then counts
    # (the endpoint answered nothing else in between: a quota, not a rate)
    per_attempt = 2 if fault.name == "429 with Retry-After" else 1
    assert calls == N * per_attempt * (BUDGET if transient or fault.reasked else 1)
    if fault.name == "429 with Retry-After":
        by_request = defaultdict(list)
        for body, at in zip(server.requests, server.received_at):
            by_request[digest(body["messages"])].append(at)
        gaps = [b - a for times in by_request.values() for a, b in itertools.pairwise(times)]
        assert len(gaps) == N * (per_attempt * BUDGET - 1) and min(gaps) >= RETRY_AFTER_S - 0.05, (
            by_request
        )  # the server's wait

    again, healthy_server = rerun(role, server.port, output)
    if transient:  # healed: exactly the failed samples asked again, once each
        assert again.exit_code == 0, again.output
        assert asked(role, healthy_server.requests, run_dir) == sorted(KEYS)
        assert all(r["status"] == "ok" for r in records_of(role, run_dir).values())
        return
    # Permanent: kept as they are, no call, unless --retry-failed.
    assert again.exit_code == 1 and healthy_server.requests == []
    assert records_of(role, run_dir) == records
    retried, retry_server = rerun(role, server.port, output, "--retry-failed")
    assert retried.exit_code == 0, retried.output
    assert asked(role, retry_server.requests, run_dir) == sorted(KEYS)
    assert all(r["status"] == "ok" for r in records_of(role, run_dir).values())


def records_path(role: str, run_dir: Path) -> Path:
    return run_dir / "predictions.jsonl" if role == "candidate" else judgments_path(run_dir)


# --- Endpoints that are down -----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_an_unreachable_endpoint_exits_2_at_once_and_leaves_no_run(role: str, tmp_path: Path) -> None:
    port = free_port()
    started = time.monotonic()
    result = cli(*args_for(role, f"http://127.0.0.1:{port}/v1", tmp_path / "results"))
    assert time.monotonic() - started < 8
    no_traceback(result)
    assert result.exit_code == 2
    assert (
        f"{role} endpoint http://127.0.0.1:{port}/v1 cannot be reached" in result.output
        and "nothing was sent" in result.output
    )
    assert list(tmp_path.iterdir()) == []  # not even the --output directory made for it


@pytest.mark.slow
@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_a_local_endpoint_that_answers_its_check_after_15_s_still_starts(role: str, tmp_path: Path) -> None:
    """Issue 36: llama.cpp answers GET /v1/models only between jobs (8-21 s while one runs); 3 of 4 `turing` starts
    against a busy server exited 2 after the fixed 10 s. A server on this machine gets 60 s."""
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=15)) as server:
        result = cli(*args_for(role, server.url, tmp_path / "results"))
    no_traceback(result)
    assert result.exit_code == 0, result.output
    assert server.model_checks == 1 and len(server.requests) == N


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_the_endpoint_checks_patience_is_an_option(role: str, tmp_path: Path) -> None:
    option = "--check-timeout"  # one option for the candidate's endpoint and the judge's
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=2)) as server:
        started = time.monotonic()
        result = cli(*args_for(role, server.url, tmp_path / "results", option, "0.5"))
        waited = time.monotonic() - started
    assert refusal(result) == (2, "endpoint_down") and waited < 2
    assert result.stderr == (
        f"error: {role} endpoint {server.url} cannot be reached (no answer to GET /models within 0.5 s; a busy "
        f"server may need a longer {option}); nothing was sent\n"
    )
    assert server.requests == [] and not (tmp_path / "results").exists()


def test_a_remote_endpoint_is_given_10_s_and_a_local_one_60() -> None:
    assert check_patience("https://api.openai.com/v1", None) == 10
    assert check_patience("http://gpu-box.example.org:8000/v1", None) == 10
    for local in ("http://127.0.0.1:8080/v1", "http://localhost:8000/v1", "http://10.1.2.3/v1", "http://[::1]:80/v1"):
        assert check_patience(local, None) == 60, local
    assert check_patience("https://api.openai.com/v1", 3.5) == 3.5


# --- The endpoint check says what it waits for (issue 36: `run ... | cat` printed nothing for 30 s) ------------


def check_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("checking the ", "still waiting for "))]


@pytest.fixture
def quick_check_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check's first line after 0.3 s (not 1 s) and the next every 1 s (not 10 s): a check that waits 2.4 s
    shows what a busy server's 15 s would."""
    monkeypatch.setattr(endpoints, "CHECK_QUIET_S", 0.3)
    monkeypatch.setattr(endpoints, "CHECK_NOTE_S", 1.0)


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_a_waiting_check_says_what_it_checks_and_then_how_long_it_has_waited(
    role: str, tmp_path: Path, quick_check_notes: None
) -> None:
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=2.4)) as server:
        result = cli(*args_for(role, server.url, tmp_path / "results"))
    assert result.exit_code == 0, result.output
    assert check_lines(result.stderr)[:3] == [
        f"checking the {role} endpoint: GET {server.url}/models (waiting up to 60 s; --check-timeout)",
        f"still waiting for {server.url}/models (1 s of 60 s; --check-timeout)",
        f"still waiting for {server.url}/models (2 s of 60 s; --check-timeout)",
    ]
    assert server.model_checks == 1 and len(server.requests) == N


def test_a_check_answered_at_once_says_nothing(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=healthy) as server:
        result = cli(*args_for("candidate", server.url, tmp_path / "results"))
    assert result.exit_code == 0, result.output
    assert check_lines(result.stderr) == [] and server.model_checks == 1


def candidate_and_judge(candidate_url: str, judge_url: str, output: Path, *extra: str) -> list[str]:
    """`run` with the candidate at one URL and the LLM judge at another (or the same)."""
    candidate = ["--model", CANDIDATE_MODEL, "--base-url", candidate_url]
    judge = ["--judge-model", JUDGE_MODEL, "--judge-base-url", judge_url]
    return ["run", *candidate, *judge, *COMMON, "--output", str(output), *extra]


def test_the_candidates_and_the_judges_checks_run_at_once(tmp_path: Path, quick_check_notes: None) -> None:
    models = Reply(delay_s=1.5)
    with (
        FakeOpenAIServer(responder=healthy, models=models) as candidate,
        FakeOpenAIServer(responder=healthy, models=models) as judge,
    ):
        started = time.monotonic()
        result = cli(*candidate_and_judge(candidate.url, judge.url, tmp_path / "results"))
    assert result.exit_code == 0, result.output
    # one after the other, the judge's would arrive 1.5 s after the candidate's
    assert abs(candidate.model_checks_at[0] - judge.model_checks_at[0]) < 0.5
    assert candidate.model_checks_at[0] - started < 1.0  # not after a check of its own
    assert candidate.model_checks == judge.model_checks == 1 and len(candidate.requests) == len(judge.requests) == N
    assert sorted(line for line in check_lines(result.stderr) if line.startswith("checking")) == [
        f"checking the candidate endpoint: GET {candidate.url}/models (waiting up to 60 s; --check-timeout)",
        f"checking the judge endpoint: GET {judge.url}/models (waiting up to 60 s; --check-timeout)",
    ]


def test_a_check_that_fails_stops_the_others_at_once(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=5)) as judge:
        started = time.monotonic()
        result = cli(*candidate_and_judge(dead, judge.url, tmp_path / "results"))
        waited = time.monotonic() - started
    assert refusal(result) == (2, "endpoint_down") and waited < 3  # not after the judge's 5 s
    assert (
        result.stderr.startswith(f"error: candidate endpoint {dead} cannot be reached (")
        and result.stderr.count("\n") == 1
    )
    assert judge.model_checks == 1 and judge.requests == [] and not (tmp_path / "results").exists()


@pytest.mark.parametrize(("key", "checks"), [("the same key", 1), ("another key", 2)])
def test_one_url_with_one_key_is_checked_once_for_candidate_and_judge(
    key: str, checks: int, tmp_path: Path, quick_check_notes: None
) -> None:
    other_key = ["--judge-api-key-env", CHOICE_KEY_ENV] if key == "another key" else []
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=1.0)) as server:
        result = cli(*candidate_and_judge(server.url, server.url, tmp_path / "results", *other_key))
    assert result.exit_code == 0, result.output
    assert server.model_checks == checks and len(server.requests) == 2 * N
    parties = ["candidate and judge"] if checks == 1 else ["candidate", "judge"]
    assert [line for line in check_lines(result.stderr) if line.startswith("checking")] == [
        f"checking the {who} endpoint: GET {server.url}/models (waiting up to 60 s; --check-timeout)" for who in parties
    ]


def test_the_turing_and_the_pairwise_judges_checks_say_whose_they_are(tmp_path: Path, quick_check_notes: None) -> None:
    results = tmp_path / "results"
    for name, model in (("r", "baseline:oracle"), ("q", "baseline:last-observation")):
        made = cli("run", "--model", model, "--judge", "rules", *COMMON[:-1], name, "--output", results)
        assert made.exit_code in (0, 1), made.output
    with FakeOpenAIServer(responder=lambda body: Reply("\\boxed{A}"), models=Reply(delay_s=1.0)) as server:
        turing = cli("turing", "r", "--output", results, *choice_judge_args(server.url))
        pairwise = cli("compare", "q", "r", "--pairwise", "--output", results, *choice_judge_args(server.url))
    assert turing.exit_code == pairwise.exit_code == 0, turing.output + pairwise.output
    for result, who in ((turing, "Turing judge"), (pairwise, "pairwise judge")):
        assert check_lines(result.stderr)[0] == (
            f"checking the {who} endpoint: GET {server.url}/models (waiting up to 60 s; --check-timeout)"
        )
    assert server.model_checks == 2  # one check for each command


@pytest.mark.slow
def test_in_a_pipe_a_busy_servers_check_is_shown_at_once_and_every_10_s(tmp_path: Path) -> None:
    """The audit's command (candidate and judge on one server whose listing answers after 12 s), its stderr a pipe:
    what is checked comes within about a second, still waiting at 10 s, and the run starts after one check."""
    delay = 12.0
    with FakeOpenAIServer(responder=healthy, models=Reply(delay_s=delay)) as server:
        command = awbench_command(*candidate_and_judge(server.url, server.url, tmp_path / "results"))
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=REPO, env=clean_env(), stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        lines = [(time.monotonic(), line.rstrip("\n")) for line in process.stderr]
        assert process.wait(timeout=60) == 0, lines
    assert server.model_checks == 1 and len(server.requests) == 2 * N
    answered = server.model_checks_at[0] + delay
    listing = f"{server.url}/models"
    shown = [(at, line) for at, line in lines if line.startswith(("checking the ", "still waiting for "))]
    assert [line for _, line in shown] == [
        f"checking the candidate and judge endpoint: GET {listing} (waiting up to 60 s; --check-timeout)",
        f"still waiting for {listing} (10 s of 60 s; --check-timeout)",
    ]
    assert shown[0][0] < server.model_checks_at[0] + 2.0 and shown[1][0] < answered
    assert time.monotonic() - started < 2 * delay  # one check of 12 s, not two one after the other


def test_a_run_that_fails_before_its_first_record_keeps_an_output_directory_that_existed(tmp_path: Path) -> None:
    (tmp_path / "results" / "earlier").mkdir(parents=True)
    result = cli(*args_for("candidate", f"http://127.0.0.1:{free_port()}/v1", tmp_path / "results"))
    assert result.exit_code == 2
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["earlier"]


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_a_key_refused_at_the_endpoint_check_exits_2_and_sends_nothing(role: str, tmp_path: Path) -> None:
    with FakeOpenAIServer(models=Reply(status=401, error_message="Incorrect API key provided")) as server:
        result = cli(*args_for(role, server.url, tmp_path / "results"))
    no_traceback(result)
    assert refusal(result) == (2, "api_refused") and "HTTP 401" in result.stderr
    assert server.model_checks == 1 and server.requests == []
    assert not (tmp_path / "results" / "r").exists()


@pytest.mark.parametrize("role", ["candidate", "judge"])
def test_an_endpoint_that_stops_listening_after_the_check_fails_transiently_then_heals(
    role: str, tmp_path: Path
) -> None:
    output = tmp_path / "results"
    with FakeOpenAIServer(responder=healthy, stop_after_models=True) as server:
        first = cli(*args_for(role, server.url, output))
    no_traceback(first)
    assert first.exit_code == 1, first.output
    assert server.requests == []  # every connection was refused
    records = records_of(role, output / "r")
    assert set(records) == KEYS
    assert all(r["transient"] and "ConnectionFailed" in r["error"] for r in records.values())
    again, healthy_server = rerun(role, server.port, output)
    assert again.exit_code == 0, again.output
    assert asked(role, healthy_server.requests, output / "r") == sorted(KEYS)


ALL = read_source("sample")[0]


@pytest.mark.parametrize("fault", ["reset", "refused"])
def test_32_consecutive_connection_failures_stop_the_run_resumably(fault: str, tmp_path: Path) -> None:
    """With every connection failing, the run stops after DEAD_WINDOW (32) attempts instead of trying all 65
    samples, exits 2 saying so, and the same command later finishes it."""
    output = tmp_path / "results"
    args = lambda url: [
        "run",
        "--model",
        CANDIDATE_MODEL,
        "--base-url",
        url,
        "--judge",
        "rules",
        "--data",
        "sample",
        "--max-retries",
        "0",
        "--concurrency",
        "1" if fault == "reset" else "4",
        "--run-name",
        "r",
        "--output",
        str(output),
    ]
    reply = always(Reply(close=True))
    with FakeOpenAIServer(responder=reply, stop_after_models=fault == "refused") as server:
        first = cli(*args(server.url))
    no_traceback(first)
    assert first.exit_code == 2, first.output
    assert "is not answering: the last 32 requests failed to connect" in first.output
    assert "run the same command again" in first.output
    saved = jsonl_lines(output / "r" / "predictions.jsonl")
    assert all(r["status"] == "error" and r["transient"] for r in saved)
    if fault == "reset":  # one at a time: exactly 32 attempts, the first 31 of which are recorded
        assert len(server.requests) == 32 and len(saved) == 31
    else:
        assert 31 - 4 <= len(saved) <= 31 and server.requests == []
    with FakeOpenAIServer(responder=healthy, port=server.port) as healthy_server:
        again = cli(*args(healthy_server.url))
    assert again.exit_code == 0, again.output
    assert len(healthy_server.requests) == len(ALL)  # the failed ones and those never tried, each once

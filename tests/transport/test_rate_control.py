"""Rate control (awbench.transport.rate_control) against real rate-limited servers on 127.0.0.1: the benchmark's
judge server (bench/delay_server.py, which counts tokens and requests per minute as OpenAI does), and
tests/fake_openai.py for scripted refusals."""

from __future__ import annotations

import sys
import time
from itertools import pairwise
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from generation_requests import generation_request, run, settings_for
from judge_requests import judge_all, numbered_request, verdict_text
from typer.testing import CliRunner

from awbench.cli import app
from awbench.config import JudgeSettings
from awbench.judging.cost import wall_seconds
from awbench.judging.llm.prompts import load_prompt_set, render_messages
from awbench.transport.chat_client import StatusError
from awbench.transport.endpoints import is_rate_limited
from awbench.transport.rate_control import (
    Allowance,
    RateControl,
    RateHeaders,
    parse_duration,
    read_rate_headers,
    request_tokens,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from delay_server import DelayServer

MAX_TOKENS = 1000


def judge_settings(url: str, **changes: object) -> JudgeSettings:
    fields = {
        "model": "bench",
        "base_url": url,
        "concurrency": 16,
        "max_retries": 0,
        "max_tokens": MAX_TOKENS,
        "request_timeout": 10.0,
    }
    return JudgeSettings(**(fields | changes))


def request_cost(i: int = 0) -> int:
    """What the client estimates one judge request of `numbered_request(i)` costs (the server counts a little more:
    the roles' markers)."""
    return request_tokens(
        {"messages": render_messages(load_prompt_set("rubric"), numbered_request(i)), "max_tokens": MAX_TOKENS}
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),
        ("1s", 1.0),
        ("120ms", 0.12),
        ("1h2m3.5s", 3723.5),
        ("0.5", 0.5),
        ("17", 17.0),
        ("", None),
        ("soon", None),
        ("5s later", None),
    ],
)
def test_reset_durations_in_openai_format(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_rate_headers_are_read_and_absent_ones_are_none() -> None:
    headers = {
        "x-ratelimit-limit-tokens": "150000",
        "x-ratelimit-remaining-tokens": "149000",
        "x-ratelimit-reset-tokens": "400ms",
        "x-ratelimit-limit-requests": "500",
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-reset-requests": "120ms",
    }
    assert read_rate_headers(headers) == RateHeaders(
        tokens=Allowance(150000, 149000, 0.4), requests=Allowance(500, 499, 0.12)
    )
    assert read_rate_headers({"content-type": "application/json"}) is None
    assert read_rate_headers({"x-ratelimit-limit-requests": "60"}) == RateHeaders(
        tokens=None, requests=Allowance(60, None, None)
    )


def test_a_request_costs_its_prompt_estimate_plus_its_completion_allowance() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "x" * 400},
            {"role": "user", "content": [{"type": "text", "text": "y" * 41}]},
        ],
        "max_completion_tokens": 100,
    }
    assert request_tokens(body) == 100 + 11 + 100


def test_the_bucket_follows_the_servers_count_and_a_refusal_holds_until_the_reset() -> None:
    now = [100.0]
    control = RateControl(concurrency=8, clock=lambda: now[0])
    sent = control.tokens.take(0), control.requests.take(1)
    # the server: 6,000 tokens a minute (100 a second), 300 left, full again in 2 s: a burst of 500
    control.answered(RateHeaders(tokens=Allowance(6000, 300, 2.0), requests=None), sent)
    assert control.tokens.per_minute == 6000 and control.tokens.capacity == 500 and control.tokens.level == 300
    assert control.tokens.wait_for(400) == pytest.approx(1.0)  # 100 more tokens at 100 a second
    control.refused_now(RateHeaders(tokens=Allowance(6000, 0, 1.5), requests=None), None, sent)
    assert control.hold_until == pytest.approx(101.5) and control.window == 4  # halved once
    control.refused_now(None, None, sent)  # sent before the first refusal came: not halved again
    assert control.window == 4 and control.refused == 2


def test_headers_pace_the_judge_within_the_limit_and_nothing_is_lost() -> None:
    """The limit allows about 40 requests a second, as a burst of a quarter of a second; 48 verdicts at 16 in
    flight would be mostly refused without pacing. With --judge-max-retries 0, any refusal that used an
    attempt would leave a verdict unscored."""
    cost = request_cost()
    tpm = cost * 40 * 60
    with DelayServer(0.05, role="judge", tpm=tpm, burst_s=0.25) as server:
        started = time.perf_counter()
        records = judge_all(judge_settings(server.url), [numbered_request(i) for i in range(48)])
        elapsed = time.perf_counter() - started
        stats = server.stats()
    assert [r.status for r in records] == ["ok"] * 48
    assert stats["admitted_requests"] == 48 and stats["refused"] <= 2, stats
    assert elapsed >= (48 - 10) / 40 * 0.9  # paced: the burst, then the limit's rate
    assert elapsed < 10


def test_without_headers_refusals_alone_slow_it_down_and_cost_no_attempts() -> None:
    cost = request_cost()
    with DelayServer(0.05, role="judge", tpm=cost * 40 * 60, burst_s=0.25, rate_headers=False) as server:
        records = judge_all(judge_settings(server.url), [numbered_request(i) for i in range(48)])
        stats = server.stats()
    assert [r.status for r in records] == ["ok"] * 48
    assert stats["admitted_requests"] == 48 and stats["requests"] == 48 + stats["refused"]
    assert stats["refused"] <= 48, stats  # the window halves and the endpoint waits: bounded, not a storm


def test_limits_given_up_front_pace_from_the_first_request() -> None:
    cost = request_cost()
    with DelayServer(0.05, role="judge", tpm=cost * 40 * 60, burst_s=0.25, rate_headers=False) as server:
        records = judge_all(judge_settings(server.url, tpm=cost * 38 * 60), [numbered_request(i) for i in range(48)])
        stats = server.stats()
    assert [r.status for r in records] == ["ok"] * 48 and stats["refused"] == 0, stats


def test_a_requests_per_minute_limit_paces_the_candidate() -> None:
    """10 requests a second, a burst of 5: 25 generations take at least 2 s, none refused more than once."""
    with DelayServer(0.02, role="candidate", rpm=600, burst_s=0.5) as server:
        started = time.perf_counter()
        generations = run(
            settings_for(server.url, concurrency=8, max_retries=0), [generation_request(i) for i in range(25)]
        )
        elapsed = time.perf_counter() - started
        stats = server.stats()
    assert all(g.error is None for g in generations) and len(generations) == 25
    assert stats["admitted_requests"] == 25 and stats["refused"] <= 1, stats
    assert 1.9 <= elapsed < 8


def rate_limited(retry_after: str | None = None) -> Reply:
    headers = {"Retry-After": retry_after} if retry_after else {}
    return Reply(status=429, headers=headers, error_message="Rate limit reached for requests")


def test_a_rate_limit_refusal_waits_and_uses_no_attempt() -> None:
    with FakeOpenAIServer(script=[rate_limited("0.3"), Reply(verdict_text())]) as server:
        started = time.perf_counter()
        (record,) = judge_all(judge_settings(server.url, max_retries=0), [numbered_request()])
    assert record.status == "ok" and record.verdicts[0].attempts == 1
    assert len(server.requests) == 2 and server.received_at[1] - server.received_at[0] >= 0.28
    assert time.perf_counter() - started < 5


def test_refusals_with_no_answer_between_them_use_attempts() -> None:
    """An endpoint that refuses everything (a spent quota): the second refusal in a row with nothing answered
    in between counts, so the budget bounds the requests: 2 per attempt."""
    with FakeOpenAIServer(responder=lambda body: rate_limited()) as server:
        (record,) = judge_all(judge_settings(server.url, max_retries=1), [numbered_request()])
    assert record.status == "failed" and record.transient and len(server.requests) == 4


def test_out_of_credit_is_not_a_rate_limit() -> None:
    assert is_rate_limited(StatusError(429, "slow down", "rate_limit_exceeded"))
    assert is_rate_limited(StatusError(429, "slow down"))
    assert not is_rate_limited(StatusError(429, "You exceeded your current quota", "insufficient_quota"))
    assert not is_rate_limited(StatusError(503, "overloaded"))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "250"})


def test_dry_run_gives_the_judge_wall_time_at_the_limits_given(tmp_path: Path) -> None:
    """The tokens the limit counts are the prompts' estimate plus --judge-max-tokens per call; the wall time is
    the binding limit's (here the requests: 65 calls at 13 a minute take 5 minutes, the tokens far less)."""
    common = (
        "run",
        "--model",
        "baseline:oracle",
        "--data",
        "sample",
        "--judge-model",
        "gpt-5.2",
        "--judge-base-url",
        "http://127.0.0.1:9/v1",
        "--judge-max-tokens",
        "1000",
        "--dry-run",
        "--output",
        str(tmp_path / "out"),
    )
    unlimited = invoke(*common)
    limited = invoke(*common, "--judge-tpm", "100000000", "--judge-rpm", "13")
    assert unlimited.exit_code == 0 and limited.exit_code == 0, limited.output
    assert "give --judge-tpm/--judge-rpm for the wall time" in " ".join(unlimited.output.split())
    assert "about 5 min 0 s at --judge-tpm/--judge-rpm" in " ".join(limited.output.split())
    assert wall_seconds(65, 6_500_000, 1_000_000, None) == pytest.approx(390.0)  # the tokens bind: 6.5 min
    assert wall_seconds(65, 0, None, None) is None


def test_a_slow_server_that_never_refuses_is_not_paced_nor_said_to_be(tmp_path: Path) -> None:
    """Issue 36: against llama.cpp (one slot, 20 s an answer, no rate-limit headers, no refusal) every command said
    "held back by its rate limit, paced at 3 requests/min (learnt from refusals)", and held the second request as
    long as the first took: the start's ramp, from the probe's rate, waited at that rate though it doubles every
    50 ms. Now the next request goes as soon as the slot is free, and nothing is said of a rate limit."""
    delay = 1.5
    with FakeOpenAIServer(delay_s=delay) as server:
        args = ["infer", "--model", "m", "--base-url", server.url, "--concurrency", "1", "--data", "sample"]
        result = invoke(*args, "--domains", "os", "--limit", "3", "--output", str(tmp_path))
        sent = server.received_at
    assert result.exit_code == 0, result.output
    assert "rate limit" not in result.output and "paced" not in result.output
    assert len(sent) == 3
    assert all(later - earlier < delay + 0.5 for earlier, later in pairwise(sent)), sent

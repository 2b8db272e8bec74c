"""An endpoint that tells nothing but refusals (no `x-ratelimit-*` headers, no limits given): the rate it admits is
learnt from what it admitted between two refusals (awbench.transport.rate_control.LearntRate), on a clock the
test moves, and against bench/delay_server.py enforcing tokens per minute without headers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from judge_requests import judge_all, numbered_request
from test_rate_control import judge_settings, request_cost

from awbench.transport.rate_control import (
    LEARN_SPAN_S,
    LEARNT_GROWTH_PER_S,
    LEARNT_SHARE,
    RAMP_AGAIN_SHARE,
    RAMP_START,
    LearntRate,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from delay_server import DelayServer


def ramp_rate(learning: LearntRate) -> float | None:
    """The requests a second the ramp paces at (a ramp paces requests only), None when nothing is paced."""
    tokens, requests = learning.rates()
    assert tokens is None
    return requests


def test_the_send_rate_ramps_up_after_the_probe_and_an_endpoint_never_refusing_is_not_paced() -> None:
    now = [10.0]
    learning = LearntRate(lambda: now[0])
    learning.first_send = 10.0
    assert ramp_rate(learning) is None  # until the probe's answer
    learning.start(ceiling=100.0)  # 64 in flight at 0.64 s, say
    assert ramp_rate(learning) == pytest.approx(100 * RAMP_START)
    now[0] += 0.1  # two doublings
    assert ramp_rate(learning) == pytest.approx(100 * RAMP_START * 4)
    now[0] += 1.0
    assert ramp_rate(learning) is None  # far past what the concurrency allows: the ramp is over


def test_two_refusals_apart_pin_the_admitted_rate_and_it_grows_until_the_next() -> None:
    now = [0.0]
    learning = LearntRate(lambda: now[0])
    learning.first_send = 0.0
    learning.start(ceiling=1000.0)
    # 42 requests of 1,000 tokens sent in the first second, the 41st refused: it ramps again from a share of
    # the 40 a second admitted so far
    now[0] = 1.0
    learning.sent_requests = 42
    learning.refusal(sent_tokens=41_000, sent_requests=41, cost=1_000)
    assert learning.learnt is None and ramp_rate(learning) == pytest.approx(40 * RAMP_AGAIN_SHARE)
    # the 42nd, sent before that reaction, refused too: it changes nothing but the count
    learning.refusal(sent_tokens=42_000, sent_requests=42, cost=1_000)
    assert learning.refused == [2_000, 2] and ramp_rate(learning) == pytest.approx(40 * RAMP_AGAIN_SHARE)
    # 1.5 s later: 30 more sent, the last refused; 29 admitted between the two refusals
    now[0] = 1.0 + 3 * LEARN_SPAN_S
    learning.sent_requests = 72
    learning.refusal(sent_tokens=72_000, sent_requests=72, cost=1_000)
    rate_tokens, rate_requests = 29_000 / 1.5, 29 / 1.5
    tokens, requests = learning.rates()
    assert tokens == pytest.approx(rate_tokens * LEARNT_SHARE) and requests == pytest.approx(
        rate_requests * LEARNT_SHARE
    )
    now[0] += 1.0
    assert learning.rates()[1] == pytest.approx(rate_requests * (LEARNT_SHARE + LEARNT_GROWTH_PER_S))


def test_a_tokens_per_minute_limit_without_headers_is_learnt_with_few_refusals() -> None:
    """40 requests a second with a burst of 0.25 s, 96 verdicts at 64 in flight and --judge-max-retries 0: every
    one is made, and the refusals stay few (sending the window at once, as before, had a third refused)."""
    cost = request_cost()
    with DelayServer(0.05, role="judge", tpm=cost * 40 * 60, burst_s=0.25, rate_headers=False) as server:
        records = judge_all(judge_settings(server.url, concurrency=64), [numbered_request(i) for i in range(96)])
        stats = server.stats()
    assert [r.status for r in records] == ["ok"] * 96
    assert stats["admitted_requests"] == 96 and stats["refused"] <= 10, stats

"""The LLM judge through its Python API, against a real HTTP server (tests/fake_openai.py)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer, Reply
from judge_requests import judge_all, numbered_request, verdict_text

from awbench.config import JudgeSettings
from awbench.judging import BudgetExhausted
from awbench.judging.cost import OUTPUT_TOKENS_PER_VERDICT, Price, price_for, usage_cost
from awbench.judging.llm.direct import LLMJudge, require_key
from awbench.judging.llm.openai_judge import CostUnknown, create
from awbench.judging.llm.prompts import load_prompt_set, render_messages
from awbench.judging.llm.verdict_records import consistency_stats
from awbench.records import JudgmentRecord, VerdictRecord
from awbench.transport.endpoints import FatalAPIError, MissingAPIKey

KEY_ENV = "AWBENCH_TEST_JUDGE_KEY"
SECRET = "sk-test-SECRET123"


def settings(server: FakeOpenAIServer | None, **changes: Any) -> JudgeSettings:
    fields: dict[str, Any] = {
        "model": "judge-model",
        "base_url": server.url if server else "http://127.0.0.1:9/v1",
        "api_key_env": KEY_ENV,
        "concurrency": 4,
        "max_retries": 2,
        "request_timeout": 2.0,
    }
    return JudgeSettings(**{**fields, **changes})


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_verdict_becomes_exact_scores() -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "total_tokens": 1200,
        "prompt_tokens_details": {"cached_tokens": 100},
        "completion_tokens_details": {"reasoning_tokens": 150},
    }
    with FakeOpenAIServer(script=[Reply(verdict_text(), reasoning="let me think", usage=usage)]) as server:
        (record,) = judge_all(settings(server, price_in=2.0, price_out=10.0), [numbered_request()])
    assert record.status == "ok" and record.judge == "llm" and record.key == "terminal/0/2"
    assert record.dimensions == {"format": 5, "factuality": 4, "consistency": 3, "realism": 4, "quality": 2}
    assert record.score == pytest.approx((3.6 - 1) / 4 * 100)
    (verdict,) = record.verdicts
    assert verdict.status == "complete" and verdict.attempts == 1
    assert verdict.strengths == ["right error type"] and verdict.weaknesses == ["wrong size"]
    assert verdict.raw == verdict_text() and verdict.reasoning == "let me think"
    assert (verdict.usage.prompt_tokens, verdict.usage.completion_tokens) == (1000, 200)
    assert (verdict.usage.cached_tokens, verdict.usage.reasoning_tokens) == (100, 150)
    assert record.cost_usd == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)


def test_the_request_carries_the_settings() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text())) as server:
        extra = {"chat_template_kwargs": {"enable_thinking": False}}
        judge_all(
            settings(server, temperature=0.3, max_tokens=4096, reasoning_effort="low", extra_body=extra),
            [numbered_request()],
        )
    (body,) = server.requests
    assert body["model"] == "judge-model" and body["temperature"] == 0.3
    assert body["max_tokens"] == 4096 and "max_completion_tokens" not in body
    assert body["reasoning_effort"] == "low"
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert isinstance(body["seed"], int)
    assert "response_format" not in body
    assert body["messages"] == render_messages(load_prompt_set("rubric"), numbered_request())


def test_the_openai_api_gets_max_completion_tokens_and_a_schema_it_accepts() -> None:
    judge = create(settings(None, base_url="https://api.openai.com/v1", structured=True))
    assert isinstance(judge, LLMJudge)  # not batched
    body = judge.request_body([{"role": "user", "content": "x"}], seed=1, trajectory="t")  # nothing is sent
    assert body["max_completion_tokens"] == 32768 and "max_tokens" not in body
    assert "maxLength" not in json.dumps(body["response_format"])


def test_429_waits_for_retry_after_then_succeeds() -> None:
    script = [Reply(status=429, headers={"Retry-After": "0.3"}, error_message="slow down"), Reply(verdict_text())]
    with FakeOpenAIServer(script=script) as server:
        started = time.monotonic()
        (record,) = judge_all(settings(server), [numbered_request()])
        elapsed = time.monotonic() - started
    assert len(server.requests) == 2 and record.status == "ok"
    assert elapsed >= 0.3


def test_500_then_success() -> None:
    with FakeOpenAIServer(script=[Reply(status=500), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server), [numbered_request()])
    assert len(server.requests) == 2 and record.status == "ok" and record.verdicts[0].attempts == 2


@pytest.mark.slow
def test_an_answer_slower_than_the_timeout_is_retried() -> None:
    with FakeOpenAIServer(script=[Reply(verdict_text(), delay_s=1.0), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server, request_timeout=0.3), [numbered_request()])
    assert len(server.requests) == 2 and record.status == "ok"


def test_a_malformed_body_is_retried_like_a_dropped_connection() -> None:
    with FakeOpenAIServer(script=[Reply(raw_body=b'{"choices": [ not json'), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server), [numbered_request()])
    assert len(server.requests) == 2 and record.status == "ok"
    assert record.verdicts[0].attempts == 2  # one budget for transport retries and re-asks


def test_malformed_bodies_cost_at_most_the_attempt_budget() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply(raw_body=b"<html>proxy error</html>")) as server:
        (record,) = judge_all(settings(server, max_retries=3), [numbered_request()])
    assert len(server.requests) == 4  # 1 + max_retries, not re-asks times transport retries
    assert record.status == "failed" and record.transient and record.verdicts[0].attempts == 4


def test_401_stops_at_once() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply(status=401, error_message="invalid key")) as server:
        with pytest.raises(FatalAPIError, match=r"401.*invalid key"):
            judge_all(settings(server, concurrency=1), [numbered_request()])
    assert len(server.requests) == 1


def test_a_fatal_error_stops_the_other_requests_too() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply(status=403, error_message="forbidden"), delay_s=0.05) as server:
        with pytest.raises(FatalAPIError):
            judge_all(settings(server, concurrency=2), [numbered_request(i) for i in range(20)])
    assert len(server.requests) <= 2


def test_a_prompt_too_long_for_the_judge_fails_only_that_prediction() -> None:
    overflow = Reply(
        status=400,
        error_message="This model's maximum context length is 8192 tokens. However, your prompt contains 9000 input tokens.",
    )
    with FakeOpenAIServer(script=[overflow], responder=lambda body: Reply(verdict_text())) as server:
        records = judge_all(settings(server, concurrency=1), [numbered_request(0), numbered_request(1)])
    assert [r.status for r in records] == ["failed", "ok"]
    assert records[0].score is None and "maximum context length" in (records[0].error or "")


def test_an_unparseable_verdict_is_asked_again_then_recorded_failed() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply("Looks fine to me, 4 out of 5.")) as server:
        (record,) = judge_all(settings(server, max_retries=2), [numbered_request()])
    assert len(server.requests) == 3
    assert len({body["seed"] for body in server.requests}) == 3  # a seeded server would repeat itself otherwise
    assert record.status == "failed" and record.score is None and record.dimensions == {}
    (verdict,) = record.verdicts
    assert verdict.status == "unparsed" and verdict.attempts == 3
    assert verdict.raw == "Looks fine to me, 4 out of 5."
    assert "no complete verdict" in (record.error or "") and not record.transient


def test_a_partial_verdict_is_asked_again_then_unscored_never_a_mean_of_fewer_dimensions() -> None:
    text = verdict_text().replace(', "realism": 4, "quality": 2', "")
    with FakeOpenAIServer(responder=lambda body: Reply(text)) as server:
        (record,) = judge_all(settings(server, max_retries=1), [numbered_request()])
    assert len(server.requests) == 2
    assert record.status == "failed" and record.score is None and record.dimensions == {}
    (verdict,) = record.verdicts
    assert verdict.status == "partial" and verdict.scores == {"format": 5, "factuality": 4, "consistency": 3}
    assert "partial" in verdict.flags and verdict.attempts == 2


def test_a_verdict_cut_off_by_the_token_limit_is_asked_again_never_accepted() -> None:
    complete_but_cut = Reply(verdict_text(5, 5, 5, 5, 5), finish_reason="length")
    with FakeOpenAIServer(script=[complete_but_cut, Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server), [numbered_request()])
    assert len(server.requests) == 2 and record.status == "ok"
    assert record.dimensions["quality"] == 2  # from the second, finished answer
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text(5, 5, 5, 5, 5), finish_reason="length")) as server:
        (record,) = judge_all(settings(server, max_retries=2), [numbered_request()])
    assert len(server.requests) == 3 and record.status == "failed" and record.score is None
    assert record.verdicts[0].status == "truncated" and "cut off by its token limit" in (record.error or "")


def test_a_partial_verdict_then_a_complete_one_is_ok() -> None:
    partial = verdict_text().replace(', "quality": 2', "")
    with FakeOpenAIServer(script=[Reply(partial), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server), [numbered_request()])
    assert record.status == "ok" and record.verdicts[0].attempts == 2 and len(record.dimensions) == 5


def test_three_samples_are_three_seeded_calls_averaged() -> None:
    texts = iter([verdict_text(5, 5, 5, 5, 5), verdict_text(3, 3, 3, 3, 3), verdict_text(4, 4, 4, 4, 1)])
    with FakeOpenAIServer(responder=lambda body: Reply(next(texts))) as server:
        (record,) = judge_all(settings(server, samples=3), [numbered_request()])
    assert len(server.requests) == 3
    seeds = [body["seed"] for body in server.requests]
    assert len(set(seeds)) == 3 and sorted(seeds) == sorted(v.seed for v in record.verdicts if v.seed is not None)
    assert record.dimensions == {"format": 4, "factuality": 4, "consistency": 4, "realism": 4, "quality": 3}
    assert record.score == pytest.approx((3.8 - 1) / 4 * 100)
    assert record.status == "ok" and len(record.verdicts) == 3


def test_one_failed_sample_of_two_makes_a_partial_record() -> None:
    # one call at a time: sample 0 gets the first reply, sample 1 the two unusable ones
    script = [Reply(verdict_text(5, 5, 5, 5, 5)), Reply("no verdict"), Reply("still none")]
    with FakeOpenAIServer(script=script) as server:
        (record,) = judge_all(settings(server, samples=2, max_retries=1, concurrency=1), [numbered_request()])
    assert len(server.requests) == 3
    assert [v.status for v in record.verdicts] == ["complete", "unparsed"]
    assert record.status == "partial" and record.score == 100.0 and record.error is None


def test_structured_output_sends_the_schema_and_reads_bare_json() -> None:
    bare = json.dumps(
        {
            "strengths": [],
            "weaknesses": [],
            "scores": {"format": 2, "factuality": 2, "consistency": 2, "realism": 2, "quality": 2},
        }
    )
    with FakeOpenAIServer(responder=lambda body: Reply(bare)) as server:
        (record,) = judge_all(settings(server, structured=True), [numbered_request()])
    response_format = server.requests[0]["response_format"]
    assert response_format["type"] == "json_schema"
    spec = response_format["json_schema"]
    assert spec["name"] == "verdict" and spec["strict"] is True
    schema = spec["schema"]
    assert schema["additionalProperties"] is False and set(schema["required"]) == {"strengths", "weaknesses", "scores"}
    assert schema["properties"]["strengths"]["maxItems"] == 5
    assert schema["properties"]["strengths"]["items"]["maxLength"] == 300
    scores = schema["properties"]["scores"]
    assert scores["additionalProperties"] is False and len(scores["required"]) == 5
    assert all(prop == {"type": "integer", "enum": [1, 2, 3, 4, 5]} for prop in scores["properties"].values())
    assert record.status == "ok" and record.score == pytest.approx(25.0)


def test_cache_key_covers_what_changes_a_verdict(tmp_path: Any) -> None:
    request = numbered_request()
    base = create(settings(None)).cache_key(request)
    template = tmp_path / "template.md"
    template.write_text("{{action}} {{prediction}} {{ground_truth}}")
    changed = [
        settings(None, model="other"),
        settings(None, temperature=0.0),
        settings(None, max_tokens=1024),
        settings(None, structured=True),
        settings(None, samples=2),
        settings(None, extra_body={"top_k": 20}),
        settings(None, template=str(template)),
    ]
    assert all(create(s).cache_key(request) != base for s in changed)
    same = [
        settings(None, concurrency=99),
        settings(None, max_retries=9),
        settings(None, request_timeout=5.0),
        settings(None, base_url="http://127.0.0.1:10/v1"),
        settings(None, max_cost=100.0, price_in=1, price_out=1),
    ]
    assert all(create(s).cache_key(request) == base for s in same)
    assert create(settings(None)).cache_key(numbered_request(1)) != base


def test_describe_names_the_prompt_set() -> None:
    described = create(settings(None)).describe()
    assert described["prompt_set"] == "rubric"
    assert described["prompt_sha256"] == load_prompt_set("rubric").sha256
    assert set(described) == {"protocol", "prompt_set", "prompt_sha256", "prompt_source", "parser_version"}
    assert described["protocol"] == "awbench" and described["prompt_source"] is None


def test_max_cost_stops_before_the_cap_and_yields_what_finished() -> None:
    # a completion limit of the typical verdict: the most a call can be billed is then the estimate
    judge_settings = settings(None, price_in=1.0, price_out=1.0, concurrency=1, max_tokens=OUTPUT_TOKENS_PER_VERDICT)
    estimate = create(judge_settings).estimate([numbered_request()])
    assert estimate.cost_usd is not None
    usage = {"prompt_tokens": estimate.prompt_tokens, "completion_tokens": OUTPUT_TOKENS_PER_VERDICT, "total_tokens": 0}
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text(), usage=usage)) as server:
        capped = judge_settings.model_copy(update={"base_url": server.url, "max_cost": 3.5 * estimate.cost_usd})
        done: list[JudgmentRecord] = []
        with pytest.raises(BudgetExhausted, match=r"spent \$0\.\d+ of --max-cost \$0\.\d+"):
            judge_all(capped, [numbered_request(i) for i in range(10)], done)
    assert len(done) == 3 and len(server.requests) == 3
    assert sum(r.cost_usd or 0 for r in done) == pytest.approx(3 * estimate.cost_usd)


def test_answers_longer_than_the_typical_verdict_never_take_the_spend_past_the_cap() -> None:
    """A reasoning judge answering 20,000 tokens a verdict, 8 requests at once: the cap held a typical verdict's
    cost for each call in flight, and nine calls went out, 2.6 times the cap. It now holds what a call can be
    billed at most (its prompt and --judge-max-tokens), so those in flight cannot pass it."""
    judge_settings = settings(None, price_in=1.0, price_out=1.0, concurrency=8, max_tokens=20_000)
    usage = {"prompt_tokens": 1000, "completion_tokens": 20_000, "total_tokens": 21_000}
    call = usage_cost(Price(input=1.0, output=1.0), 1000, 20_000)
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text(), usage=usage, delay_s=0.2)) as server:
        cap = 3.5 * call
        capped = judge_settings.model_copy(update={"base_url": server.url, "max_cost": cap})
        done: list[JudgmentRecord] = []
        with pytest.raises(BudgetExhausted):
            judge_all(capped, [numbered_request(i) for i in range(16)], done)
    assert 1 <= len(done) == len(server.requests) <= 3
    assert sum(r.cost_usd or 0 for r in done) <= cap


def test_max_cost_without_a_price_is_refused() -> None:
    with pytest.raises(CostUnknown, match="judge-price-in"):
        create(settings(None, model="some-local-judge", max_cost=1.0))


def test_estimate_spends_nothing() -> None:
    requests = [numbered_request(i) for i in range(5)]
    with FakeOpenAIServer() as server:
        unknown = create(settings(server, samples=2)).estimate(requests)
        known = create(settings(server, model="gpt-5.2-2025-12-11")).estimate(requests)
    assert server.requests == []
    assert unknown.calls == 10 and unknown.completion_tokens == 10 * OUTPUT_TOKENS_PER_VERDICT
    assert unknown.prompt_tokens > 10 * 1000 and unknown.cost_usd is None
    uncached = (known.prompt_tokens * 1.75 + known.completion_tokens * 14.0) / 1e6
    assert known.calls == 5 and known.uncached_cost_usd == pytest.approx(uncached)
    assert known.cached_tokens > 0  # the five share a trajectory and turn: four find the first's prompt cached
    assert known.cost_usd == pytest.approx(uncached - known.cached_tokens * (1.75 - 0.175) / 1e6)


def test_prices_come_from_settings_or_the_table() -> None:
    assert price_for("gpt-5.2-2025-12-11") == price_for("gpt-5.2")
    assert price_for("gpt-5.2-pro") is None and price_for("llama") is None
    custom, custom_out = price_for("llama", 1.0, 2.0), price_for("gpt-5.2", price_out=20.0)
    assert custom is not None and custom.input == 1.0
    assert custom_out is not None and custom_out.output == 20.0
    assert price_for("llama", price_in=1.0) is None


def test_concurrency_limits_requests_in_flight() -> None:
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text()), delay_s=0.15) as server:
        records = judge_all(settings(server, concurrency=4), [numbered_request(i) for i in range(12)])
    assert len(records) == 12 and server.in_flight_max == 4


def test_many_connections_at_once() -> None:
    # Answers take 1 s: after the probe, the ramp (rate_control.LearntRate) sends the other 64 within about 0.2 s
    # of it, so all 64 are in flight together even on a busy host.
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text()), delay_s=1.0) as server:
        records = judge_all(settings(server, concurrency=64), [numbered_request(i) for i in range(65)])
    assert len(records) == 65 and server.in_flight_max == 64  # after the first, alone: the rate control's probe


def test_the_api_key_is_sent_but_never_recorded() -> None:
    leaky = Reply(status=422, error_message=f"cannot process request for key {SECRET}")
    with FakeOpenAIServer(script=[Reply(verdict_text()), leaky]) as server:
        records = judge_all(settings(server, concurrency=1), [numbered_request(0), numbered_request(1)])
    assert all({k.lower(): v for k, v in h.items()}["authorization"] == f"Bearer {SECRET}" for h in server.headers)
    assert [r.status for r in records] == ["ok", "failed"]
    assert "cannot process request" in (records[1].error or "")
    assert all(SECRET not in r.model_dump_json() for r in records)

    with FakeOpenAIServer(
        responder=lambda body: Reply(status=401, error_message=f"Incorrect API key provided: {SECRET}")
    ) as server:
        with pytest.raises(FatalAPIError) as raised:
            judge_all(settings(server), [numbered_request()])
    assert SECRET not in str(raised.value) and "Incorrect API key" in str(raised.value)


def test_the_openai_api_without_a_key_is_refused_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKey, match=KEY_ENV):
        require_key(settings(None, base_url=None))
    judge = create(settings(None, base_url=None))  # a dry run needs no key: the client is made on first use
    assert judge.estimate([numbered_request()]).calls == 1
    with pytest.raises(MissingAPIKey, match=KEY_ENV):
        judge_all(settings(None, base_url=None), [numbered_request()])


def test_consistency_stats() -> None:
    def record(*totals: tuple[int, ...]) -> JudgmentRecord:
        verdicts = [
            VerdictRecord(
                status="complete", scores=dict(zip(("format", "factuality", "consistency", "realism", "quality"), t))
            )
            for t in totals
        ]
        return JudgmentRecord(key="k", domain="os", judge="llm", cache_key="c", status="ok", verdicts=verdicts)

    stats = consistency_stats(
        [record((5, 5, 5, 5, 5), (5, 5, 5, 5, 4)), record((1, 1, 1, 1, 1), (3, 3, 3, 3, 3)), record((2, 2, 2, 2, 2))]
    )
    assert stats["samples"] == 2
    assert stats["mean_total_std"] == pytest.approx((0.5 + 5.0) / 2)
    assert stats["share_within_one_point"] == 0.5
    assert consistency_stats([record((2, 2, 2, 2, 2))]) == {"samples": 0}


@pytest.mark.parametrize(
    "answer",
    [
        verdict_text().replace('"format": 5,', '"format": 1, "format": 5,'),  # one key, two values
        verdict_text().replace('"scores": {', '"scores": {"format": 1}, "scores": {'),  # two scores objects
        verdict_text().replace('"format": 5', '"format": "10/10"'),  # another scale
    ],
)
def test_an_ambiguous_or_misscaled_verdict_is_asked_again_then_unscored(answer: str) -> None:
    with FakeOpenAIServer(script=[Reply(answer), Reply(answer), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server, max_retries=1), [numbered_request()])
    assert len(server.requests) == 2  # the budget: one try and one retry, never the third reply
    assert (record.status, record.score, record.dimensions) == ("failed", None, {})
    (verdict,) = record.verdicts
    assert verdict.status in ("unparsed", "partial") and verdict.attempts == 2
    with FakeOpenAIServer(script=[Reply(answer), Reply(verdict_text())]) as server:
        (record,) = judge_all(settings(server, max_retries=1), [numbered_request()])
    assert (record.status, record.dimensions["format"]) == ("ok", 5)

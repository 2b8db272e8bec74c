"""Judge requests for tests (a benchmark record built from a history, an action and the real observation), a
verdict as a judge writes it, and the LLM judge run over a list of requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging import requests_of
from awbench.judging.llm.openai_judge import create
from awbench.records import BenchmarkRecord, JudgeRequest, JudgmentRecord, Sample


def judge_request_for(
    prediction: str = "hi",
    ground_truth: str = "hi",
    action: str = "cat demo/a.txt",
    history: list[str] | None = None,
    domain: str = "terminal",
    sample_id: int | str = 1,
    system: str = "",
    current_prompt: str | None = None,
    flags: tuple[str, ...] = (),
) -> JudgeRequest:
    """`history`: earlier actions and observations, alternating (an even number of items)."""
    history = list(history or [])
    record = BenchmarkRecord(
        task=domain,
        id=sample_id,
        prompt=[*history[0::2], action],
        response=[*history[1::2], ground_truth],
        turn_idx=len(history) // 2 + 1,
        total_turns=len(history) // 2 + 1,
        system_str=system,
        current_prompt=action if current_prompt is None else current_prompt,
    )
    return JudgeRequest(
        sample=Sample(key=record.base_key(), record=record, origin="test"), prediction=prediction, flags=flags
    )


def numbered_request(i: int = 0, domain: str = "terminal") -> JudgeRequest:
    """The i-th of a run of similar requests (a shell's `cat`), in `domain`."""
    return judge_request_for(
        prediction="hello {world}",
        ground_truth="hello world",
        action=f"cat a.txt  # {i}",
        history=["ls", "a.txt  b.txt"],
        domain=domain,
        sample_id=i,
    )


def verdict_text(format: int = 5, factuality: int = 4, consistency: int = 3, realism: int = 4, quality: int = 2) -> str:
    scores = {
        "format": format,
        "factuality": factuality,
        "consistency": consistency,
        "realism": realism,
        "quality": quality,
    }
    body = json.dumps({"strengths": ["right error type"], "weaknesses": ["wrong size"], "scores": scores})
    return f"The listing matches.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


async def collect(judge: Any, requests: list[JudgeRequest], into: list[JudgmentRecord]) -> list[JudgmentRecord]:
    try:
        async for record in judge.judge(requests_of(requests)):
            into.append(record)
    finally:
        await judge.aclose()
    return into


def judge_all(
    judge_settings: JudgeSettings, requests: list[JudgeRequest], into: list[JudgmentRecord] | None = None
) -> list[JudgmentRecord]:
    return asyncio.run(collect(create(judge_settings), requests, [] if into is None else into))

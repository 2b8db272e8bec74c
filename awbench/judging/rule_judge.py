"""The offline rule judge behind the Judge protocol: deterministic, free, no network."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging.rules import RULES_VERSION, rule_score
from awbench.records import JudgmentRecord, JudgeRequest, content_hash


class RuleJudge:
    kind = "rules"

    def describe(self) -> dict[str, Any]:
        return {"rules_version": RULES_VERSION}

    def cache_key(self, request: JudgeRequest) -> str:
        return content_hash(["rules", RULES_VERSION, request.model_dump()])

    async def judge(self, requests: list[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        for request in requests:
            result = rule_score(
                domain=request.domain,
                ground_truth=request.ground_truth,
                prediction=request.prediction,
                history=[*request.history, request.action],
            )
            yield JudgmentRecord(
                key=request.key,
                domain=request.domain,
                judge="rules",
                cache_key=self.cache_key(request),
                status="ok",
                score=result.score * 100.0,
                rule=result,
            )

    async def aclose(self) -> None:
        return None


def create(settings: JudgeSettings) -> RuleJudge:
    return RuleJudge()

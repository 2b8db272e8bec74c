"""The offline rule judge behind the Judge protocol: deterministic, free, no network."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging.rules import RULES_VERSION, RuleScorer
from awbench.records import JudgeRequest, JudgmentRecord, content_hash
from awbench.world_model.messages import judge_history
from awbench.world_model.parsing import strip_observation_marker

RULES_JUDGE_PREFIX = "rules-v"


class RuleJudge:
    """Requests come in trajectory order, so each trajectory's history is indexed once for all its turns."""

    kind = "rules"
    id = f"{RULES_JUDGE_PREFIX}{RULES_VERSION}"

    def __init__(self) -> None:
        self._scorer = RuleScorer()

    async def check(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"rules_version": RULES_VERSION}

    def cache_key(self, request: JudgeRequest) -> str:
        prediction = hashlib.sha256(request.prediction.encode()).hexdigest()
        return content_hash(["rules", RULES_VERSION, request.sample.hash, prediction])

    def score(self, request: JudgeRequest) -> JudgmentRecord:
        record = request.sample.record
        result = self._scorer.score(
            domain=request.domain,
            trajectory=f"{request.domain}/{record.trajectory_id}",
            ground_truth=strip_observation_marker(record.ground_truth),
            prediction=strip_observation_marker(request.prediction),
            history=[*judge_history(record), record.action],
        )
        return JudgmentRecord(
            key=request.key, generation=request.generation, domain=request.domain, judge="rules",
            cache_key=self.cache_key(request), status="ok", score=result.score * 100.0, rule=result,
            flags=list(request.flags),
        )

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        async for request in requests:
            yield self.score(request)

    async def aclose(self) -> None:
        return None


def create(settings: JudgeSettings, endpoints: Any = None) -> RuleJudge:
    return RuleJudge()

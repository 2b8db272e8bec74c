"""The offline rule judge behind the Judge protocol: deterministic, free, no network."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging import JudgeBase, prediction_request
from awbench.judging.rules import RuleResult, RuleScorer
from awbench.judging.rules.score import RULES_VERSION, clear_caches
from awbench.judging.rules.workers import RuleTask, RuleWorkers, available_workers
from awbench.records import JudgeRequest, JudgmentRecord, PredictionRecord, RuleParts, Sample, content_hash
from awbench.world_model.messages import earlier_turns
from awbench.world_model.parsing import strip_observation_marker

RULES_JUDGE_PREFIX = "rules-v"
# Seconds of scoring in this process after which a run's further requests go to worker processes: a run
# judged sooner would not gain from workers (each takes 0.25-0.35 s to answer first), nor do the tests' runs
# (the bundled sample takes 0.08 s). Every second before the workers take over leaves the other CPUs idle.
POOL_AFTER_SECONDS = 0.2


class RuleJudge(JudgeBase):
    """Requests come in trajectory order, so each trajectory's history is indexed once for all its turns. A
    large run's requests are scored in `workers` processes (one per CPU by default; 0: all here) once this
    process has spent `pool_after` seconds on them, with the same results."""

    kind = "rules"
    id = f"{RULES_JUDGE_PREFIX}{RULES_VERSION}"

    def __init__(self, workers: int | None = None, pool_after: float | None = None) -> None:
        self._scorer = RuleScorer()
        self.workers = available_workers() if workers is None else workers
        self.pool_after = POOL_AFTER_SECONDS if pool_after is None else pool_after

    def describe(self) -> dict[str, Any]:
        return {"rules_version": RULES_VERSION}

    def request(self, sample: Sample, prediction: PredictionRecord) -> JudgeRequest | None:
        return prediction_request(sample, prediction)

    def cache_key(self, request: JudgeRequest) -> str:
        prediction = hashlib.sha256(request.prediction.encode()).hexdigest()
        return content_hash(["rules", RULES_VERSION, request.sample.hash, prediction])

    def score(self, request: JudgeRequest) -> JudgmentRecord:
        domain, trajectory, ground_truth, prediction, history = _task(request)
        result = self._scorer.score(
            domain=domain,
            trajectory=trajectory,
            ground_truth=ground_truth,
            prediction=prediction,
            history=history,
        )
        return self._record(request, result)

    def _record(self, request: JudgeRequest, result: RuleResult) -> JudgmentRecord:
        return JudgmentRecord(
            key=request.key,
            generation=request.generation,
            domain=request.domain,
            judge="rules",
            cache_key=self.cache_key(request),
            status="ok",
            score=result.score * 100.0,
            rule=RuleParts(**result._asdict()),
            flags=list(request.flags),
        )

    async def judge(self, requests: AsyncIterator[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        stream = aiter(requests)
        spent = 0.0
        async for request in stream:
            if self.workers and spent >= self.pool_after:
                break
            start = time.perf_counter()
            record = self.score(request)
            spent += time.perf_counter() - start
            yield record
        else:
            return
        self._scorer = RuleScorer()
        clear_caches()  # what this process's scoring kept; the workers keep their own
        async with RuleWorkers(self.workers) as workers:
            async for owner, result in workers.score(_tasks(request, stream)):
                yield self._record(owner, result)


def _task(request: JudgeRequest) -> RuleTask:
    record = request.sample.record
    # The observations as the data holds them, markers and all (the rule scorer reads past a marker): no
    # stripped copies to keep, and a trajectory's samples share these very objects, so a worker is sent only
    # what its last task of the trajectory did not have, found by identity.
    return (
        request.domain,
        f"{request.domain}/{record.trajectory_id}",
        strip_observation_marker(record.ground_truth),
        strip_observation_marker(request.prediction),
        [*earlier_turns(record), record.action],
    )


async def _tasks(
    first: JudgeRequest, rest: AsyncIterator[JudgeRequest]
) -> AsyncIterator[tuple[JudgeRequest, RuleTask]]:
    yield first, _task(first)
    async for request in rest:
        yield request, _task(request)


def create(settings: JudgeSettings, endpoints: Any = None) -> RuleJudge:
    return RuleJudge(workers=settings.rule_workers)

"""The stages of a run, pipelined: a sample's judging starts as soon as its prediction is saved.

Inference and every judge run at the same time, each within its own concurrency (and within a shared limit
per endpoint when they use the same one). Requests are built when they are sent, from references to the
samples, so memory holds the data once. Generations go out in trajectory order, and judge requests follow
them, so the calls of one trajectory go out close together and providers' prompt caches can reuse the
shared context.

What is reused and what is redone: a prediction is redone when it is missing or failed for a transient cause
(connection, timeout, 429, 5xx, malformed body), and, with `retry_failed`, when it failed for good
(overlength, refusal). A judgment likewise: missing, made for other inputs (its cache key), or failed
transiently; with `retry_failed`, any failed one.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from awbench.backends import Backend, GenerationRequest, trajectory_order
from awbench.config import ModelSettings
from awbench.judging import BudgetExhausted, Judge
from awbench.records import JudgeRequest, JudgmentRecord, PredictionRecord, Sample
from awbench.run.store import Evaluation, JudgeInfo, RunStore
from awbench.world_model.predictions import prediction_record

GenKey = tuple[str, int]


class StageProgress(Protocol):
    def advance(self, failed: bool = False) -> None: ...

    def drop(self) -> None:
        """One expected item will not come (a failed generation is not judged)."""
        ...


class Progress(Protocol):
    def stage(self, name: str, total: int) -> AbstractContextManager[StageProgress]: ...

    def note(self, text: str) -> None:
        """Information for the user (stdout)."""
        ...

    def warn(self, text: str) -> None:
        """A warning (stderr)."""
        ...


class StageSummary(BaseModel):
    stage: str
    computed: int = 0
    reused: int = 0
    failed: int = 0


def sample_seed(run_seed: int | None, key: str, generation: int = 0) -> int | None:
    """One seed shared by a batch makes its outputs identical: each sample (and generation) gets its own,
    stable one."""
    if run_seed is None:
        return None
    name = f"{run_seed}:{key}" if generation == 0 else f"{run_seed}:{key}:{generation}"
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")


def run_seed(model: ModelSettings) -> int | None:
    """K independent generations need distinct seeds even when no run seed was given."""
    return model.seed if model.seed is not None or model.generations == 1 else 0


def needs_generation(record: PredictionRecord | None, retry_failed: bool) -> bool:
    return record is None or (record.failed and (record.transient or retry_failed))


def reusable(record: JudgmentRecord | None, cache_key: str, retry_failed: bool) -> bool:
    if record is None or record.cache_key != cache_key:
        return False
    return record.status != "failed" or not (record.transient or retry_failed)


def offer(
    stages: list[JudgeStage], sample: Sample, prediction: PredictionRecord, retry_failed: bool
) -> list[JudgeStage]:
    """Queue what each judge asks of the prediction, where it has no reusable verdict for it, as the judge
    flags it (only what is judged is flagged: a resumed run skips the rest); those judges, in order. Judges
    under different protocols may ask about different texts of one generation."""
    takers = []
    for stage in stages:
        request = stage.judge.request(sample, prediction)
        if request is not None and stage.needs(request, retry_failed):
            stage.feed.put(stage.judge.flagged(request))
            takers.append(stage)
    return takers


class Feed:
    """Requests for one judge, as they become ready; closed when no more will come."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[JudgeRequest | None] = asyncio.Queue()
        self.fed = 0

    def put(self, request: JudgeRequest) -> None:
        self.fed += 1
        self._queue.put_nowait(request)

    def close(self) -> None:
        self._queue.put_nowait(None)

    async def __aiter__(self) -> AsyncIterator[JudgeRequest]:
        while (request := await self._queue.get()) is not None:
            yield request


@dataclass(eq=False)  # compared by identity
class JudgeStage:
    judge: Judge
    evaluation: Evaluation
    info: JudgeInfo
    existing: dict[GenKey, JudgmentRecord]
    on_first_record: Callable[[], None]
    feed: Feed = field(default_factory=Feed)
    summary: StageSummary = field(default_factory=lambda: StageSummary(stage="judge"))

    def needs(self, request: JudgeRequest, retry_failed: bool) -> bool:
        if reusable(self.existing.get((request.key, request.generation)), self.judge.cache_key(request), retry_failed):
            self.summary.reused += 1
            return False
        return True


@dataclass
class Plan:
    """What a run still has to do."""

    generations: list[GenerationRequest]
    predictions: dict[GenKey, PredictionRecord]
    judges: list[JudgeStage]
    reused_predictions: int


def plan(
    store: RunStore, samples: list[Sample], model: ModelSettings | None, judges: list[JudgeStage], retry_failed: bool
) -> Plan:
    """`model` None: no inference (judge what exists). Judge requests for existing predictions are queued in
    trajectory order."""
    predictions = store.predictions.load()
    k = model.generations if model else 1
    wanted = [(s, g) for s in samples for g in range(k)]
    seed = run_seed(model) if model else None
    todo = [
        GenerationRequest(s, g, sample_seed(seed, s.key, g))
        for s, g in wanted
        if model and needs_generation(predictions.get((s.key, g)), retry_failed)
    ]
    todo = trajectory_order(todo)
    pending = {(r.key, r.generation) for r in todo}
    ready = [GenerationRequest(s, g) for s, g in wanted if (s.key, g) not in pending]
    for request in trajectory_order(ready):
        record = predictions.get((request.key, request.generation))
        if record is not None:
            offer(judges, request.sample, record, retry_failed)
    return Plan(todo, predictions, judges, reused_predictions=len(wanted) - len(todo))


async def execute(
    store: RunStore, work: Plan, backend: Backend | None, label: str, progress: Progress, retry_failed: bool
) -> list[StageSummary]:
    """Run inference and every judge at once; stop all on the first error (the run stays resumable)."""
    samples = {r.key: r.sample for r in work.generations}
    infer_summary = StageSummary(stage="infer", reused=work.reused_predictions)
    with ExitStack() as stack:
        # Inference's stage ends when inference does, before the judges' (whose last line comes after it)
        inference = stack.enter_context(ExitStack())
        infer_bar = (
            inference.enter_context(progress.stage(f"infer {label}", len(work.generations)))
            if work.generations
            else None
        )
        bars = {
            s.judge.id: stack.enter_context(progress.stage(f"judge {s.judge.id}", total))
            if (total := s.feed.fed + len(work.generations))
            else NoBar()
            for s in work.judges
        }

        async def infer() -> None:
            try:
                if not work.generations or backend is None:
                    return
                with store.predictions.appender() as append:
                    async for generation in backend.generate(work.generations):
                        record = prediction_record(samples[generation.key], generation)
                        append(record)
                        infer_summary.computed += 1
                        infer_summary.failed += record.failed
                        assert infer_bar is not None
                        infer_bar.advance(failed=record.failed)
                        takers = offer(work.judges, samples[record.key], record, retry_failed)
                        for stage in work.judges:
                            if stage not in takers:
                                bars[stage.judge.id].drop()
                inference.close()  # its last progress line, before the judges finish
            finally:
                for stage in work.judges:
                    stage.feed.close()

        async def judge(stage: JudgeStage) -> None:
            bar = bars[stage.judge.id]
            with _lazy_appender(stage) as append:
                async for record in stage.judge.judge(aiter(stage.feed)):
                    append(record)
                    stage.summary.computed += 1
                    stage.summary.failed += record.status == "failed"
                    bar.advance(failed=record.status == "failed")

        await all_or_none([infer(), *(judge(s) for s in work.judges)])
    for stage in work.judges:  # finished without a verdict to record (every generation failed): it still exists
        if not stage.evaluation.exists():
            stage.evaluation.ensure(stage.info)
            stage.on_first_record()
        stage.summary.stage = f"judge {stage.judge.id}"
    return [infer_summary, *(s.summary for s in work.judges)]


class NoBar:
    def advance(self, failed: bool = False) -> None:
        return None

    def drop(self) -> None:
        return None


@contextmanager
def _lazy_appender(stage: JudgeStage):  # type: ignore[no-untyped-def]
    """Nothing of the evaluation is written before its first record: a judge that fails at once (a missing key,
    a 401) leaves the run as it was."""
    with ExitStack() as stack:
        append = None

        def first_or_next(record: JudgmentRecord) -> None:
            nonlocal append
            if append is None:
                stage.evaluation.ensure(stage.info)
                stage.on_first_record()
                append = stack.enter_context(stage.evaluation.judgments.appender())
            append(record)

        yield first_or_next


async def all_or_none(coroutines: list[Awaitable[Any]]) -> None:
    """Run together; the first exception cancels the rest and is raised (BudgetExhausted after the others; of
    errors that came together, the first coroutine's)."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, _pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        errors = [t.exception() for t in tasks if t in done and t.exception() is not None]
        if errors:
            budget = [e for e in errors if isinstance(e, BudgetExhausted)]
            raise (next((e for e in errors if not isinstance(e, BudgetExhausted)), None) or budget[0])
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

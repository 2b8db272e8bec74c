"""The run, stage by stage: prepare (data + run directory), infer, judge, score.

Every stage reads what the store already holds and computes only what is missing, so running the same
command again resumes, and each stage can be rerun on its own. This module is the Python API the CLI wraps.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime, timezone
from typing import Protocol

from pydantic import BaseModel

from awbench.backends import GenerationRequest, create_backend
from awbench.config import DataSettings, JudgeSettings, RunConfig, differing_settings
from awbench.dataset import LoadedData, load_samples
from awbench.judging import Judge, create_judges
from awbench.openai_client import api_key
from awbench.messages import judge_request, world_model_messages
from awbench.predictions import prediction_record
from awbench.records import JudgmentRecord, JudgeRequest, PredictionRecord, Sample
from awbench.scoring import ScoresFile, score_table
from awbench.stats import spearman
from awbench.store import RunManifest, RunStore, environment_facts


MAX_WARNINGS_SHOWN = 5


class PipelineError(Exception):
    """A run cannot go on for a reason the user can act on."""


class StageProgress(Protocol):
    def advance(self, failed: bool = False) -> None: ...


class Progress(Protocol):
    def stage(self, name: str, total: int) -> AbstractContextManager[StageProgress]: ...

    def note(self, text: str) -> None: ...


class _SilentStage:
    def advance(self, failed: bool = False) -> None:
        return None


class SilentProgress:
    @contextmanager
    def stage(self, name: str, total: int) -> Iterator[StageProgress]:
        yield _SilentStage()

    def note(self, text: str) -> None:
        return None


class StageSummary(BaseModel):
    stage: str
    computed: int = 0
    reused: int = 0
    failed: int = 0


def prepare(
    config: RunConfig, overwrite: bool = False, progress: Progress = SilentProgress()
) -> tuple[RunStore, list[Sample]]:
    """Load the data and open the run directory, refusing to mix settings into an existing run."""
    data = load_samples(config.data)
    _report_data_problems(data, progress)
    if not data.samples:
        raise PipelineError(f"no samples selected from {data.source}: check --domains, --ids and --limit")
    store = RunStore(config.run_dir)
    if store.exists() and not overwrite:
        manifest = store.read_manifest()
        conflicts = _conflicts(manifest, config, data)
        if conflicts:
            raise PipelineError(
                f"run {store.path} was made with other settings:\n  " + "\n  ".join(conflicts)
                + "\nuse another --run-name, or --overwrite to replace the run"
            )
        manifest.config = config.model_copy(update={"judge": config.judge or manifest.config.judge})
        store.write_manifest(manifest)
    else:
        store.create(_new_manifest(config, data), overwrite=overwrite)
    return store, data.samples


def _report_data_problems(data: LoadedData, progress: Progress) -> None:
    if data.skipped:
        progress.note(f"skipped {data.skipped} invalid records (--skip-invalid); `awbench data validate` lists them")
    warnings = [p for p in data.problems if p.severity == "warning"]
    for problem in warnings[:MAX_WARNINGS_SHOWN]:
        progress.note(f"warning: {problem}")
    if len(warnings) > MAX_WARNINGS_SHOWN:
        progress.note(f"... and {len(warnings) - MAX_WARNINGS_SHOWN} more warnings")


def _conflicts(manifest: RunManifest, config: RunConfig, data: LoadedData) -> list[str]:
    old = manifest.config
    conflicts = [f"data.{d}" for d in differing_settings(old.data, config.data)]
    conflicts += [f"model.{d}" for d in differing_settings(old.model, config.model)]
    if old.judge and config.judge:
        conflicts += [f"judge.{d}" for d in differing_settings(old.judge, config.judge)]
    if manifest.data_fingerprint != data.fingerprint:
        conflicts.append(f"data fingerprint: {manifest.data_fingerprint[:12]} -> {data.fingerprint[:12]}")
    return conflicts


def _new_manifest(config: RunConfig, data: LoadedData) -> RunManifest:
    return RunManifest(
        config=config, data_source=data.source, data_fingerprint=data.fingerprint, samples=len(data.samples),
        **environment_facts(),
    )


def run_samples(store: RunStore, load: Callable[[DataSettings], LoadedData] = load_samples) -> list[Sample]:
    """The samples of an existing run, reloaded from its data source and checked against its fingerprint."""
    manifest = store.read_manifest()
    data = load(manifest.config.data)
    if data.fingerprint != manifest.data_fingerprint:
        raise PipelineError(
            f"the data at {data.source} is not what run {store.name} was made with "
            f"(fingerprint {manifest.data_fingerprint[:12]}, now {data.fingerprint[:12]})"
        )
    return data.samples


def sample_seed(run_seed: int | None, key: str) -> int | None:
    """One seed shared by a batch makes its outputs identical: each sample gets its own, stable one."""
    if run_seed is None:
        return None
    return int.from_bytes(hashlib.sha256(f"{run_seed}:{key}".encode()).digest()[:4], "big")


async def infer(store: RunStore, samples: list[Sample], progress: Progress = SilentProgress()) -> StageSummary:
    settings = store.read_manifest().config.model
    done = store.predictions.load()
    todo = [s for s in samples if s.key not in done]
    summary = StageSummary(stage="infer", reused=len(samples) - len(todo))
    if not todo:
        progress.note(f"infer: nothing to do, all {len(samples)} predictions are already in {store.path}")
        return summary
    by_key = {s.key: s for s in todo}
    requests = [
        GenerationRequest(sample=s, messages=world_model_messages(s.record), seed=sample_seed(settings.seed, s.key))
        for s in todo
    ]
    backend = create_backend(settings)
    try:
        with progress.stage(f"infer {settings.model}", len(todo)) as stage:
            async for generation in backend.generate(requests):
                record = prediction_record(by_key[generation.key], generation)
                store.predictions.append(record)
                summary.computed += 1
                summary.failed += record.failed
                stage.advance(failed=record.failed)
    finally:
        await backend.aclose()
    return summary


def judge_requests(samples: list[Sample], predictions: dict[str, PredictionRecord]) -> list[JudgeRequest]:
    """Requests for every prediction that can be judged; failed generations are scored by the failure policy."""
    return [
        judge_request(s.key, s.record, predictions[s.key].prediction)
        for s in samples
        if s.key in predictions and not predictions[s.key].failed
    ]


def _reusable(existing: JudgmentRecord | None, cache_key: str) -> bool:
    return existing is not None and existing.cache_key == cache_key and existing.status != "failed"


async def judge(store: RunStore, samples: list[Sample], progress: Progress = SilentProgress()) -> list[StageSummary]:
    manifest = store.read_manifest()
    if manifest.config.judge is None:
        raise PipelineError(f"run {store.name} has no judge settings: give --judge")
    require_judge_key(manifest.config.judge)
    judges = create_judges(manifest.config.judge)
    try:
        # Read once for all judges: each judge only looks up its own kind's records.
        requests = judge_requests(samples, store.predictions.load())
        existing = store.judgments.load()
        summaries = [await _judge_with(j, store, requests, existing, progress) for j in judges]
    finally:
        for j in judges:
            await j.aclose()
    manifest.judges = {**manifest.judges, **{j.kind: j.describe() for j in judges}}
    store.write_manifest(manifest)
    return summaries


def require_judge_key(settings: JudgeSettings) -> None:
    """A missing key must stop the run before anything is spent, not at the first judge call."""
    if settings.uses_llm:
        api_key(settings.base_url or os.environ.get("OPENAI_BASE_URL"), settings.api_key_env)


async def _judge_with(
    judge_: Judge,
    store: RunStore,
    requests: list[JudgeRequest],
    existing: dict[tuple[str, str], JudgmentRecord],
    progress: Progress,
) -> StageSummary:
    if isinstance(getattr(judge_, "spent_usd", None), float):  # --max-cost caps the run's whole spend, resumes included
        judge_.spent_usd = _total_cost(r for (_, kind), r in existing.items() if kind == judge_.kind) or 0.0
    todo = [r for r in requests if not _reusable(existing.get((r.key, judge_.kind)), judge_.cache_key(r))]
    summary = StageSummary(stage=f"judge:{judge_.kind}", reused=len(requests) - len(todo))
    if not todo:
        progress.note(f"judge ({judge_.kind}): nothing to do, {len(requests)} verdicts already in {store.path}")
        return summary
    with progress.stage(f"judge ({judge_.kind})", len(todo)) as stage:
        async for record in judge_.judge(todo):
            store.judgments.append(record)
            summary.computed += 1
            summary.failed += record.status == "failed"
            stage.advance(failed=record.status == "failed")
    return summary


def finish(store: RunStore) -> None:
    manifest = store.read_manifest()
    manifest.finished_at = datetime.now(timezone.utc)
    store.write_manifest(manifest)


def score(store: RunStore, samples: list[Sample]) -> ScoresFile:
    """Compute and write scores.json from what the run holds."""
    manifest = store.read_manifest()
    policy = manifest.config.scoring.failure_policy
    predictions = store.predictions.load()
    judgments = store.judgments.load()
    keys = [(s.key, s.domain) for s in samples]
    by_kind: dict[str, dict[str, JudgmentRecord]] = {"llm": {}, "rules": {}}
    for (key, kind), record in judgments.items():
        by_kind[kind][key] = record
    tables = {kind: score_table(kind, keys, predictions, records, policy) for kind, records in by_kind.items()}
    judge_settings = manifest.config.judge
    primary = "llm" if judge_settings is None or judge_settings.uses_llm else "rules"
    both = judge_settings is not None and judge_settings.kind == "both"
    scores = ScoresFile.from_tables(
        store.name,
        tables[primary],
        policy,
        rules=tables["rules"] if both else None,
        agreement=rule_llm_agreement(keys, by_kind["llm"], by_kind["rules"]) if both else None,
        judge_consistency=_judge_consistency(by_kind["llm"]),
        cost_usd=_total_cost(by_kind["llm"].values()),
        usage=_usage_totals(predictions.values()),
    )
    store.write_scores(scores)
    return scores


def rule_llm_agreement(
    keys: list[tuple[str, str]], llm: dict[str, JudgmentRecord], rules: dict[str, JudgmentRecord]
) -> dict[str, float | None]:
    """Spearman correlation of the rule score with the LLM total, per domain and over all samples."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for key, domain in keys:
        a, b = rules.get(key), llm.get(key)
        if a and b and a.score is not None and b.score is not None:
            pairs.setdefault(domain, []).append((a.score, b.score))
    everything = [p for domain_pairs in pairs.values() for p in domain_pairs]
    result = {domain: spearman(*zip(*p)) if len(p) > 1 else None for domain, p in pairs.items()}
    result["overall"] = spearman(*zip(*everything)) if len(everything) > 1 else None
    return result


def _judge_consistency(records: dict[str, JudgmentRecord]) -> dict[str, float] | None:
    repeated = [r for r in records.values() if len(r.verdicts) > 1]
    if not repeated:
        return None
    from awbench.judging.llm import consistency_stats  # only runs judged K > 1 times by an LLM get here

    return consistency_stats(repeated)


def _total_cost(records: Iterable[JudgmentRecord]) -> float | None:
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return sum(costs) if costs else None


def _usage_totals(predictions: Iterable[PredictionRecord]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for record in predictions:
        for name, value in record.usage.model_dump(exclude={"schema_version"}).items():
            if value is not None:
                totals[name] = totals.get(name, 0) + value
    return totals


def exit_code(scores: ScoresFile, max_failure_rate: float) -> int:
    """0 when the run is good; 1 when failures exceed the tolerated rate or nothing at all was scored."""
    n = sum(d.n for d in scores.domains.values())
    failures = sum(d.failed + d.unscored for d in scores.domains.values())
    if scores.overall is None or n == 0 or failures / n > max_failure_rate:
        return 1
    return 0


class DryRunEstimate(BaseModel):
    samples: int
    generations: int  # candidate requests still to make
    judge_calls: int
    judge_prompt_tokens: int
    judge_completion_tokens: int
    judge_cost_usd: float | None


def estimate(config: RunConfig) -> DryRunEstimate:
    """What a run would still spend, without spending anything or writing any file. Predictions not made
    yet are assumed as long as the real observation."""
    samples = load_samples(config.data).samples
    store = RunStore(config.run_dir)
    predictions = store.predictions.load() if store.exists() else {}
    existing = store.judgments.load() if store.exists() else {}
    assumed = {
        s.key: predictions.get(s.key)
        or PredictionRecord(key=s.key, domain=s.domain, sample_hash=s.hash, status="ok", prediction=s.record.ground_truth)
        for s in samples
    }
    result = DryRunEstimate(samples=len(samples), generations=sum(s.key not in predictions for s in samples),
                            judge_calls=0, judge_prompt_tokens=0, judge_completion_tokens=0, judge_cost_usd=None)
    if config.judge is None or not config.judge.uses_llm:
        return result
    (llm,) = create_judges(config.judge.model_copy(update={"kind": "llm"}))
    requests = [r for r in judge_requests(samples, assumed) if not _reusable(existing.get((r.key, "llm")), llm.cache_key(r))]
    cost = llm.estimate(requests)
    return result.model_copy(update={
        "judge_calls": cost.calls, "judge_prompt_tokens": cost.prompt_tokens,
        "judge_completion_tokens": cost.completion_tokens, "judge_cost_usd": cost.cost_usd,
    })


class RunOutcome(BaseModel):
    stages: list[StageSummary]
    scores: ScoresFile
    exit_code: int


async def run(config: RunConfig, overwrite: bool = False, progress: Progress = SilentProgress()) -> RunOutcome:
    """Infer, judge and score in one resumable call."""
    if config.judge is None:
        raise PipelineError("a run needs judge settings")
    require_judge_key(config.judge)
    store, samples = prepare(config, overwrite, progress)
    stages = [await infer(store, samples, progress)]
    stages += await judge(store, samples, progress)
    scores = score(store, samples)
    finish(store)
    return RunOutcome(stages=stages, scores=scores, exit_code=exit_code(scores, config.scoring.max_failure_rate))

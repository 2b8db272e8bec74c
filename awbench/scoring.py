"""Predictions and judgments -> scores per domain and overall (pure functions).

A sample's total is the mean of its rubric dimensions (1..5), reported on 0..100 as (x - 1) / 4 * 100;
the rule judge's score is already on 0..1 and reported x 100. Overall is the macro mean of the domain
scores (the published leaderboard's convention); the sample-weighted micro mean is reported beside it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel, Field

from awbench.domains import DIMENSIONS, DOMAINS
from awbench.records import SCHEMA_VERSION, JudgeKind, JudgmentRecord, PredictionRecord

FailurePolicy = Literal["minimum", "exclude"]


def to_100(score_1_to_5: float) -> float:
    return (score_1_to_5 - 1.0) / 4.0 * 100.0


class DomainScore(BaseModel):
    score: float | None  # 0..100; None when nothing in the domain could be scored
    n: int  # samples
    scored: int  # samples in the mean (failures count here under the "minimum" policy)
    failed: int  # failed generations (error, empty, truncated, overlength)
    unscored: int  # predictions the judge could not score, or not judged yet
    dimensions: dict[str, float] = Field(default_factory=dict)  # 0..100 per rubric dimension


class ScoreTable(BaseModel):
    judge: JudgeKind
    overall: float | None  # macro: mean of the domain scores
    overall_micro: float | None  # mean over samples
    domains: dict[str, DomainScore]
    n: int
    failed: int
    unscored: int


class ScoresFile(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run: str
    judge: JudgeKind  # which judge the top-level numbers come from
    failure_policy: FailurePolicy
    overall: float | None
    overall_micro: float | None
    domains: dict[str, DomainScore]
    rules: ScoreTable | None = None  # the rule score, beside an LLM judge's (`--judge both`)
    agreement: dict[str, float | None] | None = None  # Spearman(rule score, LLM total) per domain and "overall"
    judge_consistency: dict[str, float] | None = None  # with several verdicts per prediction
    cost_usd: float | None = None
    usage: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_tables(cls, run: str, primary: ScoreTable, policy: FailurePolicy, **extra: Any) -> ScoresFile:
        return cls(
            run=run, judge=primary.judge, failure_policy=policy, overall=primary.overall,
            overall_micro=primary.overall_micro, domains=primary.domains, **extra,
        )


def sample_points(
    kind: JudgeKind,
    keys: Iterable[tuple[str, str]],
    predictions: Mapping[str, PredictionRecord],
    judgments: Mapping[str, JudgmentRecord],
    policy: FailurePolicy,
) -> dict[str, list[tuple[str, float, dict[str, float]]]]:
    """Per domain, the (key, score 0..100, dimensions 0..100) of every sample that enters the means.
    Only the LLM judge has rubric dimensions."""
    points: dict[str, list[tuple[str, float, dict[str, float]]]] = defaultdict(list)
    failure_dimensions = {d: 0.0 for d in DIMENSIONS} if kind == "llm" else {}
    for key, domain in keys:
        prediction = predictions.get(key)
        if prediction is not None and prediction.failed:
            if policy == "minimum":  # dropping it would reward a model for failing
                points[domain].append((key, 0.0, dict(failure_dimensions)))
            continue
        judgment = judgments.get(key)
        if prediction is None or judgment is None or judgment.score is None:
            continue
        dims = {d: to_100(v) for d, v in judgment.dimensions.items()}
        points[domain].append((key, judgment.score, dims))
    return points


def score_table(
    kind: JudgeKind,
    keys: list[tuple[str, str]],
    predictions: Mapping[str, PredictionRecord],
    judgments: Mapping[str, JudgmentRecord],
    policy: FailurePolicy,
) -> ScoreTable:
    points = sample_points(kind, keys, predictions, judgments, policy)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: {"n": 0, "failed": 0, "unscored": 0})
    for key, domain in keys:
        count = counts[domain]
        count["n"] += 1
        prediction = predictions.get(key)
        if prediction is not None and prediction.failed:
            count["failed"] += 1
        elif prediction is None or key not in judgments or judgments[key].score is None:
            count["unscored"] += 1

    domains: dict[str, DomainScore] = {}
    for domain in sorted(counts, key=_domain_order):
        scores = [score for _, score, _ in points[domain]]
        dims = {
            d: fmean(values)
            for d in DIMENSIONS
            if (values := [p[2][d] for p in points[domain] if d in p[2]])
        }
        domains[domain] = DomainScore(
            score=fmean(scores) if scores else None, scored=len(scores), dimensions=dims, **counts[domain]
        )
    domain_scores = [d.score for d in domains.values() if d.score is not None]
    all_scores = [score for domain in domains for _, score, _ in points[domain]]
    return ScoreTable(
        judge=kind,
        overall=macro_overall(domain_scores) if domain_scores else None,
        overall_micro=fmean(all_scores) if all_scores else None,
        domains=domains,
        n=sum(c["n"] for c in counts.values()),
        failed=sum(c["failed"] for c in counts.values()),
        unscored=sum(c["unscored"] for c in counts.values()),
    )


def macro_overall(domain_scores: Iterable[float]) -> float:
    """Every domain weighs the same, whatever its number of samples."""
    return fmean(domain_scores)


def failure_rate(table: ScoreTable) -> float:
    return (table.failed + table.unscored) / table.n if table.n else 1.0


def _domain_order(domain: str) -> tuple[int, str]:
    return (DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain)

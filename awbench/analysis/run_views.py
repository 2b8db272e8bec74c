"""What `awbench show --format json` prints, one model per view, each with `schema_version` and `view`: a run's
scores with intervals (`RunSummary`), samples in detail (`SampleList`), scores along trajectories
(`GrowthView`). Built from the same functions as the terminal views."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from awbench.analysis.compare import Consistency, LengthBias, judge_consistency, run_length_bias
from awbench.analysis.growth import TURN_BINS, Axis, GrowthTable, RunGrowth, Trend, run_units, trends
from awbench.analysis.options import OVERALL
from awbench.analysis.runs import RunData, point_summary, run_intervals
from awbench.analysis.sample_view import SampleView
from awbench.analysis.turing import RunTuring, run_turing_tests
from awbench.domains import partial_label
from awbench.records import SCHEMA_VERSION, JudgeKind
from awbench.run.scoring import Completeness
from awbench.run.variance import VarianceComponents


class DomainSummary(BaseModel):
    n: int  # samples in the mean
    score: float  # 0..100
    lo: float | None  # its 95% bootstrap interval over trajectories; None: too few trajectories to tell
    hi: float | None
    dimensions: dict[str, float]  # 0..100 per rubric dimension; LLM judges only


class RunSummary(BaseModel):
    """`show RUN`: one evaluation's scores per domain and overall, with intervals, length bias and agreement."""

    schema_version: int = SCHEMA_VERSION
    view: Literal["summary"] = "summary"
    run: str
    judge: str  # the judge id shown
    kind: JudgeKind
    judges: list[str]  # every evaluation of the run, the primary first
    completeness: Completeness
    generations: int
    domains: dict[str, DomainSummary]  # the domains with scores, in order, then "overall" (with all seven)
    partial: str | None = None  # "partial (3 of 7 domains)": no Overall
    variance: VarianceComponents | None = None  # standard errors and their sources (`awbench.run.variance`)
    length_bias: LengthBias  # prediction/ground-truth length bin -> (n, mean score)
    turn_trend: Trend | None  # overall, per doubling of the turn index
    consistency: Consistency | None  # with repeated verdicts per prediction
    agreement: dict[str, float | None] | None  # Spearman of rule score and LLM total, per domain
    turing: list[RunTuring] = []  # the run's Turing tests (`awbench turing`), by judge id


class SampleList(BaseModel):
    """`show RUN --sample KEY | --worst N | --failed | --flagged`: the samples chosen, each in detail."""

    schema_version: int = SCHEMA_VERSION
    view: Literal["samples"] = "samples"
    run: str
    judge: str
    selection: Literal["sample", "worst", "failed", "flagged"]
    matched: int  # samples that match, before --limit
    samples: list[SampleView]


class GrowthView(BaseModel):
    """`show RUN --by-turn | --by-context`: scores by bin and domain, with trends, for the axes asked for."""

    schema_version: int = SCHEMA_VERSION
    view: Literal["growth"] = "growth"
    run: str
    judge: str
    axes: dict[Axis, GrowthTable]


def run_summary(data: RunData, judge_id: str, resamples: int, seed: int) -> RunSummary:
    evaluation = data.evaluation(judge_id)
    ci = run_intervals(data, judge_id, resamples, seed)
    points = data.points(judge_id)
    domains = {
        name: DomainSummary(
            n=n,
            score=score,
            lo=ci[name]["score"][0] if name in ci else None,
            hi=ci[name]["score"][1] if name in ci else None,
            dimensions=dims if evaluation.kind == "llm" else {},
        )
        for name, (n, score, dims) in point_summary(points).items()
    }
    scores = evaluation.scores
    return RunSummary(
        run=data.name,
        judge=judge_id,
        kind=evaluation.kind,
        judges=list(data.evaluations),
        completeness=data.completeness(judge_id),
        generations=data.generations,
        domains=domains,
        partial=partial_label({d: 0.0 for d, pts in points.items() if pts}),
        variance=data.variance(judge_id),
        length_bias=run_length_bias(data, judge_id),
        turn_trend=trends(run_units(data, judge_id, "turn"), TURN_BINS, resamples, seed).get(OVERALL),
        consistency=judge_consistency(data, judge_id),
        agreement=scores.agreement if scores else None,
        turing=run_turing_tests(data.store),
    )


def growth_view(growth: RunGrowth, axes: list[Axis]) -> GrowthView:
    return GrowthView(run=growth.run, judge=growth.judge, axes={axis: growth.table(axis) for axis in axes})

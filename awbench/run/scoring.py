"""Predictions and judgments -> scores per domain and overall (pure functions).

A generation's score is the mean of its rubric dimensions (1..5), reported on 0..100 as (x - 1) / 4 * 100;
the rule judge's score is already on 0..1 and reported x 100. A sample's score is the mean over its K
generations (K = 1 unless `--generations K`). Overall is the macro mean of the domain scores (the published
leaderboard's convention); the sample-weighted micro mean is reported beside it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean, stdev
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS, macro_overall, partial_label, to_100
from awbench.judging.injection import INJECTION_FLAG
from awbench.records import FINITE_NUMBERS, SCHEMA_VERSION, JudgeKind, JudgmentRecord, PredictionRecord, Score
from awbench.run.failures import FailureGroup
from awbench.run.reference_scores import ReferenceDomain, ReferenceScores
from awbench.run.variance import Generation, Sample, VarianceComponents, components, noise_weight, verdict_scores

FailurePolicy = Literal["minimum", "exclude"]
GenKey = tuple[str, int]  # (sample key, generation)
Point = tuple[str, float, dict[str, float]]  # (sample key, score 0..100, dimensions 0..100)


class DomainScore(BaseModel):
    model_config = FINITE_NUMBERS  # as every model of scores.json: a file holding NaN or text is refused, naming it

    score: Score | None  # None when nothing in the domain could be scored
    n: int  # samples
    scored: int  # samples in the mean (failures count here under the "minimum" policy)
    failed: int  # failed generations (error, empty, truncated, overlength)
    unscored: int  # generations the judge could not score, or not judged yet
    pending: int = 0  # of those, not judged yet (no prediction, or no verdict record): the evaluation is incomplete
    suspected_injection: int = 0  # predictions flagged as addressing the judge
    generation_spread: float | None = Field(None, ge=0)  # with K > 1: the mean over samples of the sample SD
    dimensions: dict[str, Score] = Field(default_factory=dict)  # per rubric dimension


class Completeness(BaseModel):
    """How many generations of the run's selection (samples x K) have a final outcome: a verdict record, or a
    failed prediction (scored by the failure policy). Only a complete evaluation is ranked or exported."""

    judged: int
    selected: int
    stopped: str | None = Field(None, exclude=True)  # why judging stopped short ("stopped by --max-cost")

    @property
    def complete(self) -> bool:
        return self.judged >= self.selected

    def label(self) -> str:
        """ "complete", "incomplete (11 of 65 judged)" or "incomplete (11 of 65 judged, stopped by --max-cost)"."""
        if self.complete:
            return "complete"
        return f"incomplete ({self.judged} of {self.selected} judged{', ' + self.stopped if self.stopped else ''})"

    def pending_note(self) -> str | None:
        """ "54 not judged yet (stopped by --max-cost)": waiting, which is not failing."""
        if self.complete:
            return None
        return f"{self.selected - self.judged} not judged yet" + (f" ({self.stopped})" if self.stopped else "")


def resume_advice(run: object) -> str:
    """What finishes an unfinished run (`run`: as the user gives it): scoring it as it is does not."""
    return (
        f"finish it with the same `awbench run` command or `awbench judge {run}` (with a higher --max-cost if "
        "the cap stopped it); `awbench score` shows an unfinished run's scores, which are never ranked"
    )


class ScoreTable(BaseModel):
    model_config = FINITE_NUMBERS

    judge: JudgeKind
    overall: Score | None  # macro: mean of the domain scores; None unless all seven have one (`partial`)
    overall_micro: Score | None  # mean over samples; None as `overall`
    domains: dict[str, DomainScore]
    n: int
    failed: int
    unscored: int
    pending: int = 0  # generations not judged yet (in `unscored` too)
    generations: int = 1

    def completeness(self, stopped: str | None = None) -> Completeness:
        selected = self.n * self.generations
        return Completeness(judged=selected - self.pending, selected=selected, stopped=stopped)

    def partial(self) -> str | None:
        """ "partial (3 of 7 domains)" when some domain has no score, so there is no Overall."""
        return partial_label({d: s.score for d, s in self.domains.items()})


class ScoresFile(BaseModel):
    model_config = FINITE_NUMBERS

    schema_version: int = SCHEMA_VERSION
    run: str
    judge: JudgeKind  # which kind of judge the top-level numbers come from
    judge_id: str | None = None  # which evaluation of the run
    failure_policy: FailurePolicy
    generations: int = 1  # K generations per sample
    overall: Score | None
    overall_micro: Score | None
    domains: dict[str, DomainScore]
    # Under the reference protocol and for imported verdicts: the numbers the reference eval.py prints for the
    # same generations and answers (ranked beside the published rows), and why they differ from these.
    reference: ReferenceScores | None = None
    rules: ScoreTable | None = None  # the rule score, beside an LLM judge's (`--judge both`)
    agreement: dict[str, float | None] | None = None  # Spearman(rule score, LLM total) per domain and "overall"
    # Left for readers of earlier files: `variance.judge_sd` is the judge's documented self-agreement.
    judge_consistency: dict[str, float] | None = None
    variance: VarianceComponents | None = None  # judge, generation and item noise (`awbench.run.variance`)
    cost_usd: float | None = Field(None, ge=0)  # the evaluation's calls together
    usage: dict[str, int] = Field(default_factory=dict)  # the candidate's tokens
    judge_usage: dict[str, int] = Field(default_factory=dict)  # the judge's tokens, cached prompt tokens included
    failures: list[FailureGroup] = Field(default_factory=list)  # why samples failed or went unscored, by reason
    stopped: str | None = None  # why judging stopped before every generation was judged (judge.json's)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def completeness(self) -> Completeness:
        """Written to scores.json: `judged` of `selected` generations have a final outcome."""
        return self.table().completeness(self.stopped)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def partial(self) -> str | None:
        """Written to scores.json: "partial (3 of 7 domains)" when `overall` is null for want of domains."""
        return self.table().partial()

    @classmethod
    def from_tables(cls, run: str, primary: ScoreTable, policy: FailurePolicy, **extra: Any) -> ScoresFile:
        return cls(
            run=run,
            judge=primary.judge,
            failure_policy=policy,
            overall=primary.overall,
            overall_micro=primary.overall_micro,
            domains=primary.domains,
            **extra,
        )

    def dimension_overall(self) -> tuple[dict[str, float], dict[str, float]]:
        """Each rubric dimension's Overall, as the score's: macro (the mean of the domains') and micro (over
        samples: the domains' weighted by the samples in their means)."""
        macro, micro = {}, {}
        for dim in DIMENSIONS:
            rows = [(d.dimensions[dim], d.scored) for d in self.domains.values() if dim in d.dimensions]
            if rows:
                macro[dim] = fmean(value for value, _ in rows)
                if weight := sum(n for _, n in rows):
                    micro[dim] = sum(value * n for value, n in rows) / weight
        return macro, micro

    def generations_note(self) -> str | None:
        """With K > 1 generations: how a sample is scored, and the spread between its generations."""
        if self.generations < 2:
            return None
        spread = ", ".join(
            f"{DOMAIN_LABELS.get(d, d)} {s.generation_spread:.2f}"
            for d, s in self.domains.items()
            if s.generation_spread is not None
        )
        return (
            f"{self.generations} generations per sample (a sample scores their mean); spread between "
            f"generations, the mean per-sample standard deviation (n - 1; 0..100): {spread or 'n/a'}"
        )

    def flagged_note(self, run: str) -> str | None:
        """How many predictions look addressed to the judge, per domain, and how to list them (`run`: the run
        as `awbench show` finds it)."""
        flagged = sum(d.suspected_injection for d in self.domains.values())
        if not flagged:
            return None
        where = ", ".join(
            f"{DOMAIN_LABELS.get(d, d)} {s.suspected_injection}"
            for d, s in self.domains.items()
            if s.suspected_injection
        )
        return (
            f"{flagged} predictions look addressed to the judge (suspected_injection: {where}); "
            f"see `awbench show {run} --flagged`"
        )

    def ranked(self) -> ScoresFile:
        """The numbers this evaluation is ranked and exported by: with a reference reading, what eval.py prints
        (`scored`: the rows it counts; failures and unscored samples as awbench counts them); otherwise these."""
        if self.reference is None:
            return self
        domains = {}
        for d, strict in self.domains.items():
            # eval.py's line of the domain: its samples whose task is spelled otherwise are grouped apart.
            r = self.reference.domains.get(d) or ReferenceDomain(score=None, n=0, valid=0)
            update = {"score": r.score, "scored": r.valid, "dimensions": r.dimensions, "generation_spread": None}
            domains[d] = strict.model_copy(update=update)
        return self.model_copy(
            update={
                "overall": self.reference.overall,
                "overall_micro": self.reference.overall_printed,
                "domains": domains,
            }
        )

    def table(self) -> ScoreTable:
        domains = self.domains.values()
        return ScoreTable(
            judge=self.judge,
            overall=self.overall,
            overall_micro=self.overall_micro,
            domains=self.domains,
            n=sum(d.n for d in domains),
            failed=sum(d.failed for d in domains),
            unscored=sum(d.unscored for d in domains),
            pending=sum(d.pending for d in domains),
            generations=self.generations,
        )


Outcome = Literal["scored", "failed", "unscored", "pending"]


def generation_outcome(prediction: PredictionRecord | None, judgment: JudgmentRecord | None) -> Outcome:
    """What became of one generation: a failed generation (scored by the failure policy), one the judge could not
    score, one not judged yet (no prediction, or no verdict record: `pending`, also counted as unscored)."""
    if prediction is not None and prediction.failed:
        return "failed"
    if prediction is None or judgment is None:
        return "pending"
    return "unscored" if judgment.score is None else "scored"


GenerationPoint = tuple[float, dict[str, float]] | None  # a generation's score and dimensions; None: not in the means


def generation_points(
    kind: JudgeKind,
    keys: Iterable[tuple[str, str]],
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: FailurePolicy,
    generations: int = 1,
) -> dict[str, list[tuple[str, list[GenerationPoint]]]]:
    """Per domain, every sample with one entry per generation. A failed generation scores 0 under the
    "minimum" policy (dropping it would reward a model for failing) and is left out (None) under "exclude";
    an unscored one is left out. Only the LLM judge has rubric dimensions."""
    points: dict[str, list[tuple[str, list[GenerationPoint]]]] = defaultdict(list)
    for key, domain in keys:
        points[domain].append(
            (key, [_generation_point(kind, (key, g), predictions, judgments, policy) for g in range(generations)])
        )
    return points


def sample_points(
    kind: JudgeKind,
    keys: Iterable[tuple[str, str]],
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: FailurePolicy,
    generations: int = 1,
) -> dict[str, list[Point]]:
    """Per domain, every sample that enters the means, with its mean over its generations in the means."""
    points: dict[str, list[Point]] = defaultdict(list)
    for domain, samples in generation_points(kind, keys, predictions, judgments, policy, generations).items():
        for key, per_generation in samples:
            scored = [p for p in per_generation if p is not None]
            if scored:
                dims = {d: fmean(v) for d in DIMENSIONS if (v := [p[1][d] for p in scored if d in p[1]])}
                points[domain].append((key, fmean(p[0] for p in scored), dims))
    return points


def _generation_point(
    kind: JudgeKind,
    key: GenKey,
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: FailurePolicy,
) -> tuple[float, dict[str, float]] | None:
    prediction = predictions.get(key)
    if prediction is None:
        return None
    if prediction.failed:
        return (0.0, {d: 0.0 for d in DIMENSIONS} if kind == "llm" else {}) if policy == "minimum" else None
    judgment = judgments.get(key)
    if judgment is None or judgment.score is None:
        return None
    return judgment.score, {d: to_100(v) for d, v in judgment.dimensions.items()}


def generation_spread(
    keys: Iterable[tuple[str, str]], judgments: Mapping[GenKey, JudgmentRecord], generations: int
) -> dict[str, float]:
    """Per domain, the mean over samples of the sample standard deviation (n - 1) of their scored generations;
    a sample with fewer than two has no spread and is left out."""
    spreads: dict[str, list[float]] = defaultdict(list)
    for key, domain in keys:
        scores = [j.score for g in range(generations) if (j := judgments.get((key, g))) and j.score is not None]
        if len(scores) >= 2:
            spreads[domain].append(stdev(scores))
    return {domain: fmean(values) for domain, values in spreads.items()}


def score_table(
    kind: JudgeKind,
    keys: list[tuple[str, str]],
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: FailurePolicy,
    generations: int = 1,
) -> ScoreTable:
    points = sample_points(kind, keys, predictions, judgments, policy, generations)
    spreads = generation_spread(keys, judgments, generations) if generations > 1 else {}
    counts: dict[str, dict[str, int]] = defaultdict(
        lambda: {"n": 0, "failed": 0, "unscored": 0, "pending": 0, "suspected_injection": 0}
    )
    for key, domain in keys:
        count = counts[domain]
        count["n"] += 1
        for g in range(generations):
            judgment = judgments.get((key, g))
            outcome = generation_outcome(predictions.get((key, g)), judgment)
            if outcome == "failed":
                count["failed"] += 1
            elif outcome != "scored":
                count["unscored"] += 1
                count["pending"] += outcome == "pending"
            if judgment is not None and INJECTION_FLAG in judgment.flags:
                count["suspected_injection"] += 1

    domains: dict[str, DomainScore] = {}
    for domain in sorted(counts, key=_domain_order):
        scores = [score for _, score, _ in points[domain]]
        dims = {d: fmean(values) for d in DIMENSIONS if (values := [p[2][d] for p in points[domain] if d in p[2]])}
        domains[domain] = DomainScore(
            score=fmean(scores) if scores else None,
            scored=len(scores),
            dimensions=dims,
            generation_spread=spreads.get(domain),
            **counts[domain],
        )
    overall = macro_overall({d: s.score for d, s in domains.items()})
    all_scores = [score for domain in domains for _, score, _ in points[domain]]
    return ScoreTable(
        judge=kind,
        overall=overall,
        overall_micro=fmean(all_scores) if overall is not None else None,
        domains=domains,
        n=sum(c["n"] for c in counts.values()),
        failed=sum(c["failed"] for c in counts.values()),
        unscored=sum(c["unscored"] for c in counts.values()),
        pending=sum(c["pending"] for c in counts.values()),
        generations=generations,
    )


def _domain_order(domain: str) -> tuple[int, str]:
    return (DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain)


def variance_components(
    kind: JudgeKind,
    keys: Iterable[tuple[str, str, str]],
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: FailurePolicy,
    generations: int = 1,
) -> VarianceComponents | None:
    """scores.json's `variance` (`awbench.run.variance`) for the samples in the means, each generation with the
    verdicts behind its score (`keys`: sample key, domain, trajectory)."""
    keys = list(keys)
    trajectory = {key: t for key, _, t in keys}
    points = generation_points(kind, [(k, d) for k, d, _ in keys], predictions, judgments, policy, generations)
    samples: dict[str, list[Sample]] = {}
    for domain, per_sample in points.items():
        for key, per_generation in per_sample:
            found = []
            for g, point in enumerate(per_generation):
                if point is None:
                    continue
                prediction = predictions.get((key, g))
                fixed = kind == "rules" or (prediction is not None and prediction.failed)
                verdicts = () if fixed else verdict_scores(judgments.get((key, g)))
                found.append(Generation(point[0], verdicts, noise_weight(verdicts)))
            if found:
                samples.setdefault(domain, []).append(Sample(trajectory[key], tuple(found)))
    return components(samples, kind, generations)

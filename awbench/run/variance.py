"""How much of a score is the judge's noise, the candidate's sampling, and the benchmark's items (pure functions;
the method is in docs/statistics.md).

A verdict's score (0..100) on generation g of sample i is taken as `mu_i + e_ig + u_igv`: the sample's own level
(spread `item_sd` between samples), the generation's deviation from it (`generation_sd`) and the verdict's from its
generation (`judge_sd`), independent of each other. With K generations and J verdicts each, a sample's score (their
mean) carries generation_sd^2 / K + judge_sd^2 / (K J) of noise, and a domain score over n samples that over n.
The three are estimated by the method of moments on the nested design, each level's spread less what the levels
below it put there; a domain's standard error is the trajectory-clustered one of its sample scores (turns of one
trajectory are not independent), split into the judge's and the generations' parts (from their SDs) and the rest,
the items'. A failed generation scored 0 and the rule judge's scores carry no judge noise.

With J = 1 the judge's noise cannot be told apart from what is above it, nor with K = 1 the generations': those
components are None (not measured) and `unseen` names them; their noise is then inside the next level's figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Literal

from pydantic import BaseModel, Field

from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS, partial_label, to_100
from awbench.records import FINITE_NUMBERS, JudgeKind, JudgmentRecord

Source = Literal["judge", "generation"]


class DomainVariance(BaseModel):
    model_config = FINITE_NUMBERS

    n: int  # samples in the mean
    trajectories: int
    judge_sd: float | None = None  # 0..100; None: not measured (one verdict per prediction)
    generation_sd: float | None = None  # None: not measured (one generation per sample)
    item_sd: float | None = None  # the samples' own spread; None with fewer than two samples
    se: float | None = None  # the domain score's standard error, every source; None with fewer than two trajectories
    se_judge: float | None = None  # the judge's part of it (the three parts' squares add up to se^2)
    se_generation: float | None = None
    se_item: float | None = None


class VarianceComponents(BaseModel):
    """scores.json's `variance`: the three sources' standard deviations (0..100), pooled over domains, and their
    parts in the standard error of each domain score and of the Overall."""

    model_config = FINITE_NUMBERS  # as scores.json's other numbers

    generations: int  # K
    verdicts: int  # J: the most complete verdicts of one prediction (the rule judge: 1)
    judge_sd: float | None = None
    generation_sd: float | None = None
    item_sd: float | None = None
    overall_se: float | None = None  # None without an Overall (partial) or a domain's standard error
    overall_se_judge: float | None = None
    overall_se_generation: float | None = None
    overall_se_item: float | None = None
    domains: dict[str, DomainVariance] = Field(default_factory=dict)
    unseen: list[Source] = Field(default_factory=list)  # sources whose noise is inside the next one's figure

    def rows(self) -> list[tuple[str, list[str]]]:
        """The table `score`, `show` and the report print: per domain, then Overall, the standard error and its
        judge, generation and item parts, then the three SDs (pooled over domains on the Overall row)."""
        rows = [(DOMAIN_LABELS.get(d, d), _cells(v)) for d, v in self.domains.items()]
        overall = DomainVariance(
            n=sum(v.n for v in self.domains.values()),
            trajectories=sum(v.trajectories for v in self.domains.values()),
            judge_sd=self.judge_sd,
            generation_sd=self.generation_sd,
            item_sd=self.item_sd,
            se=self.overall_se,
            se_judge=self.overall_se_judge,
            se_generation=self.overall_se_generation,
            se_item=self.overall_se_item,
        )
        cells = _cells(overall)
        if partial_label(dict.fromkeys(self.domains, 0.0)):  # no Overall, so no standard error of it
            cells[2:6] = ["partial"] * 4
        return [*rows, ("Overall", cells)]

    def unseen_note(self) -> str | None:
        """What the run cannot tell apart, and what would measure it; None when it measures every source."""
        if not self.unseen:
            return None
        how = {"judge": "--judge-samples 2", "generation": "--generations 2"}
        names = " and ".join("the judge's" if source == "judge" else "the generations'" for source in self.unseen)
        inside = "the generations'" if self.unseen == ["judge"] else "the items'"  # the next level measured
        return (
            f"{names} noise is in the intervals but not measured apart from {inside} "
            f"(K = {self.generations}, J = {self.verdicts}); {' and '.join(how[s] for s in self.unseen)} would "
            "measure it"
        )


VARIANCE_COLUMNS = (
    "n",
    "trajectories",
    "SE",
    "SE judge",
    "SE generation",
    "SE items",
    "judge SD",
    "generation SD",
    "item SD",
)
VARIANCE_TITLE = "Standard errors and their sources (0..100; docs/statistics.md)"
VARIANCE_NOTE = (
    "SE: the score's standard error (trajectories as the independent units); its judge, generation and item parts "
    "add up in squares (SE^2 = judge^2 + generation^2 + items^2); judge SD: one verdict about its prediction's "
    "mean, generation SD: one generation about its sample's mean, item SD: the samples' own spread; the Overall "
    "row's SDs are pooled over the domains shown, so a partial run has them where its SE is partial"
)


def _cells(v: DomainVariance) -> list[str]:
    numbers = (v.se, v.se_judge, v.se_generation, v.se_item, v.judge_sd, v.generation_sd, v.item_sd)
    return [str(v.n), str(v.trajectories), *("–" if x is None else f"{x:.2f}" for x in numbers)]


@dataclass(frozen=True)
class Generation:
    value: float  # its score as it enters the means
    verdicts: tuple[float, ...]  # the judge's verdict scores behind it (none for a fixed value)
    noise: float  # its judge-noise weight: 1/J for J verdicts, 0 for a fixed value (a failed generation, rules)


@dataclass(frozen=True)
class Sample:
    trajectory: str
    generations: tuple[Generation, ...]  # those in the means (at least one)

    @property
    def value(self) -> float:
        return fmean(g.value for g in self.generations)


@dataclass
class _Sums:
    """A domain's sums of squares and their degrees of freedom, pooled over domains for the run's figures."""

    judge_ss: float = 0.0
    judge_df: int = 0
    generation_ss: float = 0.0
    generation_df: int = 0
    generation_judge: float = 0.0  # the judge noise's expected share of generation_ss, per unit of judge variance


def verdict_scores(judgment: JudgmentRecord | None) -> tuple[float, ...]:
    """The scores (0..100) of a judgment's complete verdicts, each the mean of its five dimensions: the
    judgment's score is their mean."""
    if judgment is None:
        return ()
    return tuple(to_100(fmean(v.scores[d] for d in DIMENSIONS)) for v in judgment.verdicts if v.status == "complete")


def noise_weight(verdicts: Sequence[float]) -> float:
    """A generation's judge-noise weight: 1/J for its J verdicts (none: a fixed value)."""
    return 1.0 / len(verdicts) if verdicts else 0.0


def components(
    samples: Mapping[str, Sequence[Sample]], kind: JudgeKind, generations: int = 1, deterministic: bool = False
) -> VarianceComponents | None:
    """The variance components of a run's samples in the means, per domain; None without any. A `deterministic`
    candidate (a baseline) has no generation noise to measure."""
    if not any(samples.values()):
        return None
    verdicts = 1 if kind == "rules" else max(len(g.verdicts) for s in _all(samples) for g in s.generations) or 1
    sums: dict[str, _Sums] = {d: _sums(s) for d, s in samples.items() if s}
    pooled = _Sums(
        judge_ss=sum(s.judge_ss for s in sums.values()),
        judge_df=sum(s.judge_df for s in sums.values()),
        generation_ss=sum(s.generation_ss for s in sums.values()),
        generation_df=sum(s.generation_df for s in sums.values()),
        generation_judge=sum(s.generation_judge for s in sums.values()),
    )
    judge_var = _judge_var(pooled, kind)
    generation_var = _generation_var(pooled, judge_var, deterministic)
    domains = {d: _domain(samples[d], sums[d], kind, deterministic) for d in _ordered(sums)}
    items = [(v.item_sd**2, v.n - 1) for v in domains.values() if v.item_sd is not None]
    item_var = sum(var * df for var, df in items) / sum(df for _, df in items) if items else None
    measured: dict[Source, float | None] = {"judge": judge_var, "generation": generation_var}
    unseen = [source for source, var in measured.items() if var is None]
    return VarianceComponents(
        generations=generations,
        verdicts=verdicts,
        judge_sd=_sqrt(judge_var),
        generation_sd=_sqrt(generation_var),
        item_sd=_sqrt(item_var),
        domains=domains,
        unseen=unseen,
        **_overall(domains),
    )


def _all(samples: Mapping[str, Sequence[Sample]]) -> Iterable[Sample]:
    for found in samples.values():
        yield from found


def _ordered(domains: Iterable[str]) -> list[str]:
    return sorted(domains, key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d))


def _sums(samples: Sequence[Sample]) -> _Sums:
    """Within each prediction, the verdicts' sum of squares about their mean; within each sample, the generations'
    about theirs, with the judge noise that spread holds in expectation (sum over g of (1 - 1/K) / J_g)."""
    sums = _Sums()
    for sample in samples:
        for g in sample.generations:
            if len(g.verdicts) > 1:
                mean = fmean(g.verdicts)
                sums.judge_ss += sum((v - mean) ** 2 for v in g.verdicts)
                sums.judge_df += len(g.verdicts) - 1
        k = len(sample.generations)
        if k > 1:
            mean = sample.value
            sums.generation_ss += sum((g.value - mean) ** 2 for g in sample.generations)
            sums.generation_df += k - 1
            sums.generation_judge += (1 - 1 / k) * sum(g.noise for g in sample.generations)
    return sums


def _judge_var(sums: _Sums, kind: JudgeKind) -> float | None:
    if kind == "rules":
        return 0.0  # the rule judge gives one prediction the same score every time
    return sums.judge_ss / sums.judge_df if sums.judge_df else None


def _generation_var(sums: _Sums, judge_var: float | None, deterministic: bool) -> float | None:
    if deterministic:
        return 0.0  # a baseline gives one sample the same prediction every time
    if not sums.generation_df:
        return None
    return max(0.0, (sums.generation_ss - (judge_var or 0.0) * sums.generation_judge) / sums.generation_df)


def _domain(samples: Sequence[Sample], sums: _Sums, kind: JudgeKind, deterministic: bool) -> DomainVariance:
    judge_var = _judge_var(sums, kind)
    generation_var = _generation_var(sums, judge_var, deterministic)
    n = len(samples)
    # Each sample score's own noise: generation_var / K_i + judge_var * sum_g (1 / J_g) / K_i^2.
    noise = [
        (generation_var or 0.0) / len(s.generations) + (judge_var or 0.0) * sum(g.noise for g in s.generations)
        / len(s.generations) ** 2
        for s in samples
    ]  # fmt: skip
    values = [s.value for s in samples]
    item_var = None
    if n > 1:
        mean = fmean(values)
        item_var = max(0.0, sum((v - mean) ** 2 for v in values) / (n - 1) - fmean(noise))
    total = _clustered_var(samples)
    se_judge_sq = None if judge_var is None else judge_var * sum(
        sum(g.noise for g in s.generations) / len(s.generations) ** 2 for s in samples
    ) / n**2  # fmt: skip
    se_generation_sq = (
        None if generation_var is None else generation_var * sum(1 / len(s.generations) for s in samples) / n**2
    )
    parts = (se_judge_sq or 0.0) + (se_generation_sq or 0.0)
    return DomainVariance(
        n=n,
        trajectories=len({s.trajectory for s in samples}),
        judge_sd=_sqrt(judge_var),
        generation_sd=_sqrt(generation_var),
        item_sd=_sqrt(item_var),
        se=None if total is None else math.sqrt(max(total, parts)),
        se_judge=_sqrt(se_judge_sq) if total is not None else None,
        se_generation=_sqrt(se_generation_sq) if total is not None else None,
        se_item=None if total is None else math.sqrt(max(0.0, total - parts)),
    )


def _clustered_var(samples: Sequence[Sample]) -> float | None:
    """The variance of the mean of the sample scores with whole trajectories as the independent units (the
    cluster-robust estimate, with its G / (G - 1) small-sample factor); None with fewer than two trajectories."""
    mean = fmean(s.value for s in samples)
    residuals: dict[str, float] = {}
    for s in samples:
        residuals[s.trajectory] = residuals.get(s.trajectory, 0.0) + s.value - mean
    g = len(residuals)
    if g < 2:
        return None
    return g / (g - 1) * sum(r * r for r in residuals.values()) / len(samples) ** 2


def _overall(domains: Mapping[str, DomainVariance]) -> dict[str, float | None]:
    """The Overall is the mean of the seven domain scores: each part of its variance is the sum of the domains'
    over 7^2. None without all seven domains (a partial Overall) or where a domain's part is unknown."""
    if any(d not in domains for d in DOMAINS):
        return {}
    out: dict[str, float | None] = {}
    for name in ("se", "se_judge", "se_generation", "se_item"):
        parts = [domains[d].model_dump()[name] for d in DOMAINS]
        out[f"overall_{name}"] = None if None in parts else math.sqrt(sum(p * p for p in parts)) / len(DOMAINS)
    return out


def _sqrt(variance: float | None) -> float | None:
    return None if variance is None else math.sqrt(variance)

"""How large a difference an evaluation can tell from noise, and what K and J it takes (`awbench plan`; the
leaderboard's neighbours). Pure functions over variance components (`awbench.run.variance`); the method is in
docs/statistics.md.

A paired comparison of two models on the same samples: per domain of N samples, the mean difference has variance

    (item_var + (generation_var_a + generation_var_b) / K + (judge_var_a + judge_var_b) / (K J)) / N

where item_var is the per-sample variance of the two models' true difference (their items' spread less what they
share, with the trajectories' clustering in it), and the Overall, the mean of seven domains, has the sum of those
over 49. A two-sided test at level alpha detects a true difference with probability `power` when it is at least
(z(1 - alpha / 2) + z(power)) standard errors (the normal approximation; at 2,170 samples the t distribution's
difference is negligible). Judge cost: K x J verdicts per sample and model, so 2 K J N calls for a comparison.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist

from pydantic import BaseModel

from awbench.domains import DOMAINS, PUBLISHED_STATS
from awbench.records import SCHEMA_VERSION
from awbench.run.variance import DomainVariance, VarianceComponents

POWER = 0.8
ALPHA = 0.05
# Two models' scores on the same samples are correlated (a hard sample is hard for both); one run alone cannot say
# how much. This is assumed where it is not measured (two runs measure it); `awbench plan --item-correlation`.
ITEM_CORRELATION = 0.5
FULL_BENCHMARK = {d: n for d, (n, _) in PUBLISHED_STATS.items()}
MAX_K = 16  # the largest K and J `cheapest` considers
MAX_J = 16
TABLE_K = (1, 2, 4, 8)
TABLE_J = (1, 2, 4)


def z_factor(power: float = POWER, alpha: float = ALPHA) -> float:
    """Standard errors a true difference must span to be detected: z(1 - alpha / 2) + z(power) (2.80 at 80%, 5%)."""
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


@dataclass(frozen=True)
class Figures:
    """One domain's figures for the difference of two models, each a variance per sample (0..100 squared)."""

    item_var: float  # of the true difference between the two models' sample scores, clustering included
    generation_var: float  # the two models' generation variances, summed
    judge_var: float  # the two models' judge variances, summed

    def variance(self, generations: float, verdicts: float, samples: int) -> float:
        """The variance of the domain's mean difference over `samples` samples at K and J."""
        noise = self.generation_var / generations + self.judge_var / (generations * verdicts)
        return (self.item_var + noise) / samples


def given_figures(
    judge_sd: float, generation_sd: float, item_sd: float, item_correlation: float = ITEM_CORRELATION
) -> dict[str, Figures]:
    """The same figures (one model's SDs, 0..100) in every domain, for two models alike."""
    figures = Figures(2 * (1 - item_correlation) * item_sd**2, 2 * generation_sd**2, 2 * judge_sd**2)
    return dict.fromkeys(DOMAINS, figures)


def run_figures(
    a: VarianceComponents,
    b: VarianceComponents | None = None,
    item_correlation: float = ITEM_CORRELATION,
    paired: Mapping[str, float] | None = None,
) -> dict[str, Figures]:
    """Per domain, figures from one run's components (the other model taken as alike, its item scores correlated
    by `item_correlation`) or from two runs' (`b`), with the item variance of their difference measured where
    `paired` has it (`paired_item_var`). A domain's item variance per sample is its clustered item standard error
    squared times its samples: the benchmark's trajectories are taken to cluster its samples as the run's do. A
    source a run does not measure (`unseen`) is inside the next one's figure, and counted there."""
    out = {}
    for domain in DOMAINS:
        da, db = a.domains.get(domain), (b or a).domains.get(domain)
        if da is None or db is None or da.se_item is None or db.se_item is None:
            continue
        item_a, item_b = da.se_item**2 * da.n, db.se_item**2 * db.n
        measured = (paired or {}).get(domain)
        out[domain] = Figures(
            item_var=item_a + item_b - 2 * item_correlation * math.sqrt(item_a * item_b)
            if measured is None
            else measured,
            generation_var=(da.generation_sd or 0.0) ** 2 + (db.generation_sd or 0.0) ** 2,
            judge_var=(da.judge_sd or 0.0) ** 2 + (db.judge_sd or 0.0) ** 2,
        )
    return out


def completed(figures: Mapping[str, Figures]) -> tuple[dict[str, Figures], list[str]]:
    """The figures of all seven domains: one the run has none for takes the mean of the others' (so that a run of
    some domains can plan the full benchmark); and the domains so filled."""
    if not figures:
        raise ValueError("no domain has figures: the run needs samples from two trajectories or more in a domain")
    filled = [d for d in DOMAINS if d not in figures]
    n = len(figures)
    mean = Figures(
        item_var=sum(f.item_var for f in figures.values()) / n,
        generation_var=sum(f.generation_var for f in figures.values()) / n,
        judge_var=sum(f.judge_var for f in figures.values()) / n,
    )
    return {d: figures.get(d, mean) for d in DOMAINS}, filled


def paired_item_var(differences: Sequence[tuple[str, float]], a: DomainVariance, b: DomainVariance) -> float | None:
    """The per-sample item variance of two runs' difference in one domain, measured: the clustered variance of the
    mean of their paired differences (`differences`: trajectory, A - B per sample both scored), times the samples,
    less the two runs' judge and generation noise per sample. None with fewer than two trajectories."""
    n = len(differences)
    mean = sum(d for _, d in differences) / n if n else 0.0
    residuals: dict[str, float] = {}
    for trajectory, d in differences:
        residuals[trajectory] = residuals.get(trajectory, 0.0) + d - mean
    g = len(residuals)
    if g < 2:
        return None
    clustered = g / (g - 1) * sum(r * r for r in residuals.values()) / n
    noise = sum(((v.se_judge or 0.0) ** 2 + (v.se_generation or 0.0) ** 2) * v.n for v in (a, b))
    return max(0.0, clustered - noise)


class Design(BaseModel):
    generations: int  # K
    verdicts: int  # J
    judge_calls: int  # per sample and model: K x J
    se: float  # the Overall difference's standard error, 0..100
    detectable: float  # the smallest Overall difference detected at `power` and `alpha`


class Plan(BaseModel):
    """`awbench plan`: what a paired comparison on the full benchmark can detect."""

    schema_version: int = SCHEMA_VERSION
    source: str  # where the figures come from
    power: float = POWER
    alpha: float = ALPHA
    samples: dict[str, int]  # per domain: the full benchmark's published sizes
    item_correlation: float | None  # assumed (one run, or given figures); None when two runs measured it
    unseen: list[str]  # sources the figures do not measure apart (their noise is counted as the items')
    current: Design  # at the K and J of the run (or those asked for)
    designs: list[Design]  # a grid of K and J
    target: float | None = None  # the difference asked about (--difference)
    cheapest: Design | None = None  # the least judge cost that detects `target`; None: no K, J up to 16 does
    floor: float  # what the items alone allow: the detectable difference as K and J grow without bound
    notes: list[str] = []


def design(
    figures: Mapping[str, Figures],
    generations: int,
    verdicts: int,
    samples: Mapping[str, int] = FULL_BENCHMARK,
    power: float = POWER,
    alpha: float = ALPHA,
) -> Design:
    """The Overall difference's standard error at K and J, and the smallest difference detected."""
    se = overall_se(figures, generations, verdicts, samples)
    return Design(
        generations=generations,
        verdicts=verdicts,
        judge_calls=generations * verdicts,
        se=se,
        detectable=z_factor(power, alpha) * se,
    )


def overall_se(
    figures: Mapping[str, Figures], generations: float, verdicts: float, samples: Mapping[str, int] = FULL_BENCHMARK
) -> float:
    """The Overall (the mean of the seven domains) difference's standard error. Every domain must have figures."""
    missing = [d for d in DOMAINS if d not in figures]
    if missing:
        raise ValueError(f"no figures for {', '.join(missing)}: the Overall needs all seven domains")
    total = sum(figures[d].variance(generations, verdicts, samples[d]) for d in DOMAINS)
    return math.sqrt(total) / len(DOMAINS)


def cheapest(
    figures: Mapping[str, Figures],
    difference: float,
    samples: Mapping[str, int] = FULL_BENCHMARK,
    power: float = POWER,
    alpha: float = ALPHA,
) -> Design | None:
    """The K and J (each up to 16) that detect `difference` at the least judge cost, K x J; on a tie, fewer
    generations (each one is also a call to the candidate). None when none does."""
    found = [
        d
        for k in range(1, MAX_K + 1)
        for j in range(1, MAX_J + 1)
        if (d := design(figures, k, j, samples, power, alpha)).detectable <= difference
    ]
    return min(found, key=lambda d: (d.judge_calls, d.generations), default=None)


def plan(
    figures: Mapping[str, Figures],
    source: str,
    generations: int,
    verdicts: int,
    *,
    difference: float | None = None,
    item_correlation: float | None = ITEM_CORRELATION,
    unseen: Sequence[str] = (),
    samples: Mapping[str, int] = FULL_BENCHMARK,
    power: float = POWER,
    alpha: float = ALPHA,
) -> Plan:
    notes = []
    if unseen:
        notes.append(
            f"the {' and '.join(unseen)} noise is not measured apart (K = 1 or J = 1 in the run): it is counted in "
            "the next source's figure (the generations' or the items'), which more J (or more K) does not reduce, "
            "so the designs with more of them detect less than they would"
        )
    found = cheapest(figures, difference, samples, power, alpha) if difference is not None else None
    floor = z_factor(power, alpha) * overall_se(figures, math.inf, math.inf, samples)
    if difference is not None and found is None:
        notes.append(
            f"no K and J up to {MAX_K} detect {difference:.2f} points: the items alone allow {floor:.2f} on the full "
            "benchmark"
        )
    return Plan(
        source=source,
        power=power,
        alpha=alpha,
        samples=dict(samples),
        item_correlation=item_correlation,
        unseen=list(unseen),
        current=design(figures, generations, verdicts, samples, power, alpha),
        designs=[design(figures, k, j, samples, power, alpha) for k in TABLE_K for j in TABLE_J],
        target=difference,
        cheapest=found,
        floor=floor,
        notes=notes,
    )


def neighbour_detectable(
    a: VarianceComponents, b: VarianceComponents, item_correlation: float = ITEM_CORRELATION
) -> float | None:
    """The smallest Overall difference a paired comparison of two evaluated runs detects at their own K, J and
    samples (the leaderboard's neighbours); None without an Overall's standard error for either."""
    if a.overall_se is None or b.overall_se is None:
        return None
    total = 0.0
    for domain in DOMAINS:
        da, db = a.domains[domain], b.domains[domain]
        items = (da.se_item or 0.0) ** 2 + (db.se_item or 0.0) ** 2
        shared = 2 * item_correlation * (da.se_item or 0.0) * (db.se_item or 0.0)
        noise = sum((v.se_judge or 0.0) ** 2 + (v.se_generation or 0.0) ** 2 for v in (da, db))
        total += items - shared + noise
    return z_factor() * math.sqrt(total) / len(DOMAINS)

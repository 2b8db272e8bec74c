"""Error growth along trajectories: scores by turn index and by context length, in bins, with intervals, and a
trend per domain.

A world model predicts each observation from the real history, so nothing it got wrong earlier is fed back;
what grows along a trajectory is the history it has to keep consistent with. These views say how a model's
scores change as that history grows.

Bins (`TURN_BINS`, `CONTEXT_BINS`) are fixed, so that every run, and both runs of a comparison, bin the same
samples the same way:

* turn index (`turn_idx`, 1-based): 1, 2-3, 4-7, 8-15, 16-31, 32+. Each bin doubles the history of the one
  before, so the bins are evenly spaced on the log2 scale the trend is measured on, and the first turn (no
  history at all) stands alone;
* context length: what the candidate is shown for the sample (system prompt, every earlier action and real
  observation, the current action; `data_info.context_chars`), as tokens ≈ characters / 4 (K = 1,024, so that
  "128K+" is past a 128K-token context window): <2K, 2-8K, 8-16K, 16-32K, 32-64K, 64-128K, 128K+. Doubling
  from 8K, where most of the benchmark is (its domains average 13K-59K tokens); two wider bins below, for the
  first turns of short trajectories. Characters, not a tokenizer's tokens: a sample falls in the same bin for
  every model, and no tokenizer has to be loaded.

Each bin, per domain: n samples, the mean score, and a 95% bootstrap interval that draws whole trajectories
(`stats.bootstrap_means`; a sample's score is the mean of its K generations and their verdicts, whose noise it
carries, as in `runs.run_intervals`). Overall: the mean over the domains present in the bin, as the headline
Overall is the mean over domains: a pooled mean would let the domain with the most samples at that length speak
for all of them; it has an interval only when each of those domains has enough trajectories.

The trend of a domain is the least-squares slope of score on log2(turn index) (or log2(context tokens)):
points per doubling, with a bootstrap interval over whole trajectories. The overall trend is the mean of the
domains' slopes, a within-domain change: long trajectories come from some domains more than others, and a
slope fitted on the pooled samples would mix those domains' levels into the trend.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, computed_field

from awbench.analysis.data_info import context_chars
from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.runs import RunData
from awbench.analysis.stats import MIN_TRAJECTORIES, TOO_FEW, Clustered, bootstrap_means, interval, too_few_of
from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.records import BenchmarkRecord

Axis = Literal["turn", "context"]
AXES: tuple[Axis, ...] = ("turn", "context")
Bin = tuple[str, float, float]  # label, low (inclusive), high (exclusive)

CHARS_PER_TOKEN = 4
K = 1024
TURN_BINS: tuple[Bin, ...] = (
    ("1", 1, 2),
    ("2-3", 2, 4),
    ("4-7", 4, 8),
    ("8-15", 8, 16),
    ("16-31", 16, 32),
    ("32+", 32, math.inf),
)
CONTEXT_BINS: tuple[Bin, ...] = (
    ("<2K", 0, 2 * K),
    ("2-8K", 2 * K, 8 * K),
    ("8-16K", 8 * K, 16 * K),
    ("16-32K", 16 * K, 32 * K),
    ("32-64K", 32 * K, 64 * K),
    ("64-128K", 64 * K, 128 * K),
    ("128K+", 128 * K, math.inf),
)
BINS: dict[Axis, tuple[Bin, ...]] = {"turn": TURN_BINS, "context": CONTEXT_BINS}
AXIS_NAMES: dict[Axis, str] = {"turn": "turn index", "context": "context length"}
FLAT = 1e-9  # a spread of log2 positions below this: every sample at one position, no slope
NO_SLOPE = 1e-9  # points per doubling: a slope this small is rounding error (an all-100 run), read as 0


def bin_label(value: float, bins: Sequence[Bin]) -> str:
    for label, lo, hi in bins:
        if lo <= value < hi:
            return label
    return bins[0][0] if value < bins[0][1] else bins[-1][0]


def bin_phrase(axis: Axis, label: str) -> str:
    """A bin in a sentence: "turn 1", "turns 16-31", "<2K tokens"."""
    if axis == "turn":
        return f"turn {label}" if label == "1" else f"turns {label}"
    return f"{label} tokens"


def context_tokens(record: BenchmarkRecord) -> float:
    """The candidate's context in tokens of about four characters."""
    return context_chars(record) / CHARS_PER_TOKEN


def position(record: BenchmarkRecord, axis: Axis) -> float:
    return float(record.turn_idx) if axis == "turn" else context_tokens(record)


# --------------------------------------------------------------------------- pure computations


@dataclass(frozen=True)
class Unit:
    """One scored sample: its trajectory, its position on an axis (turn index or context tokens), and its score
    as it enters the means (with K generations, their mean)."""

    key: str
    trajectory: str
    position: float
    score: float


class Cell(BaseModel):
    """One bin of one domain (or overall)."""

    n: int  # samples
    mean: float | None
    lo: float | None = None  # 95% bootstrap interval over whole trajectories
    hi: float | None = None
    trajectories: int  # distinct trajectories among the samples (overall: summed over domains)
    domains: int | None = None  # overall only: the domains present in the bin
    fewest_trajectories: int | None = None  # overall only: those of its domain with the fewest

    @computed_field  # type: ignore[prop-decorator]
    @property
    def too_few(self) -> bool:
        """Fewer than MIN_TRAJECTORIES trajectories (overall: in one of its domains): no interval."""
        return too_few_of(self.trajectories, self.fewest_trajectories)


class Trend(BaseModel):
    """Least-squares slope of score on log2(position): points per doubling of the turn index (or context)."""

    slope: float | None  # None: every sample at one position
    lo: float | None = None  # None also when some resample has every drawn sample at one position
    hi: float | None = None
    n: int
    trajectories: int = 0  # distinct trajectories among the samples (overall: summed over its domains)
    first: str | None = None  # the first and last bins with samples
    last: str | None = None
    domains: int | None = None  # overall only: the domains whose slopes it averages
    fewest_trajectories: int | None = None  # overall only: those of its domain with the fewest

    @computed_field  # type: ignore[prop-decorator]
    @property
    def too_few(self) -> bool:
        """Fewer than MIN_TRAJECTORIES trajectories (overall: in one of its domains): no interval, no rise or
        fall."""
        return too_few_of(self.trajectories, self.fewest_trajectories)

    @property
    def clear(self) -> bool:
        """A rise or a fall: the interval leaves out zero, over enough trajectories to tell (with one, every
        resample is the data itself; with two, the estimate sits on an edge of the interval)."""
        return not self.too_few and self.lo is not None and self.hi is not None and (self.lo > 0 or self.hi < 0)


class GrowthTable(BaseModel):
    """Scores of one run by bins of one axis: rows per domain and overall, cells per bin."""

    axis: Axis
    bins: list[str]  # from the first bin with samples to the last
    rows: dict[str, dict[str, Cell]]  # domain (then OVERALL) -> bin -> cell; a bin without samples has no cell
    trend: dict[str, Trend]
    intervals: bool


class RunGrowth(BaseModel):
    run: str
    judge: str
    turn: GrowthTable
    context: GrowthTable

    def table(self, axis: Axis) -> GrowthTable:
        return self.turn if axis == "turn" else self.context


def _matrix(units: Sequence[Unit]) -> Clustered:
    """The units' scores for `bootstrap_means`, one column."""
    return Clustered.of([[u.score] for u in units], [u.trajectory for u in units])


def _slope_matrix(units: Sequence[Unit]) -> Clustered:
    """Per unit, [y, x, x*y, x*x] with x = log2(position): their resampled means give the slope."""
    xs = [math.log2(max(u.position, 1.0)) for u in units]
    return Clustered.of([[u.score, x, x * u.score, x * x] for x, u in zip(xs, units)], [u.trajectory for u in units])


def _slope(means: np.ndarray) -> np.ndarray:
    """Slopes from the means of [y, x, x*y, x*x] (last axis); NaN where x does not vary."""
    ey, ex, exy, exx = (means[..., i] for i in range(4))
    spread = exx - ex * ex
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(spread > FLAT, (exy - ex * ey) / np.where(spread > FLAT, spread, 1.0), np.nan)
    return np.where(np.abs(slope) < NO_SLOPE, 0.0, slope)


def _bounds(replicates: np.ndarray) -> tuple[float | None, float | None]:
    """The 95% percentile interval; None when some resample has no value (`stats.interval` gives NaN)."""
    if len(replicates) == 0 or np.isnan(replicates).any():
        return None, None
    lo, hi = interval(replicates)
    return float(lo), float(hi)


def trends(
    units: Mapping[str, Sequence[Unit]],
    bins: Sequence[Bin],
    resamples: int | None = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> dict[str, Trend]:
    """Per domain (and overall: the mean of the domains' slopes), the slope of score on log2(position).
    `resamples=None`: slopes only, no intervals."""
    order = [b[0] for b in bins]
    slopes: dict[str, float] = {}
    out: dict[str, Trend] = {}
    for domain, us in units.items():
        if not us:
            continue
        # The point estimate from the samples' own scores (their generations' mean).
        x = np.log2(np.maximum([u.position for u in us], 1.0))
        y = np.array([u.score for u in us])
        value = float(_slope(np.array([y.mean(), x.mean(), (x * y).mean(), (x * x).mean()])))
        labels = [bin_label(u.position, bins) for u in us]
        out[domain] = Trend(
            slope=None if math.isnan(value) else value,
            n=len(us),
            trajectories=len({u.trajectory for u in us}),
            first=min(labels, key=order.index),
            last=max(labels, key=order.index),
        )
        if not math.isnan(value):
            slopes[domain] = value
    if slopes:
        firsts = [out[d].first for d in slopes]
        lasts = [out[d].last for d in slopes]
        out[OVERALL] = Trend(
            slope=float(np.mean(list(slopes.values()))),
            n=sum(out[d].n for d in slopes),
            trajectories=sum(out[d].trajectories for d in slopes),
            fewest_trajectories=min(out[d].trajectories for d in slopes),
            first=min(firsts, key=order.index),  # type: ignore[arg-type]
            last=max(lasts, key=order.index),  # type: ignore[arg-type]
            domains=len(slopes),
        )
    if resamples and out:
        reps = bootstrap_means({d: _slope_matrix(us) for d, us in units.items() if us}, resamples, seed)
        per_domain = {d: _slope(reps[d]) for d in out if d != OVERALL}
        for domain, rep in per_domain.items():
            if out[domain].slope is not None and not out[domain].too_few:
                out[domain].lo, out[domain].hi = _bounds(rep)
        if slopes and not out[OVERALL].too_few:
            out[OVERALL].lo, out[OVERALL].hi = _bounds(np.mean(np.stack([per_domain[d] for d in slopes]), axis=0))
    return out


def _cell(
    n: int,
    mean: float,
    trajectories: int,
    replicates: np.ndarray | None,
    domains: int | None = None,
    fewest: int | None = None,
) -> Cell:
    """A bin's cell; its interval from `replicates` (none without), unless too few trajectories."""
    cell = Cell(n=n, mean=mean, trajectories=trajectories, domains=domains, fewest_trajectories=fewest)
    if replicates is not None and not cell.too_few:
        cell.lo, cell.hi = _bounds(replicates[:, 0])
    return cell


def growth_table(
    units: Mapping[str, Sequence[Unit]], axis: Axis, resamples: int | None = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> GrowthTable:
    """Scores by bin of `axis`, per domain (in the order given) and overall, with 95% intervals over whole
    trajectories unless `resamples` is None; and each domain's trend."""
    bins = BINS[axis]
    labels = [b[0] for b in bins]
    grouped: dict[str, dict[str, list[Unit]]] = {label: {} for label in labels}
    for domain, us in units.items():
        for u in us:
            grouped[bin_label(u.position, bins)].setdefault(domain, []).append(u)
    rows: dict[str, dict[str, Cell]] = {d: {} for d, us in units.items() if us}
    for label in labels:
        groups = grouped[label]
        if not groups:
            continue
        reps = bootstrap_means({d: _matrix(us) for d, us in groups.items()}, resamples, seed) if resamples else {}
        means = {}
        for domain, us in groups.items():
            means[domain] = float(np.mean([u.score for u in us]))
            rows[domain][label] = _cell(len(us), means[domain], len({u.trajectory for u in us}), reps.get(domain))
        rows.setdefault(OVERALL, {})[label] = _cell(
            sum(len(us) for us in groups.values()),
            float(np.mean(list(means.values()))),
            sum(rows[d][label].trajectories for d in groups),
            reps.get(OVERALL),
            domains=len(groups),
            fewest=min(rows[d][label].trajectories for d in groups),
        )
    present = [i for i, label in enumerate(labels) if grouped[label]]
    shown = labels[present[0] : present[-1] + 1] if present else []
    return GrowthTable(
        axis=axis, bins=shown, rows=rows, trend=trends(units, bins, resamples, seed), intervals=bool(resamples)
    )


# --------------------------------------------------------------------------- sentences


def fmt_points(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "–"
    if round(value, 1) == 0:
        value = 0.0  # no "-0.0"
    return f"{value:+.1f}" if signed else f"{value:.1f}"


def fmt_bounds(lo: float | None, hi: float | None, signed: bool = False) -> str:
    return "" if lo is None or hi is None else f"[{fmt_points(lo, signed)}, {fmt_points(hi, signed)}]"


def fmt_spread(item: Cell | Trend, signed: bool = False) -> str:
    """Its interval, "too few to tell" when it is from too few trajectories, or "" when there is none."""
    return TOO_FEW if item.too_few else fmt_bounds(item.lo, item.hi, signed)


def _trajectories(n: int) -> str:
    return "1 trajectory" if n == 1 else f"{n} trajectories"


def trend_phrase(trend: Trend, axis: Axis) -> str:
    """ "-3.1 points per doubling of the turn index [-5.0, -1.2] (turn 1 to turns 16-31)"."""
    if trend.slope is None:
        return f"no trend (every sample at one position, in {bin_phrase(axis, trend.first or '?')})"
    bounds = (
        f"({TOO_FEW}: {_trajectories(trend.trajectories)})"
        if trend.too_few
        else fmt_bounds(trend.lo, trend.hi, signed=True)
    )
    span = ""
    if trend.first and trend.last:
        span = (
            f" (all at {bin_phrase(axis, trend.first)})"
            if trend.first == trend.last
            else f" ({bin_phrase(axis, trend.first)} to {bin_phrase(axis, trend.last)})"
        )
    return (
        f"{fmt_points(trend.slope, signed=True)} points per doubling of the {AXIS_NAMES[axis]}"
        f"{' ' + bounds if bounds else ''}{span}"
    )


def growth_summary(table: GrowthTable) -> str:
    """One line to scan: which domains fall (or rise) clearly with the axis, by how much per doubling."""
    rows = [(d, t) for d, t in table.trend.items() if d != OVERALL and t.slope is not None]
    if not rows:
        return f"no trend with {AXIS_NAMES[table.axis]}: no domain has samples at more than one position"
    falling = [(d, t) for d, t in rows if t.clear and t.slope < 0]  # type: ignore[operator]
    rising = [(d, t) for d, t in rows if t.clear and t.slope > 0]  # type: ignore[operator]

    def listed(items: list[tuple[str, Trend]]) -> str:
        """Steepest first."""
        ranked = sorted(items, key=lambda item: -abs(item[1].slope))  # type: ignore[arg-type]
        return ", ".join(
            f"{DOMAIN_LABELS.get(d, d)} {fmt_points(t.slope, True)} {fmt_bounds(t.lo, t.hi, True)}" for d, t in ranked
        )

    parts = []
    if falling:
        parts.append(f"the score falls in {listed(falling)}")
    if rising:
        parts.append(f"{'' if falling else 'the score '}rises in {listed(rising)}")
    if not table.intervals:
        parts = [
            f"the score changes by {', '.join(f'{DOMAIN_LABELS.get(d, d)} {fmt_points(t.slope, True)}' for d, t in rows)} "
            "(no intervals)"
        ]
    else:
        few = [DOMAIN_LABELS.get(d, d) for d, t in rows if t.too_few]
        told = len(rows) - len(few)
        if not parts and told:
            parts.append(
                "no domain's score changes clearly (every interval holds 0, or there is none)"
                if not few
                else "no clear change where there are enough trajectories to tell"
            )
        elif parts and len(falling) + len(rising) < told:
            parts.append("no clear change elsewhere")
        if few:
            parts.append(f"too few trajectories to tell (under {MIN_TRAJECTORIES}) in {', '.join(few)}")
    return f"Per doubling of the {AXIS_NAMES[table.axis]}, " + "; ".join(parts)


def lead_summary(axis: Axis, diffs: Sequence[tuple[str, float]], trend: Trend | None) -> str:
    """One line on where along trajectories A and B differ, from A − B per bin (in bin order, bins with
    samples only) and the trend of A − B: "B's lead grows with turn index: A − B is −2.1 at turn 1 and −9.8 at
    turns 16-31 (−2.5 per doubling [−3.9, −1.1])". A change is only called one when the trend's interval
    leaves out zero."""
    name = AXIS_NAMES[axis]
    if not diffs:
        return f"no samples both runs scored, so nothing to say along the {name}"
    (first, d0), (last, d1) = diffs[0], diffs[-1]
    where = (
        f"A − B is {fmt_points(d0, True)} at {bin_phrase(axis, first)}"
        if first == last
        else f"A − B is {fmt_points(d0, True)} at {bin_phrase(axis, first)} and {fmt_points(d1, True)} at "
        f"{bin_phrase(axis, last)}"
    )
    if trend is None or trend.slope is None:
        return f"no trend with {name} (the samples both runs scored are all at one position): {where}"
    bounds = fmt_bounds(trend.lo, trend.hi, signed=True)
    slope = f"{fmt_points(trend.slope, True)} per doubling{' ' + bounds if bounds else ''}"
    if not trend.clear:
        why = (
            f"{TOO_FEW}: {_trajectories(trend.trajectories)}"
            if trend.too_few
            else "no interval"
            if not bounds
            else "its interval holds 0"
        )
        return f"no clear change of A − B with {name} ({slope}; {why}): {where}"
    gainer, other = ("A", "B") if trend.slope > 0 else ("B", "A")
    # Seen from the side that gains along the axis: positive means it is ahead.
    ahead0, ahead1 = d0 * (1 if gainer == "A" else -1), d1 * (1 if gainer == "A" else -1)
    tie = 0.05  # points: printed as +0.0
    if ahead0 > tie and ahead1 > tie:
        head = f"{gainer}'s lead grows with {name}"
    elif ahead1 > tie:
        head = f"{gainer} {'pulls ahead of' if ahead0 >= -tie else 'overtakes'} {other} as the {name} grows"
    elif ahead0 < -tie:
        head = f"{other}'s lead shrinks with {name}"
    else:
        head = f"A − B {'rises' if trend.slope > 0 else 'falls'} with {name}, though not from the first bin to the last"
    return f"{head}: {where} ({slope})"


# --------------------------------------------------------------------------- runs


def run_units(data: RunData, judge_id: str, axis: Axis) -> dict[str, list[Unit]]:
    """A run's scored samples per domain (in the published order), placed on `axis`."""
    records = {key: sample.record for key, sample in data.samples.items()}
    points = data.points(judge_id)
    return {
        domain: [
            Unit(key=key, trajectory=data.trajectories[key], position=position(records[key], axis), score=score)
            for key, score, _ in points[domain]
        ]
        for domain in DOMAINS
        if points.get(domain)
    }


def run_growth(
    data: RunData, judge_id: str, resamples: int | None = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> RunGrowth:
    """Both views of one run's evaluation `judge_id`; `resamples=None`: means and slopes without intervals."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample in which no trajectory has a value
        tables = {axis: growth_table(run_units(data, judge_id, axis), axis, resamples, seed) for axis in AXES}
    return RunGrowth(run=data.name, judge=judge_id, **tables)

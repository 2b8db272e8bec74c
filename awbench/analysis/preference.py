"""Preferences between runs: which of two predictions a judge found closer to the real observation, asked in both
orders, as win rates and as a Bradley–Terry ranking of several runs, each with a 95% interval that resamples whole
trajectories (`awbench.analysis.stats.bootstrap_means`).

Pure functions over plain values; the judge's answers are asked and stored by `awbench.run.pairwise`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, computed_field

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.stats import Clustered, bootstrap_means, interval, too_few_of, too_few_overall
from awbench.domains import DOMAINS
from awbench.errors import EXIT_FAILURES, AwbenchError

# Virtual games per compared pair in the ranking, split as a tie: without them a run that lost every comparison
# would have no finite strength (the likelihood keeps rising as it goes to minus infinity).
PRIOR_GAMES = 1.0
# Ratings on the Elo scale (as chess and the LMSYS arena print Bradley–Terry strengths): 400 points are odds of
# 10 to 1, and the mean of the ranked runs is 1000.
ELO_POINTS = 400 / math.log(10)
ELO_MEAN = 1000.0
_MAX_ITERATIONS = 10_000
_TOLERANCE = 1e-12


def points(a_first: str | None, b_first: str | None) -> float | None:
    """Run A's points on one sample from the judge's two answers: `a_first` with A's prediction shown as Response A,
    `b_first` with B's. 1 when both answers pick A's prediction, 0 when both pick B's, 0.5 (a tie) when the orders
    disagree: the answer followed the position, not the content. None when either answer could not be read."""
    if a_first is None or b_first is None:
        return None
    return ((a_first == "A") + (b_first == "B")) / 2


@dataclass(frozen=True)
class Outcome:
    """One sample both runs predicted: its key, domain and trajectory, and run A's points (1, 0.5 or 0)."""

    key: str
    domain: str
    trajectory: str
    points: float


class WinRate(BaseModel):
    """Run A against run B in one domain (or overall, the mean of the domains' win rates)."""

    name: str
    n: int
    trajectories: int  # overall: the sum over its domains
    wins: int
    ties: int
    losses: int
    win_rate: float  # A's points per sample, 0..1: (wins + ties / 2) / n
    lo: float | None = None
    hi: float | None = None
    fewest_trajectories: int | None = None  # overall only: those of its domain with the fewest

    @computed_field  # type: ignore[prop-decorator]
    @property
    def too_few(self) -> bool:
        """Fewer than MIN_TRAJECTORIES trajectories (overall: in one of its domains): no interval."""
        return too_few_of(self.trajectories, self.fewest_trajectories)


def win_rates(
    outcomes: Sequence[Outcome], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> list[WinRate]:
    """Per domain (in the benchmark's order) and overall: A's wins, ties, losses and win rate, with 95% intervals."""
    by_domain = {d: [o for o in outcomes if o.domain == d] for d in DOMAINS}
    rows = [_win_rate(domain, found) for domain, found in by_domain.items() if found]
    if not rows:
        return rows
    rows.append(
        WinRate(
            name=OVERALL,
            n=sum(r.n for r in rows),
            trajectories=sum(r.trajectories for r in rows),
            fewest_trajectories=min(r.trajectories for r in rows),
            wins=sum(r.wins for r in rows),
            ties=sum(r.ties for r in rows),
            losses=sum(r.losses for r in rows),
            win_rate=float(np.mean([r.win_rate for r in rows])),
        )
    )
    clustered = {
        d: Clustered.of([[o.points] for o in found], [o.trajectory for o in found])
        for d, found in by_domain.items()
        if found
    }
    replicates = bootstrap_means(clustered, resamples, seed)
    for row in rows:
        if not row.too_few:
            lo, hi = interval(replicates[row.name][:, 0])
            row.lo, row.hi = float(lo), float(hi)
    return rows


def _win_rate(name: str, outcomes: Sequence[Outcome]) -> WinRate:
    values = [o.points for o in outcomes]
    return WinRate(
        name=name,
        n=len(values),
        trajectories=len({o.trajectory for o in outcomes}),
        wins=values.count(1.0),
        ties=values.count(0.5),
        losses=values.count(0.0),
        win_rate=float(np.mean(values)),
    )


# --------------------------------------------------------------------------- Bradley–Terry


def bradley_terry(won: np.ndarray, games: np.ndarray, prior: float = PRIOR_GAMES) -> np.ndarray:
    """Log strengths (mean 0) of k players from `won[..., i, j]`, i's points against j (a tie is half a point each
    way), and `games[..., i, j]`, the games between them (symmetric); leading axes are independent fits (one per
    bootstrap resample). `prior` adds that many games, split as a tie, to every pair that played.

    The maximum-likelihood strengths p satisfy, for each i, sum_j won[i, j] = sum_j games[i, j] p_i / (p_i + p_j);
    they are found by Hunter's (2004) minorise-maximise iteration p_i <- W_i / sum_j games[i, j] / (p_i + p_j),
    which increases the likelihood at every step."""
    played = games > 0
    won = won + played * prior / 2
    games = games + played * prior
    total = won.sum(axis=-1)
    strength = np.ones(won.shape[:-1])
    for _ in range(_MAX_ITERATIONS):
        pair_sums = strength[..., :, None] + strength[..., None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            updated = total / np.where(played, games / pair_sums, 0.0).sum(axis=-1)
            updated /= np.exp(np.log(updated).mean(axis=-1, keepdims=True))  # geometric mean 1
            change = np.nanmax(np.abs(np.log(updated) - np.log(strength)))
        strength = updated
        if change < _TOLERANCE:
            break
    log_strength: np.ndarray = np.log(strength)
    return log_strength


def elo(log_strength: np.ndarray) -> np.ndarray:
    rating: np.ndarray = ELO_MEAN + ELO_POINTS * log_strength
    return rating


class Rated(BaseModel):
    """One run in a Bradley–Terry ranking."""

    run: str
    rank: int
    rating: float  # Elo scale: the ranked runs' mean is 1000; 400 points are odds of 10 to 1
    lo: float | None = None
    hi: float | None = None
    n: int  # samples compared with the other runs, over all its pairs
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True)
class PairOutcomes:
    """The outcomes between runs `a` and `b` (indices into the ranked runs), from a's side."""

    a: int
    b: int
    outcomes: Sequence[Outcome]


def rank_runs(
    runs: Sequence[str],
    pairs: Sequence[PairOutcomes],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    prior: float = PRIOR_GAMES,
) -> list[Rated]:
    """A Bradley–Terry ranking of `runs` from every pair's outcomes, best first.

    A pair's result is its overall win rate (the mean of its domains' win rates, as `win_rates` gives it) over as
    many games as it compared samples: the domains weigh alike, as in every awbench Overall, and pairs that share
    more samples weigh more. The 95% intervals refit the ranking on resamples of whole trajectories, drawn once
    per resample for all pairs (the pairs judged the same samples); none when there are too few trajectories."""
    k = len(runs)
    index = [(p.a, p.b) for p in pairs]
    _check_connected(runs, pairs)
    columns: dict[str, dict[str, list[float]]] = {}  # domain -> sample key -> points per pair (NaN: not compared)
    clusters: dict[str, dict[str, str]] = {}
    for column, pair in enumerate(pairs):
        for o in pair.outcomes:
            row = columns.setdefault(o.domain, {}).setdefault(o.key, [math.nan] * len(pairs))
            row[column] = o.points
            clusters.setdefault(o.domain, {})[o.key] = o.trajectory
    domains = [d for d in DOMAINS if d in columns]
    games = np.array([len(p.outcomes) for p in pairs], dtype=float)
    rates = np.array([_overall_rate(p.outcomes) if p.outcomes else 0.0 for p in pairs])
    log_strength = bradley_terry(*_matrices(k, index, rates, games), prior=prior)
    order = sorted(range(k), key=lambda i: -log_strength[i])
    rated = [_rated(runs[i], rank, float(elo(log_strength)[i]), i, pairs) for rank, i in enumerate(order, 1)]
    if too_few_overall(len(set(clusters[d].values())) for d in domains) or not pairs:
        return rated
    clustered = {d: Clustered.of(list(columns[d].values()), [clusters[d][key] for key in columns[d]]) for d in domains}
    replicates = bootstrap_means(clustered, resamples, seed)
    resampled = _domain_mean(np.stack([replicates[d] for d in domains]))  # (resamples, pairs)
    counted = np.where(np.isnan(resampled), 0.0, games)
    won, played = _matrices(k, index, np.nan_to_num(resampled), counted)
    lo, hi = interval(elo(bradley_terry(won, played, prior=prior)))
    for rated_run, i in zip(rated, order):
        rated_run.lo, rated_run.hi = float(lo[i]), float(hi[i])
    return rated


def _check_connected(runs: Sequence[str], pairs: Sequence[PairOutcomes]) -> None:
    """AwbenchError (exit 1: nothing to rank, as with nothing to show) unless comparisons link every run to every other (through others, perhaps): strengths fitted in
    separate groups say nothing about how one group stands against the other."""
    reached, frontier = {0}, [0]
    while frontier:
        at = frontier.pop()
        for p in pairs:
            if p.outcomes and at in (p.a, p.b) and (other := p.b if at == p.a else p.a) not in reached:
                reached.add(other)
                frontier.append(other)
    if apart := [run for i, run in enumerate(runs) if i not in reached]:
        raise AwbenchError(
            f"no comparisons link {', '.join(apart)} to {runs[0]}: they cannot be ranked together",
            key="runs_not_linked",
            exit_code=EXIT_FAILURES,
        )


def _overall_rate(outcomes: Sequence[Outcome]) -> float:
    rates = [np.mean(found) for d in DOMAINS if (found := [o.points for o in outcomes if o.domain == d])]
    return float(np.mean(rates))


def _domain_mean(values: np.ndarray) -> np.ndarray:
    """The mean over the first axis (domains) of the values present; NaN where none is (a pair whose samples no
    trajectory of the resample holds)."""
    present = ~np.isnan(values)
    counts = present.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: np.ndarray = np.where(present, values, 0.0).sum(axis=0) / counts
    return mean


def _matrices(
    k: int, pairs: Sequence[tuple[int, int]], rates: np.ndarray, games: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(..., k, k) points won and games played from each pair's win rate (last axis: pairs) and games."""
    shape = (*rates.shape[:-1], k, k)
    won, played = np.zeros(shape), np.zeros(shape)
    for column, (a, b) in enumerate(pairs):
        n = games[..., column]
        won[..., a, b] += n * rates[..., column]
        won[..., b, a] += n * (1 - rates[..., column])
        played[..., a, b] += n
        played[..., b, a] += n
    return won, played


def _rated(run: str, rank: int, rating: float, i: int, pairs: Sequence[PairOutcomes]) -> Rated:
    mine = [(o.points if p.a == i else 1 - o.points) for p in pairs if i in (p.a, p.b) for o in p.outcomes]
    return Rated(
        run=run,
        rank=rank,
        rating=rating,
        n=len(mine),
        wins=mine.count(1.0),
        ties=mine.count(0.5),
        losses=mine.count(0.0),
    )

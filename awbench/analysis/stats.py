"""Statistics over scored samples: trajectory bootstrap, Krippendorff's alpha, length bias (rank correlation
is `awbench.run.agreement`'s).

Pure functions over plain numbers; the run-reading code lives in `awbench.analysis.runs`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL

# --------------------------------------------------------------------------- bootstrap

# Fewer trajectories than this: a bootstrap over them is degenerate (one trajectory gives a zero-width interval,
# two put the estimate on an edge), so no interval is given and no rise or fall is claimed.
MIN_TRAJECTORIES = 5
TOO_FEW = "too few to tell"


def too_few(trajectories: int) -> bool:
    return trajectories < MIN_TRAJECTORIES


def too_few_of(trajectories: int, fewest: int | None) -> bool:
    """A row's `too_few`: from its trajectories, or for an Overall from its domain with the `fewest`."""
    return too_few(trajectories if fewest is None else fewest)


def too_few_overall(trajectories: Iterable[int]) -> bool:
    """An Overall (a mean over domains, each resampled within itself) from its domains' trajectories: a domain with
    too few would enter every resample with next to no spread, so the Overall's interval would look surer than it
    is. It has one only when each of its domains has enough."""
    counts = list(trajectories)
    return not counts or any(too_few(t) for t in counts)


@dataclass(frozen=True)
class Clustered:
    """One domain's sample values (NaN = missing), shape (n, m), and the trajectory each sample belongs to. A
    sample's value is its score as it enters the means: with K generations and J verdicts, their mean, so its
    noise is in it (see `bootstrap_means`)."""

    values: np.ndarray
    clusters: list[str]  # (n,) trajectory ids

    @classmethod
    def of(cls, rows: Sequence[Sequence[float]] | np.ndarray, clusters: Sequence[str]) -> Clustered:
        values = np.asarray(rows, dtype=float).reshape(len(rows), -1) if len(rows) else np.empty((0, 1))
        if len(clusters) != len(values):
            raise ValueError(f"{len(values)} rows but {len(clusters)} cluster ids")
        return cls(values, list(clusters))


def bootstrap_means(
    domains: Mapping[str, Clustered], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, np.ndarray]:
    """Resampled column means, shape (resamples, m), per domain and for their macro mean (`OVERALL`).

    Trajectories are drawn with replacement as whole units within each domain: turns of one trajectory
    share their history, so resampling turns alone would understate the spread. A sample's value is the mean of
    its generations and verdicts, which carries their noise (generation_sd^2 / K + judge_sd^2 / (K J)): drawing
    trajectories draws that noise too, and drawing generations or verdicts again inside a drawn sample would count
    it twice (the intervals would be too wide; docs/statistics.md). Domains are drawn in the order given, all from
    one seeded generator, so equal inputs give equal intervals.
    """
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, data in domains.items():
        if len(data.values) == 0:
            continue
        ids = {c: i for i, c in enumerate(dict.fromkeys(data.clusters))}
        index = np.array([ids[c] for c in data.clusters])
        # Row b of `draws` counts how often each trajectory was drawn in resample b.
        draws = rng.multinomial(len(ids), np.full(len(ids), 1.0 / len(ids)), size=resamples).astype(float)
        sums, counts = _cluster_totals(data.values, index, len(ids))
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = (draws @ sums) / (draws @ counts)
    if out:
        out[OVERALL] = np.mean(np.stack(list(out.values())), axis=0)
    return out


def _cluster_totals(values: np.ndarray, index: np.ndarray, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trajectory, the sum and the count of the present values of each column."""
    present = ~np.isnan(values)
    sums = np.zeros((clusters, values.shape[1]))
    counts = np.zeros_like(sums)
    np.add.at(sums, index, np.where(present, values, 0.0))
    np.add.at(counts, index, present.astype(float))
    return sums, counts


def interval(replicates: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval per column; NaN where a column has no value in some resample."""
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(replicates, [tail, 100 - tail], axis=0)
    return lo, hi


# --------------------------------------------------------------------------- Krippendorff's alpha


def krippendorff_alpha_ordinal(units: Sequence[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the ordinal metric.

    `units` holds, per rated item, the values its coders gave (None = not rated). Only items with two or
    more values are pairable. Returns None when nothing is pairable or all values are equal (no expected
    disagreement, so alpha is undefined).
    """
    pairable = [[v for v in unit if v is not None] for unit in units]
    pairable = [u for u in pairable if len(u) >= 2]
    if not pairable:
        return None
    categories = sorted({v for u in pairable for v in u})
    if len(categories) < 2:
        return None
    pos = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    # Coincidence matrix: every ordered pair of values within a unit, weighted 1 / (m_u - 1).
    o = np.zeros((k, k))
    for unit in pairable:
        idx = np.array([pos[v] for v in unit])
        counts = np.bincount(idx, minlength=k).astype(float)
        o += (np.outer(counts, counts) - np.diag(counts)) / (len(unit) - 1)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    # Ordinal distance: the mass of the categories spanned from c to k, minus half of the two ends.
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    lo, hi = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(np.arange(k), np.arange(k))
    delta2 = (cum[hi + 1] - cum[lo] - (n_c[:, None] + n_c[None, :]) / 2) ** 2
    observed = (o * delta2).sum()
    expected = (np.outer(n_c, n_c) * delta2).sum() / (n - 1)
    if expected == 0.0:
        return None
    return float(1.0 - observed / expected)


# --------------------------------------------------------------------------- length bias

LENGTH_BINS: tuple[tuple[str, float, float], ...] = (
    ("<0.5", 0.0, 0.5),
    ("0.5-0.8", 0.5, 0.8),
    ("0.8-1.25", 0.8, 1.25),
    ("1.25-2", 1.25, 2.0),
    (">2", 2.0, math.inf),
)


def length_ratio(prediction: str, ground_truth: str) -> float:
    """Characters of prediction per character of ground truth (two empty texts: 1, as long as each other)."""
    if not ground_truth:
        return 1.0 if not prediction else math.inf
    return len(prediction) / len(ground_truth)


def length_bin(ratio: float) -> str:
    for label, lo, hi in LENGTH_BINS:
        if lo <= ratio < hi:
            return label
    return LENGTH_BINS[-1][0]


def length_bias(pairs: Sequence[tuple[float, float]]) -> dict[str, tuple[int, float | None]]:
    """(ratio, score) pairs -> per length bin: (n, mean score or None), in bin order."""
    grouped: dict[str, list[float]] = {label: [] for label, _, _ in LENGTH_BINS}
    for ratio, score in pairs:
        grouped[length_bin(ratio)].append(score)
    return {label: (len(v), float(np.mean(v)) if v else None) for label, v in grouped.items()}

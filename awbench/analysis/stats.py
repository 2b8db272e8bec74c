"""Statistics over scored samples: trajectory bootstrap, Krippendorff's alpha, length bias (rank correlation
is `awbench.run.agreement`'s).

Pure functions over plain numbers; the run-reading code lives in `awbench.analysis.runs`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


@dataclass(frozen=True)
class Clustered:
    """One domain's sample values (NaN = missing) and the trajectory each sample belongs to. Values are
    (n, m), or (n, K, m) with K generations per sample."""

    values: np.ndarray
    clusters: list[str]  # (n,) trajectory ids

    @classmethod
    def of(cls, rows: Sequence[Sequence[float]] | np.ndarray, clusters: Sequence[str]) -> Clustered:
        values = np.asarray(rows, dtype=float).reshape(len(rows), -1) if len(rows) else np.empty((0, 1))
        if len(clusters) != len(values):
            raise ValueError(f"{len(values)} rows but {len(clusters)} cluster ids")
        return cls(values, list(clusters))

    @classmethod
    def of_generations(cls, samples: Sequence[Sequence[Sequence[float]]], clusters: Sequence[str]) -> Clustered:
        """`samples[i][g]`: generation g of sample i, a row of m values (all NaN when not in the means)."""
        values = np.asarray(samples, dtype=float)
        if values.ndim != 3 or len(clusters) != len(values):
            raise ValueError(f"expected (n, K, m) values for {len(clusters)} samples, got shape {values.shape}")
        return cls(values, list(clusters))


def bootstrap_means(
    domains: Mapping[str, Clustered], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, np.ndarray]:
    """Resampled column means, shape (resamples, m), per domain and for their macro mean (`OVERALL`).

    Trajectories are drawn with replacement as whole units within each domain: turns of one trajectory
    share their history, so resampling turns alone would understate the spread. Domains are drawn in
    the order given, all from one seeded generator, so equal inputs give equal intervals.
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
        if data.values.ndim == 3:
            out[name] = _two_level(data.values, index, len(ids), draws, rng)
            continue
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


TWO_LEVEL_CHUNK = 2_000_000  # values drawn at once: resamples are done in chunks of about this many


def _two_level(
    values: np.ndarray, index: np.ndarray, clusters: int, draws: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """With K generations per sample: in each resample, trajectories are drawn (`draws`), and each sample's
    generations in the means (c of its K) are drawn c times with replacement; a sample's value is their mean.
    Rows are ordered per sample by the total (column 0): a generation not in the means has NaN there.

    Resamples are drawn a chunk at a time, with the generator's numbers in the order one resample at a time
    would take them (resample b's draws follow resample b - 1's), so the chunk size does not change them."""
    n, k, m = values.shape
    order = np.argsort(np.isnan(values[:, :, 0]), axis=1, kind="stable")  # present generations first
    ordered = np.take_along_axis(values, order[:, :, None], axis=1)
    present = (~np.isnan(values[:, :, 0])).sum(axis=1)
    keep = present > 0
    ordered, present, index = ordered[keep], present[keep], index[keep]
    n = len(present)
    used = np.arange(k)[None, :] < present[:, None]  # the first c draws of each sample count
    out = np.empty((len(draws), m))
    step = max(1, TWO_LEVEL_CHUNK // max(1, n * k * m))
    rows = np.arange(n)[None, :, None]
    for start in range(0, len(draws), step):
        weights = draws[start : start + step]
        r = len(weights)
        picked = (rng.random((r, n, k)) * present[None, :, None]).astype(int)
        chosen = ordered[rows, picked]  # (r, n, k, m)
        # The mean of each sample's first c draws, leaving out a dimension a drawn generation did not give.
        counted = used[None, :, :, None] & ~np.isnan(chosen)
        gens = counted.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(counted, chosen, 0.0).sum(axis=2) / gens  # (r, n, m); NaN where none gave it
        have = gens > 0
        # Per resample and trajectory, sums and counts: in sample order, as `_cluster_totals` adds them.
        cells = (np.arange(r)[:, None] * clusters + index[None, :]).ravel()
        sums = np.empty((r, clusters, m))
        counts = np.empty_like(sums)
        for j in range(m):
            sums[:, :, j] = np.bincount(
                cells, np.where(have[:, :, j], means[:, :, j], 0.0).ravel(), minlength=r * clusters
            ).reshape(r, clusters)
            counts[:, :, j] = np.bincount(cells, have[:, :, j].ravel().astype(float), minlength=r * clusters).reshape(
                r, clusters
            )
        with np.errstate(invalid="ignore", divide="ignore"):
            out[start : start + r] = (
                np.matmul(weights[:, None, :], sums)[:, 0] / np.matmul(weights[:, None, :], counts)[:, 0]
            )
    return out


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

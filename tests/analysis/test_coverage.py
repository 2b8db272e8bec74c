"""The intervals hold the truth as often as they say: 300 simulated benchmarks with trajectories, items, two
generations and two verdicts of known spread; the 95% trajectory-bootstrap intervals of a domain, of the Overall and
of a paired difference (`stats.bootstrap_means`, as `show`, `leaderboard --ci` and `compare` draw them), and the
normal intervals from the variance components' standard error (`run.variance`), each cover the true value in 90% to
98% of them. Pure numpy and the library's own functions: a few seconds."""

from __future__ import annotations

import numpy as np
import pytest

from awbench.analysis.options import OVERALL
from awbench.analysis.stats import Clustered, bootstrap_means, interval
from awbench.domains import DOMAINS
from awbench.run.variance import Generation, Sample, components

REPLICATIONS = 300
TRAJECTORIES, TURNS = 24, 3  # per domain
K, J = 2, 2
TRAJECTORY_SD, ITEM_SD, GENERATION_SD, JUDGE_SD = 6.0, 10.0, 8.0, 10.0
DIFFERENCE_SD = 6.0  # of B's items about A's: the two models share most of what makes a sample hard
TRUE_LEVEL, TRUE_DIFFERENCE = 50.0, 2.0


def benchmark(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Verdict scores of models A and B, shape (domains, samples, K, J): a trajectory's level, each sample's, each
    generation's and each verdict's deviation, all independent; B's samples are A's moved by their own deviation."""
    shape = (len(DOMAINS), TRAJECTORIES * TURNS)
    trajectory = np.repeat(rng.normal(0, TRAJECTORY_SD, (len(DOMAINS), TRAJECTORIES)), TURNS, axis=1)
    level_a = TRUE_LEVEL + trajectory + rng.normal(0, ITEM_SD, shape)
    level_b = level_a - TRUE_DIFFERENCE + rng.normal(0, DIFFERENCE_SD, shape)

    def verdicts(level: np.ndarray) -> np.ndarray:
        generations = level[..., None] + rng.normal(0, GENERATION_SD, (*shape, K))
        return generations[..., None] + rng.normal(0, JUDGE_SD, (*shape, K, J))

    return verdicts(level_a), verdicts(level_b)


CLUSTERS = [f"t{i // TURNS}" for i in range(TRAJECTORIES * TURNS)]


def intervals(values: np.ndarray, seed: int) -> dict[str, tuple[float, float]]:
    """The 95% bootstrap intervals of each domain and of the Overall, from each sample's value."""
    replicates = bootstrap_means(
        {d: Clustered.of(values[i][:, None], CLUSTERS) for i, d in enumerate(DOMAINS)}, 1000, seed
    )
    return {name: (float(interval(r)[0][0]), float(interval(r)[1][0])) for name, r in replicates.items()}


def samples_of(verdicts: np.ndarray) -> dict[str, list[Sample]]:
    """`run.variance`'s samples: each generation's score the mean of its J verdicts."""
    return {
        d: [
            Sample(CLUSTERS[s], tuple(Generation(float(g.mean()), tuple(map(float, g)), 1 / J) for g in verdicts[i, s]))
            for s in range(verdicts.shape[1])
        ]
        for i, d in enumerate(DOMAINS)
    }


def test_bootstrap_intervals_of_domains_the_overall_and_a_paired_difference_have_nominal_coverage():
    rng = np.random.default_rng(2024)
    hits: dict[str, list[bool]] = {"os": [], OVERALL: [], "os difference": [], "overall difference": []}
    for replication in range(REPLICATIONS):
        a, b = benchmark(rng)
        means_a, means_b = a.mean(axis=(2, 3)), b.mean(axis=(2, 3))  # each sample's score, as it enters the means
        single, paired = intervals(means_a, replication), intervals(means_a - means_b, replication)
        for name, (lo, hi), truth in (
            ("os", single["os"], TRUE_LEVEL),
            (OVERALL, single[OVERALL], TRUE_LEVEL),
            ("os difference", paired["os"], TRUE_DIFFERENCE),
            ("overall difference", paired[OVERALL], TRUE_DIFFERENCE),
        ):
            hits[name].append(lo <= truth <= hi)
    coverage = {name: float(np.mean(found)) for name, found in hits.items()}
    assert all(0.90 <= c <= 0.98 for c in coverage.values()), coverage


def test_standard_errors_from_the_variance_components_have_nominal_coverage():
    """mean +- 1.96 SE with the SE `scores.json` gives (`variance.overall_se`), from the verdicts themselves."""
    rng = np.random.default_rng(7)
    hits = []
    for _ in range(REPLICATIONS):
        a, _ = benchmark(rng)
        variance = components(samples_of(a), "llm", K)
        assert variance is not None and variance.overall_se is not None
        overall = float(a.mean(axis=(1, 2, 3)).mean())
        hits.append(abs(overall - TRUE_LEVEL) <= 1.96 * variance.overall_se)
    assert 0.90 <= float(np.mean(hits)) <= 0.98, float(np.mean(hits))


def test_the_judges_part_of_the_standard_error_is_its_share_of_the_spread():
    """Holding the items and generations fixed and drawing only new verdicts, the Overall moves by the judge's part of
    its standard error (`overall_se_judge`): the part the judge alone puts there."""
    rng = np.random.default_rng(3)
    a, _ = benchmark(rng)
    generations = a.mean(axis=3)  # each generation's true-plus-generation level, as the judge's center
    overalls, parts = [], []
    for _ in range(200):
        verdicts = generations[..., None] + rng.normal(0, JUDGE_SD, a.shape)
        overalls.append(float(verdicts.mean(axis=(1, 2, 3)).mean()))
        samples = {
            d: [
                Sample(
                    CLUSTERS[s], tuple(Generation(float(g.mean()), tuple(map(float, g)), 1 / J) for g in verdicts[i, s])
                )
                for s in range(a.shape[1])
            ]
            for i, d in enumerate(DOMAINS)
        }
        variance = components(samples, "llm", K)
        assert variance is not None and variance.overall_se_judge is not None
        parts.append(variance.overall_se_judge)
    true_part = JUDGE_SD / np.sqrt(K * J * TRAJECTORIES * TURNS * len(DOMAINS))
    assert float(np.mean(parts)) == pytest.approx(true_part, rel=0.02)
    assert float(np.std(overalls, ddof=1)) == pytest.approx(true_part, rel=0.2)  # 200 draws: about 5% error

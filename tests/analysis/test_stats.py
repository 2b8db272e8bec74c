"""Statistics: Spearman, the trajectory bootstrap, Krippendorff's alpha (ordinal), length bins."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from awbench.analysis.options import OVERALL
from awbench.analysis.stats import (
    Clustered,
    bootstrap_means,
    interval,
    krippendorff_alpha_ordinal,
    length_bias,
    length_bin,
    length_ratio,
)
from awbench.run.agreement import average_ranks, spearman

# --------------------------------------------------------------------------- Spearman


def test_average_ranks_share_ties():
    assert average_ranks([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert average_ranks([3, 3, 3]).tolist() == [2.0, 2.0, 2.0]


def test_spearman_perfect_and_reversed():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # Monotone but not linear: rank correlation is still perfect.
    assert spearman([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)


def test_spearman_with_ties_by_hand():
    # ranks x: 1, 2.5, 2.5, 4; y: 1, 3, 2, 4. Centered: (-1.5, 0, 0, 1.5) and (-1.5, .5, -.5, 1.5).
    # sum dx*dy = 4.5, sum dx^2 = 4.5, sum dy^2 = 5  ->  4.5 / sqrt(22.5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))


def test_spearman_undefined():
    assert spearman([1, 2], [1, 2]) is None  # fewer than 3 points
    assert spearman([], []) is None
    assert spearman([5, 5, 5], [1, 2, 3]) is None  # zero variance
    with pytest.raises(ValueError):
        spearman([1, 2, 3], [1, 2])


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=3, max_size=30))
def test_spearman_bounded_and_symmetric(pairs):
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    rho = spearman(x, y)
    if rho is not None:
        assert -1 - 1e-9 <= rho <= 1 + 1e-9
        assert spearman(y, x) == pytest.approx(rho)


# --------------------------------------------------------------------------- bootstrap


def test_one_trajectory_gives_zero_width_interval():
    reps = bootstrap_means({"mcp": Clustered.of([[10.0], [30.0], [80.0]], ["t", "t", "t"])}, 2000, 0)
    lo, hi = interval(reps["mcp"])
    assert lo[0] == hi[0] == pytest.approx(40.0)


def test_two_trajectories_resample_to_three_values():
    # Each resample draws 2 of {0, 100}: means 0, 50, 100 with probability 1/4, 1/2, 1/4.
    reps = bootstrap_means({"mcp": Clustered.of([[0.0], [100.0]], ["a", "b"])}, 2000, 0)["mcp"][:, 0]
    values, counts = np.unique(reps, return_counts=True)
    assert values.tolist() == [0.0, 50.0, 100.0]
    assert counts.tolist() == [512, 980, 508]  # seed 0; close to 500 / 1000 / 500
    lo, hi = interval(reps[:, None])
    assert (lo[0], hi[0]) == (0.0, 100.0)


def test_trajectories_are_resampled_as_units():
    # Trajectory a has three turns scored 0, b one turn scored 100. Drawing whole trajectories gives means
    # 0 (a, a), 25 (a, b: 100 / 4 turns) and 100 (b, b); drawing turns one by one would give others (e.g. 50).
    reps = bootstrap_means({"mcp": Clustered.of([[0.0], [0.0], [0.0], [100.0]], ["a", "a", "a", "b"])}, 2000, 0)
    assert np.unique(reps["mcp"]).tolist() == [0.0, 25.0, 100.0]


def test_overall_is_the_macro_mean_of_resampled_domains():
    reps = bootstrap_means(
        {
            "mcp": Clustered.of([[0.0], [100.0]], ["a", "b"]),
            "search": Clustered.of([[50.0], [50.0]], ["c", "d"]),
        },
        2000,
        0,
    )
    assert np.allclose(reps[OVERALL], (reps["mcp"] + reps["search"]) / 2)
    assert np.unique(reps[OVERALL]).tolist() == [25.0, 50.0, 75.0]


def test_known_interval_seed_zero():
    # Ten one-turn trajectories 10, 20, ..., 100: mean 55, standard error sqrt(825 / 10) = 9.08, so a
    # normal approximation gives about [37.2, 72.8]; resampled means are whole numbers here.
    rows = [[float(v)] for v in range(10, 101, 10)]
    reps = bootstrap_means({"mcp": Clustered.of(rows, [f"t{i}" for i in range(10)])}, 2000, 0)
    lo, hi = interval(reps["mcp"])
    assert (lo[0], hi[0]) == (37.0, 72.0)
    again = bootstrap_means({"mcp": Clustered.of(rows, [f"t{i}" for i in range(10)])}, 2000, 0)
    assert np.array_equal(reps["mcp"], again["mcp"])  # seeded: the same every time
    other = bootstrap_means({"mcp": Clustered.of(rows, [f"t{i}" for i in range(10)])}, 2000, 1)
    assert not np.array_equal(reps["mcp"], other["mcp"])


def test_missing_values_are_left_out_of_column_means():
    # The second column is missing for one row: its mean is over the rows that have it.
    reps = bootstrap_means({"mcp": Clustered.of([[10.0, 1.0], [30.0, np.nan]], ["t", "t"])}, 100, 0)
    assert reps["mcp"][0].tolist() == [20.0, 1.0]


def test_empty_domains_are_skipped():
    reps = bootstrap_means({"mcp": Clustered.of([], []), "os": Clustered.of([[5.0]], ["t"])}, 50, 0)
    assert set(reps) == {"os", OVERALL}
    assert bootstrap_means({}, 50, 0) == {}


# --------------------------------------------------------------------------- Krippendorff's alpha


def test_alpha_two_categories_by_hand():
    # Units (1,1), (1,2), (2,2): coincidences o11 = 2, o12 = o21 = 1, o22 = 2; n1 = n2 = 3, n = 6.
    # delta^2(1,2) = (n1 + n2 - (n1 + n2) / 2)^2 = 9. D_o = 2 * 9 = 18, D_e = 2 * 3 * 3 * 9 / 5 = 32.4.
    assert krippendorff_alpha_ordinal([(1, 1), (1, 2), (2, 2)]) == pytest.approx(1 - 18 / 32.4)


def test_alpha_three_categories_by_hand():
    # Units (1,2), (2,3), (1,1), (3,3): o12 = o21 = o23 = o32 = 1, o11 = o33 = 2; n1 = 3, n2 = 2, n3 = 3, n = 8.
    # delta^2: (1,2) = ((3 + 2) / 2)^2 = 6.25, (2,3) = 6.25, (1,3) = (8 - (3 + 3) / 2)^2 = 25.
    # D_o = 2 * 6.25 + 2 * 6.25 = 25; D_e = (2*6*6.25 + 2*6*6.25 + 2*9*25) / 7 = 600 / 7.
    assert krippendorff_alpha_ordinal([(1, 2), (2, 3), (1, 1), (3, 3)]) == pytest.approx(1 - 25 * 7 / 600)


def test_alpha_systematic_disagreement_is_negative():
    # o12 = o21 = 2, n1 = n2 = 2, n = 4, delta^2 = 4: 1 - 16 / (2 * 2 * 2 * 4 / 3) = -0.5
    assert krippendorff_alpha_ordinal([(1, 2), (2, 1)]) == pytest.approx(-0.5)


def test_alpha_perfect_agreement():
    assert krippendorff_alpha_ordinal([(1, 1), (2, 2), (5, 5)]) == pytest.approx(1.0)


def test_alpha_textbook_example_with_missing_values():
    # Krippendorff's reliability-data example (4 coders, 12 units, missing values); ordinal alpha = 0.815.
    n = None
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
        [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n],
    ]
    assert krippendorff_alpha_ordinal(list(zip(*coders))) == pytest.approx(0.815, abs=5e-4)


def test_alpha_ordinal_is_not_interval():
    # Ordinal distances depend on how many values lie between two categories, not on their numeric gap:
    # relabelling 1, 2, 3 as 1, 2, 30 keeps the order and so the ordinal alpha.
    units = [(1, 2), (2, 3), (1, 1), (3, 3), (1, 3)]
    relabelled = [tuple({1: 1, 2: 2, 3: 30}[v] for v in u) for u in units]
    assert krippendorff_alpha_ordinal(units) == pytest.approx(krippendorff_alpha_ordinal(relabelled))


def test_alpha_undefined():
    assert krippendorff_alpha_ordinal([]) is None
    assert krippendorff_alpha_ordinal([(3,), (4, None)]) is None  # no pairable unit
    assert krippendorff_alpha_ordinal([(3, 3), (3, 3)]) is None  # one value only: no expected disagreement


# --------------------------------------------------------------------------- length bias


def test_length_ratio_and_bins():
    assert length_ratio("ab", "abcd") == 0.5
    assert length_ratio("", "") == 1.0
    assert length_ratio("x", "") == math.inf
    assert [length_bin(r) for r in (0.0, 0.49, 0.5, 0.79, 0.8, 1.0, 1.249, 1.25, 1.99, 2.0, math.inf)] == [
        "<0.5",
        "<0.5",
        "0.5-0.8",
        "0.5-0.8",
        "0.8-1.25",
        "0.8-1.25",
        "0.8-1.25",
        "1.25-2",
        "1.25-2",
        ">2",
        ">2",
    ]


def test_length_bias_counts_and_means():
    bias = length_bias([(0.1, 10.0), (0.2, 30.0), (1.0, 80.0), (3.0, 50.0)])
    assert bias == {
        "<0.5": (2, 20.0),
        "0.5-0.8": (0, None),
        "0.8-1.25": (1, 80.0),
        "1.25-2": (0, None),
        ">2": (1, 50.0),
    }

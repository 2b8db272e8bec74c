"""Win rates from answers asked in both orders, and the Bradley–Terry ranking, on cases worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from awbench.analysis.preference import (
    ELO_MEAN,
    Outcome,
    PairOutcomes,
    bradley_terry,
    points,
    rank_runs,
    win_rates,
)
from awbench.errors import AwbenchError


def outcomes(values: list[float], domain: str = "mcp", trajectories: list[str] | None = None) -> list[Outcome]:
    """One sample per value; each its own trajectory unless `trajectories` says."""
    names = trajectories or [f"t{i}" for i in range(len(values))]
    return [Outcome(f"{domain}/{t}/{i}", domain, t, v) for i, (t, v) in enumerate(zip(names, values))]


@pytest.mark.parametrize(
    ("a_first", "b_first", "expected"),
    [
        ("A", "B", 1.0),  # A's prediction chosen in both orders
        ("B", "A", 0.0),  # B's in both
        ("A", "A", 0.5),  # the first position both times: a tie
        ("B", "B", 0.5),  # the second position both times: a tie
        (None, "B", None),  # an answer without a choice: no outcome
        ("A", None, None),
    ],
)
def test_points_from_both_orders(a_first, b_first, expected):
    assert points(a_first, b_first) == expected


def test_win_rate_counts_ties_as_half():
    rows = win_rates(outcomes([1, 0.5, 0, 1, 1, 1]))
    assert [r.name for r in rows] == ["mcp", "overall"]
    mcp = rows[0]
    assert (mcp.n, mcp.trajectories, mcp.wins, mcp.ties, mcp.losses, mcp.win_rate) == (6, 6, 4, 1, 1, 0.75)


def test_overall_is_the_mean_of_the_domains():
    rows = {r.name: r for r in win_rates(outcomes([1, 1, 1, 0]) + outcomes([0, 0.5], domain="search"))}
    assert rows["mcp"].win_rate == 0.75 and rows["search"].win_rate == 0.25
    overall = rows["overall"]
    assert (overall.n, overall.wins, overall.ties, overall.losses, overall.win_rate) == (6, 3, 1, 2, 0.5)
    assert list(rows) == ["mcp", "search", "overall"]  # the benchmark's domain order


def test_win_rate_interval_resamples_whole_trajectories(any_trajectories):
    # Trajectory m0 holds points 1 and 0.5, m1 holds 0. Resampling whole trajectories gives means 0.75 (m0 twice,
    # p = 1/4), 0.5 (one of each, p = 1/2) or 0 (m1 twice, p = 1/4): the 95% interval is [0, 0.75].
    row = win_rates(outcomes([1, 0.5, 0], trajectories=["m0", "m0", "m1"]), resamples=2000, seed=0)[0]
    assert (row.win_rate, row.trajectories, row.lo, row.hi) == (0.5, 2, 0.0, 0.75)


def test_too_few_trajectories_give_no_interval():
    row = win_rates(outcomes([1, 0.5, 0], trajectories=["m0", "m0", "m1"]))[0]
    assert row.too_few and (row.lo, row.hi) == (None, None)


def test_bradley_terry_recovers_strengths_the_counts_fit_exactly():
    # Strengths 4 : 2 : 1 predict a win share of 4/6 for player 0 against 1, 4/5 against 2 and 2/3 for 1 against 2.
    # With 6, 5 and 3 games, points of 4, 4 and 2 match those shares exactly, so the likelihood is maximal at
    # 4 : 2 : 1: log strengths (mean 0) log 2, 0, -log 2.
    games = np.array([[0, 6, 5], [6, 0, 3], [5, 3, 0]], dtype=float)
    won = np.array([[0, 4, 4], [2, 0, 2], [1, 1, 0]], dtype=float)
    assert bradley_terry(won, games, prior=0) == pytest.approx([math.log(2), 0, -math.log(2)], abs=1e-10)
    # Fits along leading axes are independent: the same counts, and those counts with players 0 and 2 swapped.
    swapped = [2, 1, 0]
    stacked = bradley_terry(
        np.stack([won, won[swapped][:, swapped]]), np.stack([games, games[swapped][:, swapped]]), prior=0
    )
    expected = np.array([[math.log(2), 0, -math.log(2)], [-math.log(2), 0, math.log(2)]])
    assert stacked == pytest.approx(expected, abs=1e-10)


def test_the_prior_keeps_a_run_that_lost_everything_finite():
    # Two players, 3 games, all won by 0. With one virtual tie: 3.5 points to 0.5, odds 7, log strengths +-log(7)/2.
    won = np.array([[0, 3], [0, 0]], dtype=float)
    games = np.array([[0, 3], [3, 0]], dtype=float)
    assert bradley_terry(won, games, prior=1.0) == pytest.approx([math.log(7) / 2, -math.log(7) / 2], abs=1e-10)


def test_ranking_on_the_hand_case_with_ties_as_half_wins():
    # The counts of the exact case above, as samples: run a beats b 4 of 6 and c 4 of 5; b against c has one win
    # and two ties (2 points of 3).
    pairs = [
        PairOutcomes(0, 1, outcomes([1, 1, 1, 1, 0, 0])),
        PairOutcomes(0, 2, outcomes([1, 1, 1, 1, 0])),
        PairOutcomes(1, 2, outcomes([1, 0.5, 0.5])),
    ]
    rated = rank_runs(["a", "b", "c"], pairs, prior=0)
    assert [(r.run, r.rank) for r in rated] == [("a", 1), ("b", 2), ("c", 3)]
    step = 400 * math.log10(2)  # log strength log 2 on the Elo scale
    assert [r.rating for r in rated] == pytest.approx([ELO_MEAN + step, ELO_MEAN, ELO_MEAN - step], abs=1e-9)
    assert [(r.n, r.wins, r.ties, r.losses) for r in rated] == [(11, 8, 0, 3), (9, 3, 2, 4), (8, 1, 2, 5)]


def test_ranking_intervals_refit_on_trajectory_resamples():
    # Run a beats b on every sample, b beats c on every sample, 6 trajectories: every resample ranks a > b > c with
    # the same counts, so each interval is a single point, the prior's fit: a and c 3 + 1/2 points to 1/2 against b.
    pairs = [PairOutcomes(0, 1, outcomes([1] * 6)), PairOutcomes(1, 2, outcomes([1] * 6))]
    rated = rank_runs(["a", "b", "c"], pairs, resamples=2000, seed=0)
    assert [r.run for r in rated] == ["a", "b", "c"]
    for row in rated:
        assert row.lo == pytest.approx(row.rating, abs=1e-6) and row.hi == pytest.approx(row.rating, abs=1e-6)
    # Points 6.5 of 7 each way: the fit is symmetric about b, which sits at the mean.
    assert rated[1].rating == pytest.approx(ELO_MEAN, abs=1e-9)
    assert rated[0].rating - ELO_MEAN == pytest.approx(ELO_MEAN - rated[2].rating, abs=1e-9)


def test_ranking_needs_every_run_linked():
    pairs = [PairOutcomes(0, 1, outcomes([1, 0])), PairOutcomes(2, 3, outcomes([1, 0]))]
    with pytest.raises(AwbenchError, match="no comparisons link c, d to a") as refused:
        rank_runs(["a", "b", "c", "d"], pairs)
    assert (refused.value.exit_code, refused.value.key) == (1, "runs_not_linked")

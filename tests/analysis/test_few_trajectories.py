"""Honest statistics: a cell or a trend from fewer than five trajectories has no interval and is never called a
rise or a fall; a trend is rising or falling only when its interval leaves out 0; an all-100 run has no trend;
the spread between generations is the sample standard deviation."""

from __future__ import annotations

import math
from statistics import stdev

import pytest
from runs_helpers import MCP, SEARCH, SMALL, invoke, make_run, write_data

from awbench.analysis.compare import paired_rows
from awbench.analysis.growth import TURN_BINS, Unit, growth_summary, growth_table, trend_phrase, trends
from awbench.analysis.leaderboard import build_leaderboard, fmt_cell, to_csv
from awbench.analysis.options import OVERALL
from awbench.analysis.preference import Outcome, PairOutcomes, rank_runs, win_rates
from awbench.analysis.runs import load_run_data, run_intervals
from awbench.analysis.stats import MIN_TRAJECTORIES
from awbench.analysis.turing import fmt_rate, turing_result
from awbench.domains import DOMAINS
from awbench.judging.choice.judge import ChoiceAnswer
from awbench.records import JudgmentRecord
from awbench.run.scoring import generation_spread


def falling(trajectories: int, domain: str = "terminal", start: float = 100.0) -> list[Unit]:
    """Trajectories of four turns, each falling 10 points per doubling of the turn index (from a start that differs
    a little per trajectory, so that resamples differ)."""
    return [
        Unit(f"{domain}/t{i}/{t}", f"t{i}", t, start - i - 10 * math.log2(t))
        for i in range(trajectories)
        for t in range(1, 5)
    ]


def test_the_threshold_is_five():
    assert MIN_TRAJECTORIES == 5


def test_a_trend_from_four_trajectories_is_too_few_to_tell_and_from_five_it_falls():
    few = trends({"terminal": falling(4)}, TURN_BINS, resamples=500, seed=0)["terminal"]
    assert few.slope == pytest.approx(-10) and few.trajectories == 4 and few.too_few
    assert (few.lo, few.hi) == (None, None) and not few.clear
    assert trend_phrase(few, "turn") == (
        "-10.0 points per doubling of the turn index (too few to tell: 4 trajectories) (turn 1 to turns 4-7)"
    )
    enough = trends({"terminal": falling(5)}, TURN_BINS, resamples=500, seed=0)["terminal"]
    assert enough.hi is not None
    assert not enough.too_few and enough.clear and enough.hi < 0
    assert (enough.lo, enough.hi) == pytest.approx((-10, -10))  # every trajectory falls 10 points per doubling


def test_two_samples_of_one_trajectory_give_no_interval_and_no_claim():
    # The case: 32.5 [32.5, 32.5] from two samples of one trajectory.
    units = {"os": [Unit("os/o0/1", "o0", 1, 45.0), Unit("os/o0/2", "o0", 2, 20.0)]}
    table = growth_table(units, "turn", resamples=500, seed=0)
    cells = [c for c in table.rows["os"].values()]
    assert [(c.mean, c.lo, c.hi, c.too_few) for c in cells] == [(45.0, None, None, True), (20.0, None, None, True)]
    assert table.trend["os"].slope == pytest.approx(-25) and table.trend["os"].too_few and not table.trend["os"].clear
    assert growth_summary(table) == "Per doubling of the turn index, too few trajectories to tell (under 5) in OS"
    assert table.model_dump()["rows"]["os"]["1"]["too_few"] is True  # in --format json too


def test_an_all_100_run_neither_rises_nor_falls():
    units = {
        domain: [Unit(f"{domain}/t{i}/{t}", f"{domain}{i}", t, 100.0) for i in range(6) for t in (1, 2, 3, 5, 9)]
        for domain in ("android", "web")
    }
    table = growth_table(units, "turn", resamples=500, seed=0)
    for domain in ("android", "web", OVERALL):
        trend = table.trend[domain]
        assert (trend.slope, trend.lo, trend.hi, trend.clear) == (0.0, 0.0, 0.0, False)
    summary = growth_summary(table)
    assert summary == (
        "Per doubling of the turn index, no domain's score changes clearly (every interval holds 0, or there is none)"
    )
    assert "falls" not in summary and "rises" not in summary


def test_a_trend_is_called_a_fall_only_when_its_interval_leaves_out_zero():
    # Five trajectories: three fall 10 points per doubling, two rise 10: the interval holds 0.
    mixed = falling(3) + [
        Unit(f"terminal/r{i}/{t}", f"r{i}", t, 50 + 10 * math.log2(t)) for i in range(2) for t in range(1, 5)
    ]
    table = growth_table({"terminal": mixed, "web": falling(6, "web")}, "turn", resamples=2000, seed=0)
    terminal, web = table.trend["terminal"], table.trend["web"]
    assert terminal.lo is not None and terminal.hi is not None and web.hi is not None
    assert not terminal.too_few and terminal.lo < 0 < terminal.hi and not terminal.clear
    assert web.clear and web.hi < 0
    assert growth_summary(table) == (
        "Per doubling of the turn index, the score falls in Web -10.0 [-10.0, -10.0]; no clear change elsewhere"
    )


def test_paired_rows_from_too_few_trajectories_have_no_interval():
    a = {"mcp": {"m/1": 100.0, "m/2": 50.0}, "search": {f"s/{i}": 50.0 + i for i in range(5)}}
    b = {"mcp": {"m/1": 50.0, "m/2": 50.0}, "search": {f"s/{i}": 40.0 for i in range(5)}}
    trajectories = {"m/1": "m0", "m/2": "m1", **{f"s/{i}": f"s{i}" for i in range(5)}}
    rows = {r.name: r for r in paired_rows(a, b, trajectories, resamples=500, seed=0)[0]}
    assert (rows["mcp"].diff, rows["mcp"].lo, rows["mcp"].hi, rows["mcp"].a_better, rows["mcp"].too_few) == (
        25.0,
        None,
        None,
        None,
        True,
    )
    assert not rows["search"].too_few and rows["search"].lo == pytest.approx(10.8, abs=1.3)
    # Seven trajectories in all, but MCP's two would enter every resample with next to no spread: the Overall
    # rests on too few (issue 37: `Overall +0.64 [0.64, 0.64]` from one trajectory per domain).
    overall = rows[OVERALL]
    assert (overall.trajectories, overall.fewest_trajectories, overall.too_few, overall.lo) == (7, 2, True, None)
    enough = {r.name: r for r in paired_rows({"search": a["search"]}, {"search": b["search"]}, trajectories, 500, 0)[0]}
    assert not enough[OVERALL].too_few and enough[OVERALL].lo == enough["search"].lo


def test_leaderboard_cells_from_too_few_trajectories_say_so(tmp_path):
    # MCP and Search have two trajectories each: no interval for either; Overall is absent (two of seven domains).
    data = write_data(tmp_path / "data", SMALL)
    store = make_run(tmp_path / "results", "r", data, dict.fromkeys(MCP + SEARCH, 4))
    assert run_intervals(load_run_data(store), "llm-r", 200, 0) == {}
    board = build_leaderboard([store], ci=True, resamples=200)
    cells = board.groups[0].rows[0].cells
    assert (cells["mcp"].lo, cells["mcp"].too_few, fmt_cell(cells["mcp"])) == (None, True, "75.00 (too few to tell)")
    assert not cells["terminal"].too_few and fmt_cell(cells["terminal"]) == "–"  # no samples: nothing to tell
    assert to_csv(board).splitlines()[1].split(",")[5:7] == ["75.00", "75.00"]  # MCP, Search
    assert '"MCP lo","MCP hi"' in to_csv(board).splitlines()[0] and ',"","",' in to_csv(board).splitlines()[1]
    table = invoke("leaderboard", str(store.path), "--ci", "--resamples", "2000")
    assert table.exit_code == 0, table.output
    assert (
        table.stdout.count("too few") == 4 and "[" not in table.stdout.split("Intervals:")[0]
    )  # 2 cells, 2 in the note


def test_generation_spread_is_the_sample_standard_deviation():
    def judged(key: str, g: int, score: float | None) -> JudgmentRecord:
        return JudgmentRecord(
            key=key,
            domain="os",
            judge="rules",
            cache_key="c",
            status="ok" if score is not None else "failed",
            score=score,
        )

    judgments = {
        ("a", 0): judged("a", 0, 100.0),
        ("a", 1): judged("a", 1, 50.0),
        ("a", 2): judged("a", 2, 0.0),
        ("b", 0): judged("b", 0, 80.0),
        ("b", 1): judged("b", 1, None),
    }  # b: one scored generation
    spread = generation_spread([("a", "os"), ("b", "os")], judgments, 3)
    assert spread == {"os": pytest.approx(50.0)} and stdev([100.0, 50.0, 0.0]) == 50.0  # n - 1: not 40.82
    assert generation_spread([("b", "os")], judgments, 3) == {}  # a single generation has no spread


# --------------------------------------------------------------------------- an Overall over too few (issue 37)


def one_trajectory_a_domain() -> dict[str, list[tuple[str, str]]]:
    """Per domain, two samples of one trajectory: seven trajectories in all, each domain too few."""
    return {d: [(f"{d}/{d[0]}0/{turn}", f"{d}0") for turn in (1, 2)] for d in DOMAINS}


def test_every_overall_from_one_trajectory_a_domain_is_too_few_to_tell():
    """`compare`'s `Overall +0.64 [0.64, 0.64]`, `turing`'s `54.8 [54.8, 54.8]`, pairwise `30.0% [30.0%, 30.0%]`
    and the trend's `[-15.3, -15.3]` came from seven domains of one trajectory each: no interval now."""
    samples = one_trajectory_a_domain()
    answers = [
        ChoiceAnswer(
            key=f"{key}#{first}",
            question="q",
            choice="A",
            attempts=1,
            meta={"sample": key, "generation": 0, "real": first, "domain": d, "trajectory": t},
        )
        for d, found in samples.items()
        for key, t in found
        for first in ("A", "B")
    ]
    turing = turing_result("judge", ["run"], answers, resamples=200)
    assert (turing.accuracy.value, turing.accuracy.low, turing.accuracy.high) == (50.0, None, None)
    assert fmt_rate(turing.accuracy) == "50.0 (too few to tell)"
    outcomes = [Outcome(key, d, t, float(i % 2)) for d, found in samples.items() for i, (key, t) in enumerate(found)]
    overall = win_rates(outcomes, resamples=200)[-1]
    assert (overall.name, overall.trajectories, overall.fewest_trajectories, overall.too_few) == (OVERALL, 7, 1, True)
    assert (overall.lo, overall.hi) == (None, None)
    ranked = rank_runs(["a", "b"], [PairOutcomes(0, 1, outcomes)], resamples=200)
    assert all((r.lo, r.hi) == (None, None) for r in ranked)
    units = {
        d: [Unit(key, t, turn, 50.0 - 10 * turn) for turn, (key, t) in enumerate(found, 1)]
        for d, found in samples.items()
    }
    table = growth_table(units, "turn", resamples=200, seed=0)
    assert table.rows[OVERALL]["1"].too_few and table.rows[OVERALL]["1"].lo is None
    assert table.trend[OVERALL].too_few and table.trend[OVERALL].lo is None and not table.trend[OVERALL].clear


def test_the_overall_of_show_and_the_leaderboard_needs_enough_trajectories_in_each_domain(tmp_path):
    data = write_data(tmp_path / "data", {d: [1] * (1 if d == "os" else 5) for d in DOMAINS})
    keys = [f"{d}/{d[0]}{t}/1" for d in DOMAINS for t in range(1 if d == "os" else 5)]
    store = make_run(tmp_path / "results", "r", data, {k: 1 + i % 5 for i, k in enumerate(keys)})
    intervals = run_intervals(load_run_data(store), "llm-r", 200, 0)
    assert "os" not in intervals and OVERALL not in intervals and "web" in intervals  # 34 trajectories, OS's one
    cells = build_leaderboard([store], ci=True, resamples=200).groups[0].rows[0].cells
    assert cells[OVERALL].too_few and fmt_cell(cells[OVERALL]).endswith("(too few to tell)")

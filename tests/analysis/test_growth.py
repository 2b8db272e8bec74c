"""Error growth along trajectories: bins of turn index and context length, their intervals, the trend per doubling,
`show --by-turn/--by-context`, `compare` along trajectories, and the report's charts (in Chromium)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from browser import add_script, dump_dom, require_chromium
from runs_helpers import invoke, make_run, write_data
from test_report import _Dom

from awbench.analysis.compare import compare_runs
from awbench.analysis.growth import (
    CONTEXT_BINS,
    TURN_BINS,
    Trend,
    Unit,
    bin_label,
    context_tokens,
    growth_summary,
    growth_table,
    lead_summary,
    run_growth,
    trend_phrase,
)
from awbench.analysis.options import OVERALL
from awbench.analysis.report import build_report
from awbench.analysis.runs import discover_runs, load_run_data
from awbench.config import DataSettings
from awbench.data.dataset import load_samples
from awbench.domains import DOMAIN_LABELS


def trend_sentence(name: str, trend: Trend, axis) -> str:
    """ "Terminal: -3.1 points per doubling of the turn index [-5.0, -1.2] (turn 1 to turns 16-31)"."""
    label = "Overall" if name == OVERALL else DOMAIN_LABELS.get(name, name)
    return f"{label}: {trend_phrase(trend, axis)}"


# --------------------------------------------------------------------------- bins


def test_turn_bins_double():
    assert [b[0] for b in TURN_BINS] == ["1", "2-3", "4-7", "8-15", "16-31", "32+"]
    got = {t: bin_label(t, TURN_BINS) for t in (1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 500)}
    assert got == {
        1: "1",
        2: "2-3",
        3: "2-3",
        4: "4-7",
        7: "4-7",
        8: "8-15",
        15: "8-15",
        16: "16-31",
        31: "16-31",
        32: "32+",
        500: "32+",
    }


def test_context_bins_are_tokens_of_four_characters(tmp_path):
    assert [b[0] for b in CONTEXT_BINS] == ["<2K", "2-8K", "8-16K", "16-32K", "32-64K", "64-128K", "128K+"]
    got = {t: bin_label(t, CONTEXT_BINS) for t in (0, 2047.75, 2048, 8191, 8192, 131071, 131072, 10**7)}
    assert got == {
        0: "<2K",
        2047.75: "<2K",
        2048: "2-8K",
        8191: "2-8K",
        8192: "8-16K",
        131071: "64-128K",
        131072: "128K+",
        10**7: "128K+",
    }
    data = write_data(tmp_path / "data", {"mcp": [2]})
    second = next(s for s in load_samples(DataSettings(source=str(data))).samples if s.key == "mcp/m0/2")
    record = second.record
    chars = len(record.system_str) + len(record.prompt[0]) + len(record.response[0]) + len(record.prompt[1])
    assert context_tokens(record) == chars / 4


# --------------------------------------------------------------------------- a run, by bin

# Terminal: t0 has turns 1-8, t1 turns 1-4. MCP: one trajectory of two turns. Search: two trajectories of four
# turns, each falling 10 points per doubling of the turn index from a different start.
SHAPE = {"mcp": [2], "search": [4, 4], "terminal": [8, 4]}
RULES = {
    **{f"terminal/t0/{t}": r for t, r in zip(range(1, 9), (1.0, 0.8, 0.6, 0.5, 0.5, 0.5, 0.5, 0.2))},
    **{f"terminal/t1/{t}": r for t, r in zip(range(1, 5), (0.6, 0.4, 0.4, 0.1))},
    "mcp/m0/1": 0.9,
    "mcp/m0/2": 0.7,
    **{f"search/s0/{t}": 1.0 - 0.1 * math.log2(t) for t in range(1, 5)},
    **{f"search/s1/{t}": 0.6 - 0.1 * math.log2(t) for t in range(1, 5)},
}


@pytest.fixture
def shaped(tmp_path):
    data = write_data(tmp_path / "data", SHAPE)
    store = make_run(tmp_path / "results", "shaped", data, dict.fromkeys(RULES, 3), rules=RULES, llm=False)
    return load_run_data(store)


def _cells(table, row):
    return {
        b: (c.n, round(c.mean, 6), None if c.lo is None else round(c.lo, 6), None if c.hi is None else round(c.hi, 6))
        for b, c in table.rows[row].items()
    }


def test_scores_by_turn_bin_with_trajectory_intervals(shaped, any_trajectories):
    table = run_growth(shaped, "rules", resamples=2000, seed=0).turn
    assert table.bins == ["1", "2-3", "4-7", "8-15"]
    assert list(table.rows) == ["mcp", "search", "terminal", OVERALL]
    # Terminal "1": t0 100, t1 60; whole-trajectory resamples have mean 100, 80 or 60, each end with p = 1/4.
    # "4-7": t0 has four samples at 50, t1 one at 10: resamples 50, 210 / 5 = 42 or 10. "8-15": t0 alone.
    assert _cells(table, "terminal") == {
        "1": (2, 80.0, 60.0, 100.0),
        "2-3": (4, 55.0, 40.0, 70.0),
        "4-7": (5, 42.0, 10.0, 50.0),
        "8-15": (1, 20.0, 20.0, 20.0),
    }
    # One trajectory: every resample is the data itself, so the interval is a point.
    assert _cells(table, "mcp") == {"1": (1, 90.0, 90.0, 90.0), "2-3": (1, 70.0, 70.0, 70.0)}
    # Overall: the mean over the domains in the bin. "1": Terminal 80, MCP 90, Search (100 + 60) / 2; "4-7" has
    # Terminal and Search (80 and 40 at turn 4), "8-15" Terminal only.
    overall = table.rows[OVERALL]
    search_23 = (90 + 100 - 10 * math.log2(3) + 50 + 60 - 10 * math.log2(3)) / 4
    assert {b: (c.n, c.domains, c.mean) for b, c in overall.items()} == {
        "1": (5, 3, pytest.approx((80 + 90 + 80) / 3)),
        "2-3": (9, 3, pytest.approx((55 + 70 + search_23) / 3)),
        "4-7": (7, 2, pytest.approx((42 + 60) / 2)),
        "8-15": (1, 1, 20.0),
    }
    # Terminal and Search are drawn independently: both at their low end (p = 1/16) is past the 2.5% tail.
    assert (overall["1"].lo, overall["1"].hi) == pytest.approx(((60 + 90 + 60) / 3, (100 + 90 + 100) / 3))
    assert (overall["8-15"].lo, overall["8-15"].hi) == (20.0, 20.0)
    assert table.rows["terminal"]["4-7"].trajectories == 2 and overall["4-7"].trajectories == 4


def test_trend_is_the_slope_per_doubling(shaped, any_trajectories):
    trend = run_growth(shaped, "rules", resamples=2000, seed=0).turn.trend
    # Search falls exactly 10 points per doubling in both trajectories, which share their turns: every resample
    # has that slope, whatever the trajectories' different starts.
    assert (trend["search"].slope, trend["search"].lo, trend["search"].hi) == pytest.approx((-10, -10, -10))
    # MCP: 90 at turn 1, 70 at turn 2 (one doubling); one trajectory, so a point interval.
    assert (trend["mcp"].slope, trend["mcp"].lo, trend["mcp"].hi) == pytest.approx((-20, -20, -20))
    x = np.log2([t for t in range(1, 9)] + [1, 2, 3, 4])
    y = [100 * RULES[f"terminal/t0/{t}"] for t in range(1, 9)] + [100 * RULES[f"terminal/t1/{t}"] for t in range(1, 5)]
    assert trend["terminal"].slope == pytest.approx(np.polyfit(x, y, 1)[0])
    # Resamples: t0 twice, t1 twice (p = 1/4 each) or one of each (the data): three slopes, the ends of the interval.
    alone = [np.polyfit(x[:8], y[:8], 1)[0], np.polyfit(x[8:], y[8:], 1)[0], trend["terminal"].slope]
    assert (trend["terminal"].lo, trend["terminal"].hi) == pytest.approx((min(alone), max(alone)))
    assert (trend["terminal"].first, trend["terminal"].last, trend["terminal"].n) == ("1", "8-15", 12)
    # Overall: the mean of the domains' slopes, and its interval the mean's.
    terminal_slope = trend["terminal"].slope
    assert terminal_slope is not None
    assert trend[OVERALL].slope == pytest.approx((terminal_slope - 30) / 3)
    # Search's and MCP's slopes are the same in every resample: Overall's interval is Terminal's, shifted and scaled.
    assert trend[OVERALL].domains == 3
    assert (trend[OVERALL].lo, trend[OVERALL].hi) == pytest.approx(((min(alone) - 30) / 3, (max(alone) - 30) / 3))
    assert trend_sentence("search", trend["search"], "turn") == (
        "Search: -10.0 points per doubling of the turn index [-10.0, -10.0] (turn 1 to turns 4-7)"
    )


def test_by_context(shaped):
    table = run_growth(shaped, "rules", resamples=200, seed=0).context
    assert table.bins == ["<2K"]  # every context here is a few hundred characters
    assert {d: cells["<2K"].n for d, cells in table.rows.items()} == {
        "mcp": 2,
        "search": 8,
        "terminal": 12,
        OVERALL: 22,
    }
    # Context grows with the turn in each trajectory, so the scores fall with it too.
    assert all((table.trend[d].slope or 0) < 0 for d in ("mcp", "search", "terminal"))


def test_without_intervals(shaped):
    table = run_growth(shaped, "rules", resamples=None).turn
    assert not table.intervals
    assert all(c.lo is None and c.hi is None for cells in table.rows.values() for c in cells.values())
    assert table.trend["mcp"].slope == pytest.approx(-20) and table.trend["mcp"].lo is None
    assert growth_summary(table).endswith("(no intervals)")


def test_undefined_slopes_and_intervals(tmp_path):
    # Web: first turns only, so no slope. OS: o0 has turns 1 and 2, o1 turn 1 only: the slope is defined, but a
    # resample that draws o1 twice has every sample at turn 1, so there is no interval.
    data = write_data(tmp_path / "data", {"web": [1, 1], "os": [2, 1]})
    rules = {"web/w0/1": 0.5, "web/w1/1": 0.7, "os/o0/1": 0.8, "os/o0/2": 0.4, "os/o1/1": 0.6}
    run = load_run_data(make_run(tmp_path / "results", "flat", data, dict.fromkeys(rules, 3), rules=rules, llm=False))
    trend = run_growth(run, "rules", resamples=500, seed=0).turn.trend
    assert trend["web"].slope is None and trend["web"].lo is None
    assert trend_sentence("web", trend["web"], "turn") == "Web: no trend (every sample at one position, in turn 1)"
    # OS: x = 0, 1, 0 and y = 80, 40, 60 -> slope (y at turn 2) - (mean at turn 1) = 40 - 70
    assert trend["os"].slope == pytest.approx(-30) and (trend["os"].lo, trend["os"].hi) == (None, None)
    assert trend[OVERALL].slope == pytest.approx(-30) and trend[OVERALL].domains == 1 and trend[OVERALL].lo is None


# --------------------------------------------------------------------------- pure: generations, summaries


def test_a_run_with_k_generations(tmp_path, monkeypatch, any_trajectories):
    from fake_openai import FakeOpenAIServer, Reply
    from typer.testing import CliRunner

    from awbench.analysis.growth import run_units
    from awbench.cli import app
    from awbench.data.dataset import read_source

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    truths = {s.record.action: s.record.ground_truth for s in read_source("sample")[0] if s.domain == "os"}

    def answer(body: dict) -> Reply:  # the truth for even seeds, nothing useful for odd ones
        truth = truths[body["messages"][-1]["content"]]
        return Reply(f"<predicted_observation>{truth if body['seed'] % 2 == 0 else 'x'}</predicted_observation>")

    with FakeOpenAIServer(responder=answer) as server:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--model",
                "m",
                "--base-url",
                server.url,
                "--data",
                "sample",
                "--domains",
                "os",
                "--generations",
                "3",
                "--judge",
                "rules",
                "--run-name",
                "k3",
                "--output",
                str(tmp_path),
            ],
        )
    assert result.exit_code == 0, result.output
    run = load_run_data(discover_runs([tmp_path / "k3"])[0][0])
    units = run_units(run, "rules", "turn")["os"]
    assert len(units) == len(truths)
    table = run_growth(run, "rules", resamples=2000, seed=0).turn
    points = {key: score for key, score, _ in run.points("rules")["os"]}
    for label, cell in table.rows["os"].items():
        in_bin = [points[u.key] for u in units if bin_label(u.position, TURN_BINS) == label]
        assert cell.n == len(in_bin) and cell.mean == pytest.approx(float(np.mean(in_bin)))
    # Each sample enters as the mean of its three generations, whose noise it carries: the intervals draw
    # trajectories of those means, never the generations again (which would count their noise twice).
    means = {"os": [Unit(u.key, u.trajectory, u.position, points[u.key]) for u in units]}
    assert run_growth(run, "rules", resamples=2000, seed=0).turn == growth_table(means, "turn", 2000, 0)
    assert invoke("show", str(tmp_path / "k3"), "--by-turn").exit_code == 0


def test_empty_bins_between_are_shown_and_outer_ones_are_not():
    units = {"os": [Unit("os/a/1", "a", 2, 10.0), Unit("os/a/9", "a", 9, 30.0)]}
    table = growth_table(units, "turn", resamples=None)
    assert table.bins == ["2-3", "4-7", "8-15"] and set(table.rows["os"]) == {"2-3", "8-15"}


@pytest.mark.parametrize(
    ("diffs", "slope", "bounds", "expected"),
    [
        (
            [("1", -2.0), ("16-31", -9.8)],
            -2.5,
            (-3.9, -1.1),
            "B's lead grows with turn index: A − B is -2.0 at turn 1 "
            "and -9.8 at turns 16-31 (-2.5 per doubling [-3.9, -1.1])",
        ),
        ([("1", 2.1), ("16-31", 9.8)], 2.0, (0.5, 3.0), "A's lead grows with turn index"),
        ([("1", -4.0), ("16-31", 6.0)], 2.0, (0.5, 3.0), "A overtakes B as the turn index grows"),
        ([("1", 0.0), ("16-31", 6.0)], 2.0, (0.5, 3.0), "A pulls ahead of B as the turn index grows"),
        ([("1", 8.0), ("16-31", 2.0)], -2.0, (-3.0, -0.5), "A's lead shrinks with turn index"),
        (
            [("1", 8.0), ("16-31", 2.0)],
            -2.0,
            (-3.0, 0.5),
            "no clear change of A − B with turn index (-2.0 per doubling "
            "[-3.0, +0.5]; its interval holds 0): A − B is +8.0 at turn 1 and +2.0 at turns 16-31",
        ),
        (
            [("1", 8.0), ("16-31", 2.0)],
            -2.0,
            None,
            "no clear change of A − B with turn index (-2.0 per doubling; no interval)",
        ),
    ],
)
def test_lead_summary(diffs, slope, bounds, expected):
    lo, hi = bounds or (None, None)
    text = lead_summary("turn", diffs, Trend(slope=slope, lo=lo, hi=hi, n=10, trajectories=5))
    assert text.startswith(expected), text


def test_one_trajectory_is_never_a_clear_change():
    trend = Trend(slope=-5.0, lo=-5.0, hi=-5.0, n=4, trajectories=1)
    assert not trend.clear
    assert lead_summary("turn", [("1", 1.0), ("4-7", -9.0)], trend).startswith(
        "no clear change of A − B with turn index (-5.0 per doubling [-5.0, -5.0]; too few to tell: 1 trajectory)"
    )


def test_lead_summary_without_a_trend():
    assert lead_summary("context", [], None).startswith("no samples both runs scored")
    assert lead_summary("context", [("<2K", 3.0)], Trend(slope=None, n=2)) == (
        "no trend with context length (the samples both runs scored are all at one position): A − B is +3.0 at <2K tokens"
    )


# --------------------------------------------------------------------------- compare

# B improves by 10 points per doubling of the turn index from 52 at turn 1; A stays at 50.
LEAD = {"terminal": [8, 8]}
A_RULES = {f"terminal/t{i}/{t}": 0.5 for i in range(2) for t in range(1, 9)}
B_RULES = {f"terminal/t{i}/{t}": 0.52 + 0.1 * math.log2(t) for i in range(2) for t in range(1, 9)}


@pytest.fixture
def lead_pair(tmp_path):
    data = write_data(tmp_path / "data", LEAD)
    results = tmp_path / "results"
    a = make_run(results, "flat-a", data, dict.fromkeys(A_RULES, 3), rules=A_RULES, llm=False)
    b = make_run(results, "rising-b", data, dict.fromkeys(B_RULES, 3), rules=B_RULES, llm=False)
    return load_run_data(a), load_run_data(b)


def test_compare_along_trajectories(lead_pair, any_trajectories):
    c = compare_runs(lead_pair[0], lead_pair[1], resamples=2000, seed=0)
    g = c.growth["turn"]
    assert g.bins == ["1", "2-3", "4-7", "8-15"]
    expected = {
        "1": -2.0,
        "2-3": -2 - 10 * (1 + math.log2(3)) / 2,
        "4-7": -2 - 10 * np.mean(np.log2([4, 5, 6, 7])),
        "8-15": -32.0,
    }
    for label, diff in expected.items():
        terminal, overall = g.rows[label]
        assert (terminal.name, overall.name) == ("terminal", OVERALL)
        assert terminal.diff == pytest.approx(diff) and overall.diff == pytest.approx(diff)
        assert terminal.n == (2 if label in ("1", "8-15") else 4 if label == "2-3" else 8)
    # Both trajectories have the same scores, so every resample of trajectories is the data itself.
    assert (g.rows["8-15"][0].lo, g.rows["8-15"][0].hi) == pytest.approx((-32, -32))
    assert (g.trend["terminal"].slope, g.trend["terminal"].lo, g.trend["terminal"].hi) == pytest.approx((-10, -10, -10))
    assert g.summary == (
        "B's lead grows with turn index: A − B is -2.0 at turn 1 and -32.0 at turns 8-15 "
        "(-10.0 per doubling [-10.0, -10.0])"
    )
    assert c.growth["context"].bins == ["<2K"] and (c.growth["context"].trend["terminal"].slope or 0) < 0


def test_compare_leaves_out_samples_one_run_did_not_score(tmp_path):
    data = write_data(tmp_path / "data", LEAD)
    results = tmp_path / "results"
    a = make_run(results, "a", data, dict.fromkeys(A_RULES, 3), rules=A_RULES, llm=False)
    late = {k: v for k, v in B_RULES.items() if not k.endswith(("/8", "/7"))}
    b = make_run(results, "b", data, dict.fromkeys(late, 3), rules=late, llm=False)
    g = compare_runs(load_run_data(a), load_run_data(b), resamples=500).growth["turn"]
    assert g.bins == ["1", "2-3", "4-7"] and [r.n for r in g.rows["4-7"]] == [6, 6]


def test_cli_compare_shows_and_writes_where_runs_differ(lead_pair, any_trajectories):
    a, b = lead_pair
    result = invoke("compare", str(a.store.path), str(b.store.path))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "A − B by turn index" in out and "A − B by context length" in out and "trend / doubling" in out
    assert "B's lead grows with turn index: A − B is -2.0 at turn 1 and -32.0 at turns 8-15" in out
    assert "A − B per doubling of the turn index: Terminal -10.0 [-10.0, -10.0]" in out
    result = invoke("compare", str(a.store.path), str(b.store.path), "--format", "json")
    data = json.loads(result.output)
    turn = data["growth"]["turn"]
    assert turn["bins"] == ["1", "2-3", "4-7", "8-15"] and turn["summary"].startswith("B's lead grows")
    assert [(r["name"], r["n"], round(r["diff"], 6)) for r in turn["rows"]["8-15"]] == [
        ("terminal", 2, -32.0),
        ("overall", 2, -32.0),
    ]
    assert turn["trend"]["overall"]["slope"] == pytest.approx(-10)
    assert set(data["growth"]) == {"turn", "context"}


# --------------------------------------------------------------------------- show


def test_show_by_turn(shaped):
    result = invoke("show", str(shaped.store.path), "--by-turn", "--resamples", "2000")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "shaped: score by turn index (judge rules-v1)" in out
    assert "score by context length" not in out
    lines = out.splitlines()
    header = next(line for line in lines if "8-15" in line and "domain" in line)
    assert header.split()[:5] == ["domain", "1", "2-3", "4-7", "8-15"]
    terminal = lines.index(next(line for line in lines if line.strip().startswith("Terminal")))
    assert lines[terminal].split() == ["Terminal", "80.0", "55.0", "42.0", "20.0", "-15.1"]
    # two trajectories: no interval, no rise or fall (`test_show_by_turn_with_intervals` has them)
    assert lines[terminal + 1].count("too few to tell") == 5 and "[" not in lines[terminal + 1]
    assert lines[terminal + 2].split() == ["n=2", "n=4", "n=5", "n=1"]
    overall = next(line for line in lines if line.strip().startswith("Overall"))
    search_23 = (90 + 100 - 10 * math.log2(3) + 50 + 60 - 10 * math.log2(3)) / 4
    assert overall.split()[1:3] == [f"{(80 + 90 + 80) / 3:.1f}", f"{(55 + 70 + search_23) / 3:.1f}"]
    assert "n=1 · 1 dom." in out  # "8-15" has Terminal only
    assert "Per doubling of the turn index, too few trajectories to tell (under 5) in MCP, Search, Terminal\n" in out
    assert (
        "From fewer than 5 trajectories, a cell or trend has no interval (too few to tell) and is never called a "
        "rise or a fall."
    ) in " ".join(out.split())


def test_show_by_context_and_both(shaped):
    result = invoke("show", str(shaped.store.path), "--by-context")
    assert result.exit_code == 0, result.output
    assert (
        "score by context length" in result.output
        and "<2K" in result.output
        and "turn index (judge" not in result.output
    )
    both = invoke("show", str(shaped.store.path), "--by-turn", "--by-context").output
    assert both.index("score by turn index") < both.index("score by context length")


def test_show_growth_options(shaped):
    assert invoke("show", str(shaped.store.path), "--by-turn", "--worst", "1").exit_code == 2
    assert invoke("show", str(shaped.store.path), "--by-turn", "--judge", "llm").exit_code == 2  # a rules-only run
    overview = invoke("show", str(shaped.store.path)).output
    assert "Along trajectories, overall" in overview and "--by-turn" in overview


# --------------------------------------------------------------------------- the report

LONG = {"terminal": [40, 5], "mcp": [9, 2], "android": [3]}


@pytest.fixture
def long_runs(tmp_path):
    data = write_data(tmp_path / "data", LONG)
    keys = [s.key for s in load_samples(DataSettings(source=str(data))).samples]
    results = tmp_path / "results"
    for i, name in enumerate(("long-a", "long-b")):
        make_run(results, name, data, {k: 1 + (i + j) % 5 for j, k in enumerate(keys)})
    return results


def test_report_has_a_growth_section_per_run(long_runs):
    stores, _ = discover_runs([long_runs])
    report = build_report(stores, worst_n=0, resamples=200)
    page = report.html
    assert '<section id="growth"><h2>Along trajectories</h2>' in page and '<a href="#growth">' in page
    assert page.count('class="growth-section"') == 2
    assert page.count('<svg id="growth-') == 4 and page.count('class="growth-chart"') == 4
    assert set(report.charts) == {"chart-domains-1", "chart-dimensions-1"}  # the bar charts, as before
    # Terminal reaches turn 40: every turn bin; the turn table has a row per domain and Overall.
    assert page.count('<tr data-row="') == 2 * (4 + 4)
    assert "<th>32+</th>" in page and "trend / doubling" in page
    no_ci = build_report(stores, worst_n=0, ci=False).html
    assert 'class="errorbar"' not in no_ci and 'class="point"' in no_ci


def test_report_writes_the_growth_charts_as_png_too(long_runs, tmp_path):
    from test_report import _png_size

    out, png = tmp_path / "r.html", tmp_path / "png"
    result = invoke("report", "--output", str(long_runs), "-o", str(out), "--worst", "0", "--no-ci", "--png", str(png))
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in png.glob("growth-*.png")) == [
        "growth-0-context.png",
        "growth-0-turn.png",
        "growth-1-context.png",
        "growth-1-turn.png",
    ]
    width, height = _png_size(png / "growth-0-turn.png")
    assert width > 900 and height > 250


def test_report_growth_chart_in_a_browser(long_runs, tmp_path, any_trajectories):
    chromium = require_chromium()
    out = tmp_path / "report.html"
    result = invoke("report", "--output", str(long_runs), "-o", str(out), "--worst", "0")
    assert result.exit_code == 0, result.output
    checked = tmp_path / "checked.html"
    checked.write_text(add_script(out.read_text(encoding="utf-8"), LAYOUT_CHECK), encoding="utf-8")
    dom = _Dom()
    dom.feed(dump_dom(chromium, checked))
    layout = json.loads(dom.find("body")[0]["data-layout"])
    assert sorted(layout) == ["growth-0-context", "growth-0-turn", "growth-1-context", "growth-1-turn"]
    for chart, found in layout.items():
        assert found["problems"] == [], chart
    stores, _ = discover_runs([long_runs])
    data = {s.name: load_run_data(s) for s in stores}
    for i, name in enumerate(sorted(data)):
        assert dom.find("section", cls="growth-section")[i]["data-run"] == name
        table = run_growth(data[name], "llm").turn
        chart = f"growth-{i}-turn"
        panels = dom.find("g", inside=chart, cls="panel")
        assert [p["data-series"] for p in panels] == ["mcp", "terminal", "android", OVERALL]
        assert layout[chart]["panels"] == ["MCP", "Terminal", "Android", "Overall"]
        # Every panel labels every bin; a point per bin with samples, and its interval, where it has one (from
        # five trajectories or more), as an error bar.
        assert layout[chart]["bins"] == 4 * len(table.bins) and table.bins == [
            "1",
            "2-3",
            "4-7",
            "8-15",
            "16-31",
            "32+",
        ]
        points = dom.find("circle", inside=chart, cls="point")
        cells = {(d, b): c for d, row in table.rows.items() for b, c in row.items()}
        assert len(points) == len(cells) == 6 + 4 + 2 + 6
        for point in points:
            cell = cells[(point["data-series"], point["data-category"])]
            assert point["data-value"] == f"{cell.mean:.2f}" and point["data-n"] == str(cell.n)
        with_interval = [c for c in cells.values() if c.lo is not None]
        assert len(dom.find("line", inside=chart, cls="errorbar")) == len(with_interval) > 0
        assert DOMAIN_LABELS["terminal"] in dom.text[f"{chart}-table"]


LAYOUT_CHECK = """
(function () {
  function box(el) { var b = el.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; }
  function overlap(a, b) { return a[0] < b[2] - 0.5 && b[0] < a[2] - 0.5 && a[1] < b[3] - 0.5 && b[1] < a[3] - 0.5; }
  var result = {};
  document.querySelectorAll("svg.growth-chart").forEach(function (svg) {
    var frame = box(svg), problems = [];
    var texts = Array.prototype.map.call(svg.querySelectorAll("text"), function (t) { return [t, box(t)]; });
    var frames = Array.prototype.map.call(svg.querySelectorAll("rect.frame"), function (r) { return box(r); });
    texts.forEach(function (a, i) {
      if (a[1][0] < frame[0] || a[1][2] > frame[2] + 0.5 || a[1][1] < frame[1] || a[1][3] > frame[3]) {
        problems.push("outside: " + a[0].textContent);
      }
      texts.slice(i + 1).forEach(function (b) {
        if (overlap(a[1], b[1])) { problems.push(a[0].textContent + " / " + b[0].textContent); }
      });
      frames.forEach(function (f) { if (overlap(a[1], f)) { problems.push("over a plot: " + a[0].textContent); } });
    });
    Array.prototype.forEach.call(svg.querySelectorAll("circle.point"), function (c) {
      var b = box(c), inside = frames.some(function (f) { return b[0] >= f[0] - 4 && b[2] <= f[2] + 4 && b[1] >= f[1] - 4 && b[3] <= f[3] + 4; });
      if (!inside) { problems.push("point outside its plot"); }
    });
    result[svg.id] = {problems: problems.slice(0, 20), bins: svg.querySelectorAll("text.bin").length,
      panels: Array.prototype.map.call(svg.querySelectorAll("text.panel-title"), function (t) { return t.textContent; })};
  });
  document.body.setAttribute("data-layout", JSON.stringify(result));
})();
"""

"""Output that fits an 80-column terminal (a pipe, a split pane): `score`, `show` (and --by-turn/--by-context),
`compare`, `leaderboard` and `data info` print every number whole, no line wider than 80, no `…`; columns that
do not fit are stacked into a further table. Progress on stderr that is not a terminal is whole lines.

The expected numbers come from what the commands compute (scores.json, the JSON of `compare` and
`leaderboard`, the analysis functions `show` renders), formatted as the tables print them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from runs_helpers import make_run, write_data
from typer.testing import CliRunner

from awbench.analysis.growth import fmt_points, fmt_spread, run_growth
from awbench.analysis.leaderboard import Cell, fmt_interval, fmt_number
from awbench.analysis.options import DEFAULT_SEED
from awbench.analysis.runs import load_run_data, point_summary, run_intervals
from awbench.analysis.stats import TOO_FEW
from awbench.cli import app, common, progress
from awbench.domains import DIMENSIONS, DOMAINS, to_100
from awbench.run.store import RunStore

WIDTH = 80
RESAMPLES = "2000"
# The names of issue 26's report: long enough that a table of them and eight numbers cannot sit side by side.
A, B = "qwen3-235b-a22b-instruct-2507__gpt-5.2", "baseline-last-observation__gpt-5.2"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Two LLM-judged runs with rule scores beside them, seven domains of five trajectories each (intervals)."""
    root = tmp_path_factory.mktemp("narrow")
    data = write_data(root / "data", {d: [16, 1, 8, 2, 4] for d in DOMAINS})  # turn bins 1 to 16-31
    keys = [json.loads(line) for path in sorted(data.iterdir()) for line in path.read_text().splitlines()]
    keys = [f"{k['task']}/{k['id']}/{k['turn_idx']}" for k in keys]
    for name, shift in ((A, 0), (B, 2)):
        grades = {k: {d: 1 + (i * 7 + j * 3 + shift) % 5 for j, d in enumerate(DIMENSIONS)} for i, k in enumerate(keys)}
        rules = {k: ((i * 37 + shift) % 100) / 100 for i, k in enumerate(keys)}
        make_run(root / "results", name, data, grades, rules=rules, cost=1.2345)
    return root / "results"


@pytest.fixture
def narrow(monkeypatch):
    """The commands as a user at an 80-column terminal runs them: COLUMNS=80, and both consoles at 80."""
    monkeypatch.setattr(common.console, "_width", WIDTH)
    monkeypatch.setattr(common.err_console, "_width", WIDTH)

    def invoke(*args: str | Path):
        result = CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": str(WIDTH), "TTY_COMPATIBLE": "1"})
        assert result.exit_code == 0, result.output
        return result.stdout

    return invoke


def assert_fits(out: str, numbers: list[str]) -> None:
    """No line wider than the terminal, nothing cut, and each expected number printed whole (no digit next to
    it that would make it part of a longer one)."""
    assert numbers
    widest = max(out.splitlines(), key=len)
    assert len(widest) <= WIDTH, widest
    assert "…" not in out
    missing = [n for n in numbers if not re.search(rf"(?<![\d.]){re.escape(n)}(?!\d)", out)]
    assert not missing, missing


def first_column(section: str) -> list[str]:
    """The first column of the first boxed table in `section`: the header, then the body's lines joined (folded
    names whole, one after the other)."""
    cells: list[str] = []
    for line in section.splitlines():
        if line.startswith(("┏", "┡", "├")):
            cells.append("")
        elif line.startswith(("┃", "│")):
            cells[-1] += line.split(line[0])[1].strip()
        elif line.startswith("└"):
            break
    return cells


def scores_numbers(scores: dict) -> list[str]:
    numbers = [fmt_number(scores["overall"]), fmt_number(scores["overall_micro"])]
    for d in scores["domains"].values():
        numbers += [fmt_number(d["score"]), str(d["n"])] + [fmt_number(v) for v in d["dimensions"].values()]
    rules = scores["rules"]
    return numbers + [fmt_number(rules["overall"])] + [fmt_number(d["score"]) for d in rules["domains"].values()]


def test_score_at_80_columns_stacks_the_dimensions_and_cuts_no_number(runs, narrow):
    out = narrow("score", runs / A)
    scores = json.loads((runs / A / "scores.json").read_text(encoding="utf-8"))
    assert len(scores_numbers(scores)) == 2 + 7 * 7 + 1 + 7
    assert_fits(out, scores_numbers(scores))
    # The rubric dimensions are a second table below the scores, its rows labelled by domain again.
    assert out.count("┃ domain") == 2 and "Overall (macro)" in out
    first, second = out.split("┃ domain")[1:]
    assert "rule score" in first and "Consistency" not in first and "Consistency" in second


def test_the_dimension_table_has_overall_rows(tmp_path, narrow):
    """Issue 36: the dimensions' Overall (macro) and (micro) rows were printed empty. Macro: the mean of the
    domains'; micro: the mean over samples (MCP has three, the six others one each)."""
    data = write_data(tmp_path / "data", {d: [2, 1] if d == "mcp" else [1] for d in DOMAINS})
    keys = [json.loads(line) for path in sorted(data.iterdir()) for line in path.read_text().splitlines()]
    keys = [f"{k['task']}/{k['id']}/{k['turn_idx']}" for k in keys]
    mcp = iter([5, 5, 2])
    make_run(tmp_path / "results", "r", data, {k: next(mcp) if k.startswith("mcp/") else 1 for k in keys})
    out = narrow("score", tmp_path / "results" / "r")
    macro, micro = to_100((5 + 5 + 2) / 3) / 7, to_100((5 + 5 + 2 + 6) / 9)
    rows = [" ".join(line.strip("│ ").split()) for line in out.splitlines() if line.startswith("│ Overall (")]
    assert rows == [  # at 80 columns the dimensions are a second table
        f"Overall (macro) │ 9 │ 0 │ 0 │ {macro:.2f}",
        f"Overall (micro) │ │ │ │ {micro:.2f}",
        "Overall (macro) │ " + " │ ".join([f"{macro:.2f}"] * 5),
        "Overall (micro) │ " + " │ ".join([f"{micro:.2f}"] * 5),
    ]


def test_messages_are_whole_lines_in_a_pipe(runs, tmp_path):
    """Issue 36: in a pipe a message is one line however narrow COLUMNS is (grep finds it whole); tables keep the
    width."""
    result = CliRunner().invoke(app, ["score", str(runs / A)], env={"COLUMNS": "40"})
    (spearman,) = [line for line in result.stdout.splitlines() if line.startswith("rule score vs LLM judge")]
    assert spearman.endswith("(MCP n/a, Search n/a, Terminal n/a, SWE n/a, Android n/a, Web n/a, OS n/a)")  # in order
    assert f"run saved in {runs / A}" in result.stdout.splitlines()
    report = CliRunner().invoke(app, ["report", str(runs), "-o", str(tmp_path / "r.html")], env={"COLUMNS": "40"})
    assert report.exit_code == 0, report.output
    assert report.stdout.splitlines() == [
        f"wrote {tmp_path / 'r.html'} (2 runs; 3 leaderboard charts, 4 along trajectories)"
    ]


def test_score_in_a_wide_terminal_is_one_table(runs, monkeypatch):
    monkeypatch.setattr(common.console, "_width", 200)
    out = CliRunner().invoke(app, ["score", str(runs / A)], env={"COLUMNS": "200"}).stdout
    assert out.count("┃ domain") == 1 and "Consistency" in out


def test_show_at_80_columns_cuts_no_number(runs, narrow):
    out = narrow("show", runs / A, "--resamples", RESAMPLES)
    data = load_run_data(RunStore(runs / A))
    judge = data.evaluation(None).id
    ci = run_intervals(data, judge, int(RESAMPLES), DEFAULT_SEED)
    numbers = []
    for name, (n, score, dims) in point_summary(data.points(judge)).items():
        lo, hi = ci[name]["score"]
        numbers += [str(n), fmt_number(score), f"[{lo:.2f}, {hi:.2f}]", *(fmt_number(v, 1) for v in dims.values())]
    assert len(numbers) == 8 * 8
    assert_fits(out, numbers)
    # The run's whole name in the length-bias table (folded, never cut), with its count.
    bias = out[out.index("Mean score by prediction") :]
    assert (
        first_column(bias) == ["run", A]
        and f"n={sum(n for n, _, _ in point_summary(data.points(judge)).values()) // 2}" in bias
    )


@pytest.mark.parametrize("axis", ["turn", "context"])
def test_show_along_trajectories_at_80_columns_cuts_no_number(runs, narrow, axis):
    out = narrow("show", runs / A, f"--by-{axis}", "--resamples", RESAMPLES)
    data = load_run_data(RunStore(runs / A))
    table = run_growth(data, data.evaluation(None).id, int(RESAMPLES), DEFAULT_SEED).table(axis)
    numbers = []
    for name, cells in table.rows.items():
        for cell in cells.values():
            numbers += [fmt_points(cell.mean), f"n={cell.n}", *([fmt_spread(cell)] if fmt_spread(cell) else [])]
        trend = table.trend[name]
        numbers += [fmt_points(trend.slope, True), *([fmt_spread(trend, True)] if fmt_spread(trend, True) else [])]
    assert_fits(out, [n for n in numbers if n != TOO_FEW])


def test_compare_at_80_columns_cuts_no_number_nor_a_run_name(runs, narrow):
    out = narrow("compare", runs / A, runs / B, "--resamples", RESAMPLES)
    result = json.loads(narrow("compare", runs / A, runs / B, "--resamples", RESAMPLES, "--format", "json"))
    numbers = []
    for row in result["rows"]:
        numbers += [
            str(row["n"]),
            fmt_number(row["mean_a"]),
            fmt_number(row["mean_b"]),
            f"{row['diff']:+.2f}",
            f"[{fmt_number(row['lo'])}, {fmt_number(row['hi'])}]",
            f"{row['a_better']:.1%}",
            str(row["wins"]),
            str(row["ties"]),
            str(row["losses"]),
        ]
    for bias in result["length_bias"].values():
        numbers += [fmt_number(mean, 1) for n, mean in bias.values() if n]
    for growth in result["growth"].values():
        for rows in growth["rows"].values():
            overall = rows[-1]  # a bin's Overall has an interval only when each of its domains has five trajectories
            numbers += [fmt_points(overall["diff"], True)]
            numbers += [] if overall["too_few"] else [f"{overall['a_better']:.1%}"]
    assert len(result["rows"]) == 8
    assert_fits(out, numbers)
    # win/tie/loss stacked below, and both length-bias rows named in full (issue 26: both read `baseline-…`)
    assert out.count("│ Overall  │") == 2
    assert first_column(out[out.index("Mean score by prediction") :]) == ["run", A + B]


def test_leaderboard_at_80_columns_cuts_no_number(runs, narrow):
    out = narrow("leaderboard", runs, "--ci", "--resamples", RESAMPLES)
    board = json.loads(narrow("leaderboard", runs, "--ci", "--resamples", RESAMPLES, "--format", "json"))
    numbers = []
    for group in board["groups"]:
        for row in group["rows"]:
            numbers.append(f"{row['scored']}/{row['failed']}")
            for cell in row["cells"].values():
                numbers += [fmt_number(cell["value"]), fmt_interval(Cell.model_validate(cell), 1)]
    assert len(numbers) == 2 * 2 * (1 + 8 * 2)  # two groups (LLM judge, rule scores) of two runs
    assert_fits(out, numbers)
    assert out.count(" #  Run") > len(board["groups"])  # each group stacked into several tables
    # issue 36: the run names whole on one line each (never `qwen3-235b-a22b-ins` / `truct-2507__gpt-5.2`), the
    # domains in their order, Overall in each group's first table
    assert out.count(f" {A} ") == out.count(f" {B} ") == out.count(" #  Run")
    for group in out.split("· failures")[1:]:
        tables = [part.splitlines()[0].split() for part in group.split(" #  Run")[1:]]
        assert tables[0][:2] == ["Overall", "unscored"] and all("Overall" not in t for t in tables[1:])
        assert [c for t in tables[1:] for c in t] == ["MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS"]


def test_data_info_at_80_columns_cuts_no_number(narrow):
    from awbench.analysis.data_info import data_info
    from awbench.data.dataset import read_source, resolve_source

    out = narrow("data", "info", "sample").split("\nnote:")[0]  # the table (the note below is prose)
    info = data_info(read_source("sample")[0], resolve_source("sample"), None)
    numbers = [
        f"{n:,}" if isinstance(n, int) else f"{n:,.0f}"
        for d in [*info.domains, info.total]
        for n in (d.samples, d.trajectories, d.avg_context_chars, d.max_context_chars)
    ]
    assert_fits(out, numbers + [f"{d.avg_turns:.1f}" for d in info.domains])


# --------------------------------------------------------------------------- progress


PROGRESS_LINE = re.compile(r"(infer|judge) \S+: (\d+)/(\d+) \(\d+%\), \d+ failed, \d+:\d\d:\d\d elapsed")


def test_progress_in_a_pipe_is_whole_lines(tmp_path):
    env = {**os.environ, "COLUMNS": "40", "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from awbench.cli import main; main()",
            "run",
            "--model",
            "baseline:last-observation",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--output",
            str(tmp_path / "results"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # the quickstart's first turns fail, as the README says
    lines = [line for line in done.stderr.splitlines() if line.startswith(("infer ", "judge "))]
    assert [PROGRESS_LINE.fullmatch(line) is not None for line in lines] == [True] * len(lines), lines
    last = {m.group(1): m.groups()[1:] for m in map(PROGRESS_LINE.fullmatch, lines) if m is not None}
    assert last == {"infer": ("65", "65"), "judge": ("52", "52")}
    assert "━" not in done.stderr and "…" not in done.stderr and "\r" not in done.stderr


def test_progress_in_a_pipe_comes_at_once_then_at_least_every_quiet_interval(monkeypatch, capsys):
    """Issue 36: in a pipe `run` printed its first line after 97 s, `turing` nothing for 4 min: a line when a stage
    starts, one each time the ticker finds QUIET_SECONDS passed since the last (advances or not), one at the end."""
    now = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    stage = progress._LineStage("infer m", 100)
    for second in range(1, 26):
        now[0] = float(second)
        if second <= 12:
            stage.advance(failed=second == 1)  # then a slow server: nothing comes for a while
        stage.tick()
    stage.finish()
    assert capsys.readouterr().err.splitlines() == [
        "infer m: 0/100 (0%), 0 failed, 0:00:00 elapsed",
        "infer m: 10/100 (10%), 1 failed, 0:00:10 elapsed",
        "infer m: 12/100 (12%), 1 failed, 0:00:20 elapsed",
        "infer m: 12/100 (12%), 1 failed, 0:00:25 elapsed",
    ]


def test_the_ticker_prints_a_stage_that_waits(monkeypatch, capsys):
    """The ticker thread: a stage with nothing advancing (a batch in flight, a busy server) still says so."""
    import time

    monkeypatch.setattr(progress._LineStage, "QUIET_SECONDS", 1.0)
    with progress.RichProgress().stage("judge j", 3):
        time.sleep(2.6)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "judge j: 0/3 (0%), 0 failed, 0:00:00 elapsed" and len(lines) >= 3
    assert all(line.startswith("judge j: 0/3 (0%), 0 failed, 0:00:0") for line in lines)

"""Leaderboard: run discovery, comparability groups, every output format, intervals, published rows.
The runs are built by `runs_helpers`."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, invoke, make_run, write_data

from awbench.analysis.leaderboard import (
    Cell,
    build_leaderboard,
    fmt_cell,
    to_csv,
    to_json,
    to_markdown,
)
from awbench.analysis.runs import discover_runs, load_run_data, point_summary
from awbench.domains import DIMENSIONS
from awbench.run.pipeline import PipelineError
from awbench.run.scoring import ScoresFile
from awbench.run.store import RunStore


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return write_data(tmp_path / "data", SMALL)


@pytest.fixture
def runs(tmp_path, data_dir) -> Path:
    """alpha (62.5) and beta (50.0) comparable; gamma judged with other prompts; delta on other data."""
    results = tmp_path / "results"
    make_run(results, "alpha", data_dir, dict(zip(MCP + SEARCH, [5, 3, 1, 4, 4])), cost=1.5)
    make_run(results, "beta", data_dir, dict(zip(MCP + SEARCH, [3, 3, 3, 5, None])))
    make_run(results, "gamma", data_dir, dict.fromkeys(MCP + SEARCH, 2), prompt_set="strict", prompt_sha="9" * 64)
    other = write_data(tmp_path / "other-data", SMALL, salt=" (v2)")
    make_run(results, "delta", other, dict.fromkeys(MCP + SEARCH, 4))
    return results


def _board(results: Path, **options):
    stores, notes = discover_runs([results])
    return build_leaderboard(stores, notes=notes, **options)


# --------------------------------------------------------------------------- arithmetic and discovery


def test_fixture_scores_are_macro_and_micro_means(runs):
    scores = ScoresFile.model_validate_json((runs / "alpha" / "scores.json").read_text())
    assert scores.domains["mcp"].score == 50.0  # grades 5, 3, 1 -> 100, 50, 0
    assert scores.domains["search"].score == 75.0
    # two domains of seven: no Overall, macro nor micro (a run of all seven: tests/run/test_scoring.py)
    assert (scores.overall, scores.overall_micro, scores.partial) == (None, None, "partial (2 of 7 domains)")
    beta = ScoresFile.model_validate_json((runs / "beta" / "scores.json").read_text())
    assert beta.domains["search"].score == 50.0  # the failed generation counts as 0 ("minimum")
    assert beta.domains["search"].failed == 1


def test_point_summary_matches_scores_json(runs):
    data = load_run_data(RunStore(runs / "beta"))
    summary = point_summary(data.points("llm"))
    assert {k: v[:2] for k, v in summary.items()} == {"mcp": (3, 50.0), "search": (2, 50.0)}  # no Overall of two
    assert summary["search"][2]["format"] == 50.0  # dimensions: the failure's 0 and 100


def test_discover_skips_unscored_runs_and_accepts_a_run_dir(runs):
    (runs / "alpha" / "scores.json").rename(runs / "alpha" / "scores.old")
    stores, notes = discover_runs([runs])
    assert sorted(s.name for s in stores) == ["beta", "delta", "gamma"]
    assert len(notes) == 1 and "alpha" in notes[0] and "no scores.json" in notes[0]
    stores, _ = discover_runs([runs / "beta"])
    assert [s.name for s in stores] == ["beta"]


def test_samples_of_changed_data_are_refused(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    store = make_run(tmp_path / "results", "old", data, dict.fromkeys(MCP, 3))
    write_data(data, SMALL, salt=" edited")
    with pytest.raises(PipelineError, match="is not what run old was made with"):
        load_run_data(store)


# --------------------------------------------------------------------------- grouping


def test_comparable_runs_share_a_group_and_others_are_separate(runs):
    board = _board(runs)
    groups = {tuple(r.run for r in g.rows): g.header for g in board.groups}
    assert list(groups) == [("alpha", "beta"), ("delta",), ("gamma",)]
    assert groups[("alpha", "beta")].startswith("judge gpt-5.2-2025-12-11 · prompts rubric@1a2b3c · data ")
    assert "prompts strict@999999" in groups[("gamma",)]
    assert board.notes[0] == "3 groups are ranked separately: they differ in prompt set, data"
    # two domains of seven: no Overall, so nothing is ranked (`test_only_complete_evaluations_are_ranked`)
    assert [(r.rank, r.partial) for r in board.groups[0].rows] == [(None, "partial (2 of 7 domains)")] * 2


def test_a_different_judge_model_is_a_different_group(tmp_path, data_dir):
    results = tmp_path / "results"
    make_run(results, "a", data_dir, dict.fromkeys(MCP, 3))
    make_run(results, "b", data_dir, dict.fromkeys(MCP, 4), judge_model="qwen3-judge")
    board = _board(results)
    assert [len(g.rows) for g in board.groups] == [1, 1]
    assert board.notes[0] == "2 groups are ranked separately: they differ in judge"
    # the search samples have no prediction: both are incomplete
    assert [r.incomplete for g in board.groups for r in g.rows] == ["incomplete (3 of 5 judged)"] * 2
    assert board.notes[1].startswith(
        "a (llm-a) is not ranked: incomplete (3 of 5 judged); finish it with the same "
        "`awbench run` command or `awbench judge "
    )


def test_rules_judge_table(tmp_path, data_dir):
    results = tmp_path / "results"
    grades = dict.fromkeys(MCP + SEARCH, 3)
    make_run(results, "both", data_dir, grades, rules=dict(zip(MCP + SEARCH, [1.0, 0.5, 0.0, 0.25, 0.75])))
    board = _board(results, judge="rules")
    row = board.groups[0].rows[0]
    assert (row.cells["mcp"].value, row.cells["search"].value, row.cells["overall"].value) == (50.0, 50.0, None)
    assert board.groups[0].header.startswith("judge rules · prompts rules@1 ·")
    make_run(results, "llm-only", data_dir, grades)
    board = _board(results, judge="rules")
    assert [r.run for g in board.groups for r in g.rows] == ["both"]
    assert "left out llm-only: it has no rules scores" in board.notes


# --------------------------------------------------------------------------- formats


def _stable(text: str) -> str:
    """Data fingerprints depend on tmp paths' content only, but keep the assertion readable."""
    return re.sub(r"data [0-9a-f]{6}", "data FPRINT", text)


def test_csv_exact(runs):
    stores = [RunStore(runs / "alpha"), RunStore(runs / "beta")]
    fp = stores[0].read_manifest().data_fingerprint[:6]
    text = to_csv(build_leaderboard(stores))
    header = (
        '"group","rank","run","model","published","MCP","Search","Terminal","SWE","Android","Web","OS","Overall",'
        '"scored","failed","unscored","judge","prompts","data","cost_usd","source","status"'
    )
    group = f"judge gpt-5.2-2025-12-11 · prompts rubric@1a2b3c · data {fp} · failures minimum"
    none = ",".join(['""'] * 6)  # no score in the five other domains, nor Overall: empty fields
    # Text quoted (a `;` in a name stays inside quotes for a spreadsheet that splits on `;`), numbers not
    assert text.splitlines() == [
        header,
        f'"{group}","","alpha","alpha","no",50.00,75.00,{none},5,0,0,"gpt-5.2-2025-12-11","rubric@1a2b3c","{fp}",'
        '1.5000,"","partial (2 of 7 domains)"',
        f'"{group}","","beta","beta","no",50.00,50.00,{none},5,1,0,"gpt-5.2-2025-12-11","rubric@1a2b3c","{fp}","",'
        '"","partial (2 of 7 domains)"',
    ]


def test_markdown_exact(runs):
    board = build_leaderboard([RunStore(runs / "alpha"), RunStore(runs / "gamma")])
    expected = """\
**judge gpt-5.2-2025-12-11 · prompts rubric@1a2b3c · data FPRINT · failures minimum**

| # | Run | Model | MCP | Search | Terminal | SWE | Android | Web | OS | Overall | Scored | Failed | Unscored | Judge | Prompts | Data | Cost |
| --: | :-- | :-- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | :-- | :-- | :-- | --: |
|  | alpha *(partial \\(2 of 7 domains\\))* | alpha | 50.00 | 75.00 | – | – | – | – | – | – | 5 | 0 | 0 | gpt-5.2-2025-12-11 | rubric@1a2b3c | FPRINT | $1.50 |

**judge gpt-5.2-2025-12-11 · prompts strict@999999 · data FPRINT · failures minimum**

| # | Run | Model | MCP | Search | Terminal | SWE | Android | Web | OS | Overall | Scored | Failed | Unscored | Judge | Prompts | Data | Cost |
| --: | :-- | :-- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: | :-- | :-- | :-- | --: |
|  | gamma *(partial \\(2 of 7 domains\\))* | gamma | 25.00 | 25.00 | – | – | – | – | – | – | 5 | 0 | 0 | gpt-5.2-2025-12-11 | strict@999999 | FPRINT |  |

- 2 groups are ranked separately: they differ in prompt set
"""
    fp = RunStore(runs / "alpha").read_manifest().data_fingerprint[:6]
    assert _stable(to_markdown(board)).replace(f"| {fp} |", "| FPRINT |") == expected


def test_json_exact(runs):
    board = build_leaderboard([RunStore(runs / "beta")])
    data = json.loads(to_json(board))
    assert data["view"] == "domain" and data["columns"] == [
        "mcp",
        "search",
        "terminal",
        "swe",
        "android",
        "web",
        "os",
        "overall",
    ]
    row = data["groups"][0]["rows"][0]
    assert {k: v["value"] for k, v in row["cells"].items()} == {
        "mcp": 50.0,
        "search": 50.0,
        "terminal": None,
        "swe": None,
        "android": None,
        "web": None,
        "os": None,
        "overall": None,
    }
    assert (row["run"], row["rank"], row["scored"], row["failed"], row["n"], row["published"]) == (
        "beta",
        None,
        5,
        1,
        5,
        False,
    )
    assert (row["partial"], row["incomplete"]) == ("partial (2 of 7 domains)", None)
    assert (row["judge"], row["prompts"], row["cost_usd"]) == ("gpt-5.2-2025-12-11", "rubric@1a2b3c", None)


def test_dimension_view(tmp_path, data_dir):
    results = tmp_path / "results"
    grade = {"format": 5, "factuality": 1, "consistency": 3, "realism": 3, "quality": 3}
    make_run(results, "dims", data_dir, dict.fromkeys(MCP, grade) | dict.fromkeys(SEARCH, 5))
    board = _board(results, view="dimension")
    row = board.groups[0].rows[0]
    assert board.columns == [*DIMENSIONS, "overall"]
    assert board.labels["overall"] == "Overall"
    # mean over domains: format (100 + 100) / 2, factuality (0 + 100) / 2, the others (50 + 100) / 2;
    # the total: MCP's mean grade 3 -> 50, Search 100 -> 75
    assert {c: row.cells[c].value for c in board.columns} == {
        "format": 100.0,
        "factuality": 50.0,
        "consistency": 75.0,
        "realism": 75.0,
        "quality": 75.0,
        "overall": None,
    }  # two domains of seven: no Overall
    board = _board(results, view="dimension", scope="mcp")
    row = board.groups[0].rows[0]
    assert board.labels["overall"] == "MCP total"
    assert (row.cells["factuality"].value, row.cells["overall"].value) == (0.0, 50.0)


def test_cell_formats():
    assert fmt_cell(Cell(value=None)) == "–"
    assert fmt_cell(Cell(value=50.0)) == "50.00"
    # bootstrap intervals are not symmetric: both ends, never a ± of one side
    assert fmt_cell(Cell(value=50.0, lo=45.0, hi=53.0)) == "50.00 [45.00, 53.00]"
    assert fmt_cell(Cell(value=50.0, lo=float("nan"), hi=53.0)) == "50.00"


# --------------------------------------------------------------------------- intervals


def test_intervals_resample_trajectories(runs, any_trajectories):
    board = build_leaderboard([RunStore(runs / "alpha")], ci=True, resamples=2000, seed=0)
    cells = board.groups[0].rows[0].cells
    # Search: two one-turn trajectories both at 75 -> no spread at all.
    assert (cells["search"].lo, cells["search"].hi) == (75.0, 75.0)
    # MCP: trajectory m0 = {100, 50}, m1 = {0}. Drawing whole trajectories gives means 75 (m0 twice),
    # 50 (both: 150 / 3) and 0 (m1 twice): the interval spans 0..75.
    assert (cells["mcp"].lo, cells["mcp"].hi) == (0.0, 75.0)
    assert (cells["overall"].value, cells["overall"].lo, cells["overall"].hi) == (None, None, None)  # partial
    # One verdict and one generation per sample: the intervals say which noise they hold without measuring it.
    assert board.notes == [
        "the intervals of alpha (judge and generation) hold the noise named without measuring it apart (one verdict "
        "or one generation per sample): `awbench score RUN` says what each run measures"
    ]


def test_intervals_warn_when_scores_json_is_stale(runs):
    path = runs / "alpha" / "judges" / "llm-alpha" / "scores.json"
    scores = json.loads(path.read_text())
    scores["domains"]["mcp"]["score"] = 51.0
    path.write_text(json.dumps(scores))
    board = build_leaderboard([RunStore(runs / "alpha")], ci=True, resamples=200)
    assert any("scores.json does not match its judgments (mcp)" in n for n in board.notes)


# --------------------------------------------------------------------------- published rows


def test_reference_rows_are_their_own_unranked_group(runs):
    board = build_leaderboard([RunStore(runs / "alpha")], reference=True)
    assert len(board.groups) == 2
    published = board.groups[1]
    assert published.published and published.header.startswith("published · judge GPT-5.2")
    assert len(published.rows) == 14 and all(r.published and r.rank is None for r in published.rows)
    assert published.rows[0].run == "Qwen-AgentWorld-397B-A17B"  # sorted by published Overall
    assert board.groups[0].rows[0].rank is None  # partial: two domains of seven


def test_mix_reference_ranks_published_with_computed(runs):
    board = build_leaderboard([RunStore(runs / "alpha")], reference=True, mix_reference=True)
    assert len(board.groups) == 1
    rows = board.groups[0].rows
    # alpha's two domains give no Overall: it is listed below the ranked published rows
    assert len(rows) == 15 and (rows[-1].run, rows[-1].rank) == ("alpha", None)
    assert [r.rank for r in rows[:-1]] == list(range(1, 15)) and all(r.published for r in rows[:-1])
    assert any("--mix-reference" in n for n in board.notes)


def test_reference_rows_have_no_dimensions(runs):
    board = build_leaderboard([RunStore(runs / "alpha")], view="dimension", reference=True)
    assert len(board.groups) == 1
    assert "published rows left out: the release gives no per-dimension scores" in board.notes


# --------------------------------------------------------------------------- CLI


def test_cli_formats_and_out_file(runs, tmp_path):
    result = invoke("leaderboard", str(runs), "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith('"group","rank","run","model","published","MCP"')
    assert len(result.stdout.splitlines()) == 5
    assert result.stderr == "note: 3 groups are ranked separately: they differ in prompt set, data\n"
    out = tmp_path / "board.md"
    result = invoke("leaderboard", str(runs), "--format", "markdown", "-o", str(out))
    assert result.exit_code == 0 and out.read_text().count("**judge ") == 3
    result = invoke("leaderboard", str(runs), "--format", "json")
    assert [len(g["rows"]) for g in json.loads(result.stdout)["groups"]] == [2, 1, 1]
    html_out = tmp_path / "board.html"
    result = invoke("leaderboard", str(runs), "--format", "html", "-o", str(html_out))
    assert result.exit_code == 0 and html_out.read_text().count('<tr class="run"') == 4


def test_cli_table_shows_groups_and_reasons(runs):
    result = invoke("leaderboard", "--output", str(runs), "--reference")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "prompts rubric@1a2b3c" in out and "prompts strict@999999" in out
    assert "groups are ranked separately: they differ in prompt set, data" in out
    assert "published · judge GPT-5.2" in out and "Qwen-AgentWorld-397B-A17B" in out
    assert "$1.50" in out


def test_cli_ci_and_errors(runs, tmp_path):
    result = invoke("leaderboard", str(runs / "alpha"), "--ci", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert '"MCP lo","MCP hi"' in result.output.splitlines()[0]
    assert invoke("leaderboard", str(tmp_path / "nowhere")).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("leaderboard", str(empty))
    assert refusal(result) == (2, "no_scored_runs")
    assert invoke("leaderboard", str(runs), "--domain", "mcp").exit_code == 2  # --domain needs --by dimension
    assert invoke("leaderboard", str(runs), "--format", "yaml").exit_code == 2


def test_csv_reads_as_numbers(runs, any_trajectories):
    pandas = pytest.importorskip("pandas")
    result = invoke("leaderboard", str(runs), "--ci", "--reference", "--format", "csv")
    assert result.exit_code == 0, result.output
    frame = pandas.read_csv(io.StringIO(result.stdout))
    columns = [
        "MCP",
        "Search",
        "Terminal",
        "SWE",
        "Android",
        "Web",
        "OS",
        "Overall",
        "MCP lo",
        "Overall hi",
        "Terminal lo",
        "rank",
        "scored",
        "failed",
        "cost_usd",
    ]
    assert all(frame[c].dtype == "float64" for c in columns), frame.dtypes
    alpha = frame[frame["run"] == "alpha"].iloc[0]
    assert (alpha["MCP"], alpha["MCP lo"], alpha["MCP hi"]) == (50.0, 0.0, 75.0) and pandas.isna(alpha["rank"])
    assert pandas.isna(alpha["Terminal"]) and pandas.isna(alpha["Terminal lo"])  # no Terminal samples: empty
    published = frame[frame["published"] == "yes"]
    assert len(published) == 14 and published["rank"].isna().all() and published["Terminal"].notna().all()
    assert "–" not in result.stdout


def test_intervals_show_both_ends_in_every_format(runs, tmp_path, any_trajectories):
    table = invoke("leaderboard", str(runs / "alpha"), "--ci")
    assert table.exit_code == 0, table.output
    # MCP: 50.00 with the asymmetric interval [0, 75]; a "±" would show one side only
    assert "50.00" in table.stdout and "[0.0, 75.0]" in table.stdout and "±" not in table.output
    assert "Intervals: [lo, hi], 95% bootstrap over whole trajectories" in table.stdout
    markdown = invoke("leaderboard", str(runs / "alpha"), "--ci", "--format", "markdown").stdout
    assert "| 50.00 [0.00, 75.00] | 75.00 [75.00, 75.00] |" in markdown and "±" not in markdown
    assert (
        '\nIntervals: [lo, hi], 95% bootstrap over whole trajectories; "too few to tell" (in a terminal, "too '
        'few"): fewer than five trajectories (Overall: in any of its domains), no interval.\n'
    ) in markdown
    page = tmp_path / "board.html"
    assert invoke("leaderboard", str(runs / "alpha"), "--ci", "--format", "html", "-o", str(page)).exit_code == 0
    assert '50.00<br><span class="ci">[0.00, 75.00]</span>' in page.read_text() and "±" not in page.read_text()


def test_notes_go_to_stderr_one_per_line(runs, tmp_path, data_dir):
    (runs / "alpha" / "scores.json").unlink()
    make_run(runs, "rules-only", data_dir, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.5), llm=False)
    result = invoke("leaderboard", "--output", str(runs), "--judge", "llm")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "note: 3 groups are ranked separately: they differ in prompt set, data\n"
        f"note: skipped {runs / 'alpha'}: no scores.json yet; finish it with the same `awbench run` command or "
        f"`awbench judge {runs / 'alpha'}` (with a higher --max-cost if the cap stopped it); `awbench score` shows an "
        "unfinished run's scores, which are never ranked\n"
        "note: left out rules-only: it has no llm scores\n"
    )
    assert "note:" not in result.stdout and "beta" in result.stdout


def test_nothing_to_show_exits_1_and_says_so(tmp_path, data_dir):
    results = tmp_path / "results"
    for name in ("r1", "r2"):
        make_run(results, name, data_dir, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.5), llm=False)
    result = invoke("leaderboard", "--output", str(results), "--by", "dimension")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        "note: left out r1 (rules-v1): the rule judge has no rubric dimensions\n"
        "note: left out r2 (rules-v1): the rule judge has no rubric dimensions\n"
        "error: nothing to show: no run here has LLM-judge scores, and only those have rubric dimensions\n"
    )
    result = invoke("leaderboard", "--output", str(results), "--judge", "llm")
    assert (refusal(result), result.stdout) == ((1, "nothing_to_show"), "")
    assert "note: left out r2: it has no llm scores\n" in result.stderr
    # the published rows have no dimensions either
    result = invoke("leaderboard", "--output", str(results), "--by", "dimension", "--reference")
    assert (
        result.exit_code == 1
        and "note: published rows left out: the release gives no per-dimension scores\n" in result.stderr
    )
    unscored = tmp_path / "unscored"
    make_run(unscored, "u", data_dir, dict.fromkeys(MCP, 3))
    (unscored / "u" / "scores.json").unlink()
    result = invoke("leaderboard", str(unscored))
    assert refusal(result) == (2, "no_scored_runs")
    assert result.stderr.startswith(f"note: skipped {unscored / 'u'}: no scores.json yet; finish")


def test_mix_reference_never_ranks_published_rows_with_rule_scores(runs, data_dir):
    make_run(runs, "rules-only", data_dir, dict.fromkeys(MCP, 3), rules=dict.fromkeys(MCP, 0.5), llm=False)
    board = _board(runs, reference=True, mix_reference=True)
    rules = next(g for g in board.groups if g.rules)
    assert [r.run for r in rules.rows] == ["rules-only"]
    assert all(len(g.rows) > 14 for g in board.groups if not g.rules)
    assert "published rows are not ranked with rule scores: they are LLM-judge scores" in board.notes


def test_runs_by_name_under_output(runs):
    result = invoke("leaderboard", "alpha", "gamma", "--output", str(runs), "--format", "csv")
    assert result.exit_code == 0, result.output
    assert [row["run"] for row in csv.DictReader(io.StringIO(result.stdout))] == ["alpha", "gamma"]
    result = invoke("leaderboard", "nobody", "--output", str(runs))
    assert refusal(result) == (2, "unknown_run")


def test_the_unmeasured_noise_note_names_each_evaluation_of_a_run_judged_twice(runs, any_trajectories):
    """Issue 36: two evaluations of one run were "alpha (judge and generation), alpha (judge and generation)"."""
    judges = runs / "alpha" / "judges"
    first = next(judges.iterdir())
    second = judges / f"{first.name}-bis"
    shutil.copytree(first, second)
    info = json.loads((second / "judge.json").read_text())
    (second / "judge.json").write_text(json.dumps(info | {"id": second.name}))
    board = build_leaderboard([RunStore(runs / "alpha")], ci=True, resamples=200, seed=0)
    (note,) = [n for n in board.notes if n.startswith("the intervals of")]
    assert note.startswith(
        f"the intervals of alpha by {first.name} (judge and generation), alpha by {second.name} (judge and generation) "
    ), note

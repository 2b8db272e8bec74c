"""`--format json` on `score`, `show` and `compare`: stdout holds one JSON document with a top-level
`schema_version` and exactly the documented keys; notes go to stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runs_helpers import MCP, SEARCH, SMALL, make_run, write_data
from typer.testing import CliRunner

from awbench.cli import app

runner = CliRunner()

SCORES_KEYS = [
    "schema_version",
    "run",
    "judge",
    "judge_id",
    "failure_policy",
    "generations",
    "overall",
    "overall_micro",
    "domains",
    "reference",
    "rules",
    "agreement",
    "judge_consistency",
    "variance",
    "cost_usd",
    "usage",
    "judge_usage",
    "failures",
    "stopped",
    "completeness",
    "partial",
]
DOMAIN_KEYS = [
    "score",
    "n",
    "scored",
    "failed",
    "unscored",
    "pending",
    "suspected_injection",
    "generation_spread",
    "dimensions",
]
SUMMARY_KEYS = [
    "schema_version",
    "view",
    "run",
    "judge",
    "kind",
    "judges",
    "completeness",
    "generations",
    "domains",
    "partial",
    "variance",
    "length_bias",
    "turn_trend",
    "consistency",
    "agreement",
    "turing",
]
SAMPLE_KEYS = [
    "key",
    "domain",
    "trajectory",
    "origin",
    "context",
    "earlier_turns",
    "action",
    "prediction",
    "ground_truth",
    "status",
    "error",
    "score",
    "dimensions",
    "rule_parts",
    "flags",
    "reasons",
]
COMPARISON_KEYS = [
    "schema_version",
    "run_a",
    "run_b",
    "judge",
    "judge_b",
    "rows",
    "only_a",
    "only_b",
    "warnings",
    "judge_agreement",
    "length_bias",
    "growth",
    "notes",
]
PAIRED_KEYS = [
    "name",
    "n",
    "mean_a",
    "mean_b",
    "diff",
    "lo",
    "hi",
    "a_better",
    "trajectories",
    "wins",
    "ties",
    "losses",
    "fewest_trajectories",
    "too_few",
]


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args], env={"COLUMNS": "80"})


def as_json(result) -> dict:
    """The whole of stdout is one JSON document (json.loads refuses anything before or after it)."""
    return json.loads(result.stdout)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    # alpha: one failed generation (a note on stderr); its MCP[1] prediction holds text rich would take for an
    # emoji and for markup, which JSON keeps as written
    make_run(
        out,
        "alpha",
        data,
        {MCP[0]: 4, MCP[1]: 2, MCP[2]: 5, SEARCH[0]: 3, SEARCH[1]: None},
        predictions={MCP[1]: "done :smile: [bold]x[/bold]"},
    )
    make_run(out, "beta", data, {MCP[0]: 3, MCP[1]: 2, MCP[2]: 5, SEARCH[0]: 4, SEARCH[1]: 4})
    make_run(out, "partial", data, {MCP[0]: 4, MCP[1]: 2})  # incomplete: 2 of 5 judged
    return out


def test_score_json_is_the_evaluations_scores_json(results: Path, tmp_path: Path) -> None:
    result = invoke("score", "alpha", "--output", results, "--format", "json")
    assert result.exit_code == 1  # 1 of 5 failed: over the tolerated 5%, as the table's exit code
    scores = as_json(result)
    assert list(scores) == SCORES_KEYS and scores["schema_version"] == 1
    assert [list(d) for d in scores["domains"].values()] == [DOMAIN_KEYS, DOMAIN_KEYS]
    assert scores == json.loads((results / "alpha" / "judges" / "llm-alpha" / "scores.json").read_text())
    assert (scores["overall"], scores["partial"]) == (None, "partial (2 of 7 domains)")  # never 0.00 (issue 37)
    assert scores["completeness"] == {"judged": 5, "selected": 5}
    assert (scores["variance"]["generations"], scores["variance"]["verdicts"]) == (1, 1)
    assert scores["variance"]["unseen"] == ["judge", "generation"] and scores["variance"]["judge_sd"] is None
    # the notes the table view prints go to stderr (the rewards' line too: test_cli_messages.py)
    assert result.stderr == (
        "1 of 5 samples failed or were not scored (tolerated: 5%):\n"
        "  1 error predictions: HTTP 500 (e.g. search/s1/1)\n"
        f"look at them with `awbench show {results / 'alpha'} --failed`\n"
    )


def test_score_json_of_an_incomplete_evaluation_says_so_on_stderr(results: Path) -> None:
    result = invoke("score", "partial", "--output", results, "--format", "json")
    assert result.exit_code == 1
    assert as_json(result)["completeness"] == {"judged": 2, "selected": 5}
    assert result.stderr.startswith("3 not judged yet: 2 of 5 judged, not ranked by the leaderboard nor exported; ")


def test_show_json_summary(results: Path) -> None:
    result = invoke("show", "alpha", "--output", results, "--format", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    summary = as_json(result)
    assert list(summary) == SUMMARY_KEYS
    assert (
        summary["schema_version"],
        summary["view"],
        summary["run"],
        summary["judge"],
        summary["kind"],
        summary["judges"],
    ) == (1, "summary", "alpha", "llm-alpha", "llm", ["llm-alpha"])
    assert list(summary["domains"]) == ["mcp", "search"] and summary["partial"] == "partial (2 of 7 domains)"
    assert summary["domains"]["search"] == {
        "n": 2,
        "score": 25.0,
        "lo": None,
        "hi": None,  # too few trajectories for an interval
        "dimensions": dict.fromkeys(["format", "factuality", "consistency", "realism", "quality"], 25.0),
    }
    assert summary["variance"] == as_json(invoke("score", "alpha", "--output", results, "--format", "json"))["variance"]
    assert list(summary["length_bias"]) == ["<0.5", "0.5-0.8", "0.8-1.25", "1.25-2", ">2"]
    assert summary["length_bias"]["0.8-1.25"] == [4, 62.5]  # [n, mean score] of the generations that did not fail


def test_show_json_samples_keep_their_text_and_notes_go_to_stderr(results: Path) -> None:
    result = invoke("show", "alpha", "--output", results, "--format", "json", "--sample", MCP[1])
    listed = as_json(result)
    assert list(listed) == ["schema_version", "view", "run", "judge", "selection", "matched", "samples"]
    assert (listed["view"], listed["selection"], listed["matched"]) == ("samples", "sample", 1)
    (sample,) = listed["samples"]
    assert list(sample) == SAMPLE_KEYS
    assert (sample["key"], sample["prediction"], sample["score"]) == (MCP[1], "done :smile: [bold]x[/bold]", 25.0)
    assert sample["reasons"] == [
        {"status": "complete", "strengths": ["keeps the format"], "weaknesses": ["invents a file"]}
    ]

    failed = invoke("show", "alpha", "--output", results, "--format", "json", "--failed")
    assert failed.stderr == "alpha: 1 failed or unscored sample (judge llm-alpha); showing 1\n"
    assert [(s["key"], s["status"], s["error"]) for s in as_json(failed)["samples"]] == [
        (SEARCH[1], "error", "HTTP 500")
    ]
    none = invoke("show", "beta", "--output", results, "--format", "json", "--failed")
    assert none.stderr == "beta: no failed or unscored samples (judge llm-beta)\n"
    assert (as_json(none)["matched"], as_json(none)["samples"]) == (0, [])
    worst = as_json(invoke("show", "alpha", "--output", results, "--format", "json", "--worst", "2"))
    assert (worst["selection"], [s["key"] for s in worst["samples"]]) == ("worst", [SEARCH[1], MCP[1]])


def test_show_json_along_trajectories(results: Path) -> None:
    result = invoke("show", "alpha", "--output", results, "--format", "json", "--by-turn")
    growth = as_json(result)
    assert list(growth) == ["schema_version", "view", "run", "judge", "axes"]
    assert (growth["view"], list(growth["axes"])) == ("growth", ["turn"])
    turn = growth["axes"]["turn"]
    assert list(turn) == ["axis", "bins", "rows", "trend", "intervals"]
    assert (turn["bins"], list(turn["rows"])) == (["1", "2-3"], ["mcp", "search", "overall"])
    both = as_json(invoke("show", "alpha", "--output", results, "--format", "json", "--by-turn", "--by-context"))
    assert list(both["axes"]) == ["turn", "context"]


def test_compare_json(results: Path) -> None:
    result = invoke("compare", "alpha", "beta", "--output", results, "--format", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    comparison = as_json(result)
    assert list(comparison) == COMPARISON_KEYS and comparison["schema_version"] == 1
    assert [row["name"] for row in comparison["rows"]] == ["mcp", "search", "overall"]
    assert all(list(row) == PAIRED_KEYS for row in comparison["rows"])
    assert list(comparison["growth"]) == ["turn", "context"]


def test_compare_judges_json(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data", SMALL)
    grades = {MCP[0]: 4, MCP[1]: 2, MCP[2]: 5, SEARCH[0]: 3, SEARCH[1]: 1}
    store = make_run(tmp_path / "results", "both", data, grades, rules=dict(zip(grades, (0.8, 0.2, 1.0, 0.5, 0.1))))
    result = invoke("compare", store.path, "--judges", "llm", "rules", "--format", "json")
    assert (result.exit_code, result.stderr) == (0, "")
    judges = as_json(result)
    assert list(judges) == ["schema_version", "run", "judge_a", "judge_b", "rows", "dimension_alpha"]
    assert (judges["schema_version"], judges["judge_a"], judges["judge_b"]) == (1, "llm-both", "rules-v1")
    assert [list(row) for row in judges["rows"]] == [["name", "n", "spearman", "alpha", "paired"]] * 3

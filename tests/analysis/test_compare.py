"""Paired comparison of two runs, judge agreement, repeated-verdict consistency, length bias."""

from __future__ import annotations

import json

import pytest
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, Grade, invoke, make_run, write_data

from awbench.analysis.compare import (
    CompareError,
    compare_runs,
    judge_consistency,
    run_length_bias,
)
from awbench.analysis.runs import load_run_data

# alpha: MCP 100, 50, 0 (trajectory m0 = first two), Search 75, 75.
# beta:  MCP 50, 50, 50, Search 100 and a failed generation (0).
ALPHA = dict(zip(MCP + SEARCH, [5, 3, 1, 4, 4]))
BETA = dict(zip(MCP + SEARCH, [3, 3, 3, 5, None]))


@pytest.fixture
def pair(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    return (
        load_run_data(make_run(results, "alpha", data, ALPHA)),
        load_run_data(make_run(results, "beta", data, BETA)),
    )


def test_paired_differences_and_counts(pair):
    c = compare_runs(pair[0], pair[1], resamples=2000, seed=0)
    rows = {r.name: r for r in c.rows}
    assert list(rows) == ["mcp", "search", "overall"]
    # MCP differences +50, 0, -50; Search -25, +75.
    assert (rows["mcp"].n, rows["mcp"].mean_a, rows["mcp"].mean_b, rows["mcp"].diff) == (3, 50.0, 50.0, 0.0)
    assert (rows["mcp"].wins, rows["mcp"].ties, rows["mcp"].losses) == (1, 1, 1)
    assert (rows["search"].diff, rows["search"].wins, rows["search"].ties, rows["search"].losses) == (25.0, 1, 0, 1)
    overall = rows["overall"]
    assert (overall.n, overall.mean_a, overall.mean_b, overall.diff) == (5, 62.5, 50.0, 12.5)  # macro means
    assert (overall.wins, overall.ties, overall.losses) == (2, 1, 2)
    assert c.warnings == [] and c.judge_agreement is None  # beta's failure: not the same predictions


def test_paired_bootstrap_resamples_trajectories(pair, any_trajectories):
    c = compare_runs(pair[0], pair[1], resamples=2000, seed=0)
    rows = {r.name: r for r in c.rows}
    # MCP trajectories: m0 = differences {+50, 0}, m1 = {-50}. Whole-trajectory resamples have mean
    # 25 (m0 twice, p = 1/4), 0 (one of each) or -50 (m1 twice).
    assert (rows["mcp"].lo, rows["mcp"].hi) == (-50.0, 25.0)
    assert rows["mcp"].a_better == 0.256  # 512 of 2000 with seed 0; 1/4 expected
    assert (rows["search"].lo, rows["search"].hi) == (-25.0, 75.0)
    assert rows["search"].a_better == pytest.approx(0.75, abs=0.03)
    # Overall > 0 unless MCP and Search cancel: 1/4 * 3/4 + 1/2 * 3/4 + 1/4 * 1/4 = 0.625
    assert (rows["overall"].lo, rows["overall"].hi) == (-37.5, 50.0)
    assert rows["overall"].a_better == pytest.approx(0.625, abs=0.03)


def test_refuses_different_data(tmp_path, pair):
    other = write_data(tmp_path / "other", SMALL, salt=" v2")
    delta = load_run_data(make_run(tmp_path / "results", "delta", other, ALPHA))
    with pytest.raises(CompareError, match="different data"):
        compare_runs(pair[0], delta)


def test_warns_when_judges_differ_on_different_predictions(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    a = make_run(results, "a", data, ALPHA)
    b = make_run(
        results, "b", data, ALPHA, prompt_set="strict", prompt_sha="9" * 64, predictions={"mcp/m0/1": "something else"}
    )
    c = compare_runs(load_run_data(a), load_run_data(b))
    assert len(c.warnings) == 1 and c.warnings[0].startswith("the runs differ in prompt set")
    assert c.judge_agreement is None


def test_same_predictions_other_judge_is_a_judge_agreement(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    keys = MCP + SEARCH[:1]
    a = make_run(results, "judge-a", data, dict(zip(keys, [1, 2, 1, 3])))
    b = make_run(results, "judge-b", data, dict(zip(keys, [2, 3, 1, 3])), judge_model="other-judge")
    c = compare_runs(load_run_data(a), load_run_data(b))
    assert c.warnings == [
        "same predictions, different judge model: this compares the judges, not the models",
        # search/s1/1 has no prediction in either
        "judge-a is incomplete (4 of 5 judged): its scores are not final, and only samples both runs judged are compared",
        "judge-b is incomplete (4 of 5 judged): its scores are not final, and only samples both runs judged are compared",
    ]
    ag = c.judge_agreement
    assert ag is not None
    # Every dimension has the pairs (1,2), (2,3), (1,1), (3,3): alpha = 1 - 25 * 7 / 600 (see test_stats).
    assert ag.n == 4 and all(v == pytest.approx(1 - 175 / 600) for v in ag.alpha.values())
    # Totals A 0, 25, 0, 50 and B 25, 50, 0, 50: ranks (1.5, 3, 1.5, 4) and (2, 3.5, 1, 3.5) -> 4 / 4.5
    assert ag.spearman == pytest.approx(4 / 4.5)


def test_a_run_whose_generations_all_failed_is_compared_at_the_minimum(tmp_path):
    # Failed generations are never judged: such a run has no judgment records, yet it has scores.
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    a = make_run(
        results, "some", data, dict.fromkeys(MCP + SEARCH, 3), rules=dict.fromkeys(MCP + SEARCH, 0.5), llm=False
    )
    b = make_run(results, "none", data, dict.fromkeys(MCP + SEARCH), rules={}, llm=False)
    assert not load_run_data(b).evaluation("rules").judgments
    c = compare_runs(load_run_data(a), load_run_data(b), judge="rules")
    overall = c.rows[-1]
    assert (c.judge, overall.n, overall.mean_a, overall.mean_b, overall.wins) == ("rules-v1", 5, 50.0, 0.0, 5)
    assert c.length_bias["none"]["0.8-1.25"] == (0, None)  # failures say nothing about length


def test_judge_consistency_over_repeated_verdicts(tmp_path):
    data = write_data(tmp_path / "data", SMALL)

    def twice(g: int) -> list[dict[str, int]]:
        return [dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), g)]

    grades: dict[str, Grade] = {
        MCP[0]: twice(5) + twice(3),  # totals 100 and 50: SD (ddof 1) = 35.355
        MCP[1]: twice(2) + twice(2),
        MCP[2]: twice(4) + twice(4),
        SEARCH[0]: 3,  # one verdict: not repeated
    }
    run = load_run_data(make_run(tmp_path / "results", "k2", data, grades))
    c = judge_consistency(run, "llm")
    assert c is not None
    assert (c.k, c.n) == (2, 3)
    assert c.sd == {"mcp": pytest.approx(50 / 2**0.5 / 3)}
    # Units (5,3), (2,2), (4,4): D_o = 18, D_e = 198 / 5 -> 1 - 18 / 39.6 = 6 / 11
    assert all(a == pytest.approx(6 / 11) for a in c.alpha.values())
    assert judge_consistency(load_run_data(make_run(tmp_path / "results", "k1", data, {MCP[0]: 3})), "llm") is None


def test_length_bias_bins_and_leaves_out_failures(tmp_path, pair):
    assert run_length_bias(pair[1], "llm") == {
        "<0.5": (0, None),
        "0.5-0.8": (0, None),
        "0.8-1.25": (4, 62.5),
        "1.25-2": (0, None),
        ">2": (0, None),
    }
    data = write_data(tmp_path / "data2", SMALL)
    # Ground truths are 23 characters ("mcp output 0.1\nline two"); predictions of 5 and 60 characters.
    run = make_run(
        tmp_path / "results", "lengths", data, {MCP[0]: 2, MCP[1]: 4}, predictions={MCP[0]: "x" * 5, MCP[1]: "y" * 60}
    )
    assert run_length_bias(load_run_data(run), "llm") == {
        "<0.5": (1, 25.0),
        "0.5-0.8": (0, None),
        "0.8-1.25": (0, None),
        "1.25-2": (0, None),
        ">2": (1, 75.0),
    }


# --------------------------------------------------------------------------- CLI


def test_cli_compare_table(pair, any_trajectories):
    a, b = pair
    result = invoke("compare", str(a.store.path), str(b.store.path))
    assert result.exit_code == 0, result.output
    out = result.output
    assert "A = alpha" in out and "B = beta" in out
    assert "[-50.00, 25.00]" in out and "25.6%" in out
    assert "Mean score by prediction / ground-truth length" in out


def test_cli_compare_json_and_names_under_output(pair):
    a, _ = pair
    result = invoke("compare", "alpha", "beta", "--output", str(a.store.path.parent), "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [(r["name"], r["wins"], r["ties"], r["losses"]) for r in data["rows"]] == [
        ("mcp", 1, 1, 1),
        ("search", 1, 0, 1),
        ("overall", 2, 1, 2),
    ]


def test_cli_compare_refuses_different_data_with_exit_2(tmp_path, pair):
    other = write_data(tmp_path / "other", SMALL, salt=" v2")
    delta = make_run(tmp_path / "results", "delta", other, ALPHA)
    result = invoke("compare", str(pair[0].store.path), str(delta.path))
    assert result.exit_code == 2
    assert "different data" in result.output


def test_cli_compare_unknown_run(pair, tmp_path):
    result = invoke("compare", "nope", str(pair[0].store.path), "--output", str(tmp_path))
    assert refusal(result) == (2, "unknown_run")

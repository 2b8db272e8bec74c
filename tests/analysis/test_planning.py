"""Planning (`awbench plan`, `awbench.analysis.planning`): the smallest difference a paired comparison on the full
benchmark detects at 80% power and 5% two-sided, checked against a simulation of such comparisons; the cheapest K
and J for a difference; `awbench plan` from figures, a run or two; the leaderboard's neighbours within that
difference; the published rows' Overall recomputed from their domains."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from runs_helpers import make_run, write_data
from typer.testing import CliRunner

from awbench.analysis.leaderboard import build_leaderboard, load_published, to_csv
from awbench.analysis.options import OVERALL
from awbench.analysis.planning import (
    FULL_BENCHMARK,
    Figures,
    cheapest,
    design,
    given_figures,
    neighbour_detectable,
    z_factor,
)
from awbench.cli import app
from awbench.domains import DIMENSIONS, DOMAINS
from awbench.run.scoring import ScoresFile
from awbench.run.store import RunStore

runner = CliRunner()


def test_the_z_factor_is_the_textbook_one():
    assert z_factor() == pytest.approx(1.959964 + 0.841621, abs=1e-5)


ITEM_SD, GENERATION_SD, JUDGE_SD = 6.0, 8.0, 10.0  # of the difference's items; of one model's generations, verdicts


def simulated_rejections(difference: float, k: int, j: int, replications: int, rng: np.random.Generator) -> float:
    """The share of simulated paired comparisons on the full benchmark, A truly `difference` ahead, that a two-sided
    5% test of the Overall difference rejects: each sample's items, both models' K generations and J verdicts
    drawn, its difference the mean of A's verdicts less B's, and the test's standard error estimated from them."""
    rejected = 0
    for start in range(0, replications, 100):
        r = min(100, replications - start)
        means, variances = [], []
        for domain in DOMAINS:
            n = FULL_BENCHMARK[domain]
            items = difference + rng.normal(0, ITEM_SD, (r, n))
            generations = rng.normal(0, GENERATION_SD, (2, r, n, k))
            verdicts = (generations[..., None] + rng.normal(0, JUDGE_SD, (2, r, n, k, j))).mean(axis=(3, 4))
            d = items + verdicts[0] - verdicts[1]
            means.append(d.mean(axis=1))
            variances.append(d.var(axis=1, ddof=1) / n)
        overall = np.mean(means, axis=0)
        se = np.sqrt(np.sum(variances, axis=0)) / len(DOMAINS)
        rejected += int((np.abs(overall) > 1.959964 * se).sum())
    return rejected / replications


def test_the_detectable_difference_is_detected_four_times_in_five_in_a_simulation():
    figures = dict.fromkeys(DOMAINS, Figures(ITEM_SD**2, 2 * GENERATION_SD**2, 2 * JUDGE_SD**2))
    rng = np.random.default_rng(11)
    for k, j in ((1, 1), (2, 3)):
        planned = design(figures, k, j)
        assert planned.judge_calls == k * j
        # 1,000 comparisons: the power's sampling error is 1.3 points; 4 points is three of them.
        assert simulated_rejections(planned.detectable, k, j, 1000, rng) == pytest.approx(0.80, abs=0.04)
    assert simulated_rejections(0.0, 1, 1, 1000, rng) == pytest.approx(0.05, abs=0.02)  # no difference: 5%


def test_the_cheapest_design_for_a_difference():
    judge_only = given_figures(judge_sd=10, generation_sd=0, item_sd=0)
    once = design(judge_only, 1, 1).detectable
    # Judge noise alone falls with K x J: half the difference takes four verdicts, fewest generations first.
    best = cheapest(judge_only, once / 2)
    assert best is not None and (best.generations, best.verdicts, best.judge_calls) == (1, 4, 4)
    generations_only = given_figures(judge_sd=0, generation_sd=10, item_sd=0)
    best = cheapest(generations_only, design(generations_only, 1, 1).detectable / 2)
    assert best is not None and (best.generations, best.verdicts) == (4, 1)
    # The items' part no K or J reduces.
    assert cheapest(given_figures(judge_sd=10, generation_sd=10, item_sd=20), 0.1) is None


def test_plan_from_given_figures(tmp_path):
    result = runner.invoke(
        app, ["plan", "--judge-sd", "8", "--generation-sd", "6", "--item-sd", "20", "--difference", "0.5"]
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    expected = design(given_figures(8, 6, 20), 1, 1)
    assert f"At K = 1, J = 1: the smallest detectable Overall difference is {expected.detectable:.2f} points" in text
    assert "no K and J up to 16 detect 0.50 points: the items alone allow" in text
    plan = json.loads(
        runner.invoke(
            app,
            [
                "plan",
                "--judge-sd",
                "8",
                "--generation-sd",
                "6",
                "--item-sd",
                "20",
                "--difference",
                "1.5",
                "--format",
                "json",
            ],
        ).stdout
    )
    assert plan["current"]["detectable"] == pytest.approx(expected.detectable)
    assert (plan["item_correlation"], plan["samples"]) == (0.5, FULL_BENCHMARK)
    best = cheapest(given_figures(8, 6, 20), 1.5)
    assert best is not None and plan["cheapest"] == best.model_dump()
    assert len(plan["designs"]) == 12  # K in 1, 2, 4, 8 by J in 1, 2, 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "error: give a run, or all of --judge-sd, --generation-sd and --item-sd"),
        (["--judge-sd", "1"], "error: give a run, or all of --judge-sd, --generation-sd and --item-sd"),
        (["RUN", "--item-sd", "3"], "error: --judge-sd, --generation-sd and --item-sd replace a run's figures"),
        (["--judge-sd", "nan", "--generation-sd", "1", "--item-sd", "1"], "error: --judge-sd: must be a finite number"),
        (["--judge-sd", "1", "--generation-sd", "1", "--item-sd", "1", "--difference", "0"], "error: --difference: must be greater than 0"),
    ],
)  # fmt: skip
def test_plan_refuses_what_it_cannot_plan_from(args, message):
    result = runner.invoke(app, ["plan", *args])
    assert result.exit_code == 2 and result.stderr.startswith(message) and "Traceback" not in result.output


def seven_domain_run(results, data, name: str, grade, verdicts: int = 2, prompt_set: str = "rubric") -> RunStore:
    """A run of every domain's samples, `verdicts` verdicts each: `grade(i, verdict)` is sample i's 1..5 grade."""
    keys = [f"{d}/{d[0]}{t}/1" for d in DOMAINS for t in range(6)]
    grades = {k: [dict.fromkeys(DIMENSIONS, grade(i, v)) for v in range(verdicts)] for i, k in enumerate(keys)}
    return make_run(results, name, data, grades, prompt_set=prompt_set, prompt_sha=prompt_set[0] * 64)


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data", {d: [1] * 6 for d in DOMAINS})  # six one-turn trajectories a domain


def test_plan_from_a_run_and_from_two(tmp_path, data):
    results = tmp_path / "results"
    seven_domain_run(results, data, "a", lambda i, v: 1 + (i * 7 + v) % 5)
    seven_domain_run(results, data, "b", lambda i, v: 1 + (i * 7 + v + 1) % 5)
    one = json.loads(runner.invoke(app, ["plan", "a", "--output", str(results), "--format", "json"]).stdout)
    assert (one["current"]["generations"], one["current"]["verdicts"]) == (1, 2)  # the run's own K and J
    assert one["unseen"] == ["generation"] and one["item_correlation"] == 0.5
    assert one["source"] == "run a (judge llm-a)"
    text = " ".join(runner.invoke(app, ["plan", "a", "--output", str(results)]).output.split())
    assert "note: the generation noise is not measured apart (K = 1 or J = 1 in the run)" in text
    two = json.loads(runner.invoke(app, ["plan", "a", "b", "--output", str(results), "--format", "json"]).stdout)
    assert two["item_correlation"] is None and two["source"] == "run a (judge llm-a) against run b"
    assert two["current"]["detectable"] != one["current"]["detectable"]


def test_neighbours_within_the_detectable_difference_are_marked(tmp_path, data):
    results = tmp_path / "results"
    seven_domain_run(results, data, "first", lambda i, v: 1 + (i * 3 + v) % 5)
    seven_domain_run(results, data, "close", lambda i, v: 1 + (i * 3 + v + (i % 7 == 0)) % 5)  # a little apart
    seven_domain_run(results, data, "far", lambda i, v: 1)  # the minimum everywhere
    # Another group (another prompt set), ranked apart, with the same two close runs: marked too.
    seven_domain_run(results, data, "first-strict", lambda i, v: 1 + (i * 3 + v) % 5, prompt_set="strict")
    seven_domain_run(
        results, data, "close-strict", lambda i, v: 1 + (i * 3 + v + (i % 7 == 0)) % 5, prompt_set="strict"
    )
    names = ("first", "close", "far", "first-strict", "close-strict")
    board = build_leaderboard([RunStore(results / name) for name in names])
    assert [len(g.rows) for g in board.groups] == [3, 2] and board.groups[1].rows[1].undetectable is not None
    rows = {row.run: row for row in board.groups[0].rows}
    scores = {name: ScoresFile.model_validate_json((results / name / "scores.json").read_text()) for name in rows}
    ranked = sorted(rows, key=lambda r: -(rows[r].cells[OVERALL].value or 0))
    top, second, third = (rows[name] for name in ranked)
    assert third.run == "far" and third.undetectable is None  # a lead far larger than what can be detected
    assert second.detectable == pytest.approx(
        neighbour_detectable(scores[top.run].variance, scores[second.run].variance)  # type: ignore[arg-type]
    )
    lead = (top.cells[OVERALL].value or 0) - (second.cells[OVERALL].value or 0)
    assert second.detectable is not None and 0 <= lead < second.detectable
    assert second.undetectable == f"within {second.detectable:.2f} of #1" and second.undetectable in second.marks()
    assert f"within {second.detectable:.2f} of #1" in to_csv(board)
    assert any(note.startswith("a row marked `within d of #k`") for note in board.notes)


def test_the_published_rows_overall_is_recomputed_and_the_one_that_differs_is_shown():
    rows = {p.model: p for p in load_published()}
    assert round(rows["Qwen-AgentWorld-397B-A17B"].recomputed, 2) == 58.76
    assert [p.model for p in rows.values() if p.mismatch()] == ["Qwen-AgentWorld-397B-A17B"]
    board = build_leaderboard([], reference=True)
    marked = {row.run: row.published_overall for row in board.groups[0].rows if row.published_overall}
    assert marked == {"Qwen-AgentWorld-397B-A17B": "published Overall 58.71; its domains average 58.76"}
    result = runner.invoke(app, ["leaderboard", "--reference", "--format", "csv"])
    assert result.exit_code == 0 and "published Overall 58.71; its domains average 58.76" in result.stdout


def test_the_variance_of_a_run_with_repeated_verdicts_is_in_its_scores(tmp_path, data):
    store = seven_domain_run(tmp_path / "results", data, "r", lambda i, v: 2 + v)  # verdicts 2 and 3: SD 25 / sqrt 2
    variance = ScoresFile.model_validate_json(store.scores_path.read_text()).variance
    assert variance is not None and variance.judge_sd == pytest.approx(25 / math.sqrt(2))
    assert variance.domains["os"].judge_sd == pytest.approx(25 / math.sqrt(2))


def test_the_variance_is_computed_from_the_records_alike_by_score_and_by_make_run(tmp_path, data):
    store = seven_domain_run(tmp_path / "results", data, "r", lambda i, v: 1 + (i + v) % 5)
    written = ScoresFile.model_validate_json(store.scores_path.read_text()).variance
    rescored = runner.invoke(app, ["score", str(store.path), "--format", "json"])
    assert json.loads(rescored.stdout)["variance"] == written.model_dump(mode="json")  # type: ignore[union-attr]

"""Runs as pandas DataFrames (`awbench.analysis.tables`): exact frames of made runs (every outcome of a generation,
both failure policies, flags), the leaderboard of the three baselines on the bundled sample against its CSV and
scores.json, the comparison against `awbench compare --format json`, and the README's notebook cell, run as
written (matplotlib's Agg backend)."""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path

import matplotlib
import pandas as pd
import pytest
from runs_helpers import SMALL, UNSCORED, invoke, make_run, write_data

from awbench.analysis import tables
from awbench.analysis.leaderboard import build_leaderboard, to_csv
from awbench.analysis.runs import discover_runs
from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig
from awbench.data.dataset import load_samples
from awbench.domains import DIMENSIONS
from awbench.run import pipeline
from awbench.run.store import RunStore

REPO = Path(__file__).resolve().parents[2]
NAN = math.nan
GAMMA = {
    "mcp/m0/1": {"format": 5, "factuality": 3, "consistency": 4, "realism": 2, "quality": 1},
    "mcp/m0/2": None,  # the generation failed
    "mcp/m1/1": UNSCORED,  # the judge gave no usable verdict
    "search/s0/1": 4,
    # search/s1/1: no prediction yet (pending)
}
BETA = {"mcp/m0/1": 3, "mcp/m0/2": 3, "mcp/m1/1": 3, "search/s0/1": 5, "search/s1/1": None}


@pytest.fixture
def made(tmp_path: Path) -> Path:
    data = write_data(tmp_path / "data", SMALL)
    results = tmp_path / "results"
    gamma = make_run(results, "gamma", data, GAMMA)
    make_run(results, "beta", data, BETA, policy="exclude")
    # Flags: the prediction's text was repaired, and the judge was addressed.
    predictions = gamma.predictions.load()
    predictions[("search/s0/1", 0)].flags = ["replaced_invalid_text"]
    gamma.predictions.rewrite(list(predictions.values()))
    judgments = gamma.evaluation("llm-gamma").judgments
    records = judgments.load()
    records[("search/s0/1", 0)].flags = ["suspected_injection"]
    judgments.rewrite(list(records.values()))
    return results


def trajectories(data: Path) -> dict[str, str]:
    return {s.key: s.record.trajectory_id for s in load_samples(DataSettings(source=str(data))).samples}


def test_samples_is_one_exact_row_per_run_sample_and_generation(made: Path) -> None:
    t = trajectories(made.parent / "data")
    frame = tables.samples([made / "gamma", made / "beta"])
    rows = [
        # run, judge, domain, key, turn, status, score, five dimensions, flags
        ("gamma", "mcp", "mcp/m0/1", 1, "scored", 50.0, [100.0, 50.0, 75.0, 25.0, 0.0], ""),
        ("gamma", "mcp", "mcp/m0/2", 2, "failed", 0.0, [0.0] * 5, ""),  # minimum: a failure scores 0
        ("gamma", "mcp", "mcp/m1/1", 1, "unscored", NAN, [NAN] * 5, ""),
        ("gamma", "search", "search/s0/1", 1, "scored", 75.0, [75.0] * 5, "replaced_invalid_text, suspected_injection"),
        ("gamma", "search", "search/s1/1", 1, "pending", NAN, [NAN] * 5, ""),
        ("beta", "mcp", "mcp/m0/1", 1, "scored", 50.0, [50.0] * 5, ""),
        ("beta", "mcp", "mcp/m0/2", 2, "scored", 50.0, [50.0] * 5, ""),
        ("beta", "mcp", "mcp/m1/1", 1, "scored", 50.0, [50.0] * 5, ""),
        ("beta", "search", "search/s0/1", 1, "scored", 100.0, [100.0] * 5, ""),
        ("beta", "search", "search/s1/1", 1, "failed", NAN, [NAN] * 5, ""),  # exclude: a failure is in no mean
    ]
    expected = pd.DataFrame(
        [[run, f"llm-{run}", domain, key, t[key], turn, 0, status, score, *dims, flags]
         for run, domain, key, turn, status, score, dims, flags in rows],
        columns=["run", "judge", "domain", "key", "trajectory", "turn", "generation", "status", "score",
                 *DIMENSIONS, "flags"],
    )  # fmt: skip
    pd.testing.assert_frame_equal(frame, expected)
    # The same means as scores.json, from the frame: the domain scores of gamma's evaluation.
    means = frame[frame.run == "gamma"].groupby("domain").score.mean()
    scores = json.loads((made / "gamma" / "scores.json").read_text())
    assert means.to_dict() == {d: s["score"] for d, s in scores["domains"].items()}
    # A directory of runs gives them all, by name; another evaluation is picked by id as --judge picks it.
    assert list(tables.samples(made).run.unique()) == ["beta", "gamma"]
    with pytest.raises(Exception, match="rules"):
        tables.samples(made / "gamma", judge="rules")


def test_a_run_without_scores_is_left_out_with_a_warning(made: Path) -> None:
    (made / "beta" / "scores.json").unlink()
    with pytest.warns(UserWarning, match=r"skipped .*beta: no scores.json yet"):
        frame = tables.samples(made)
    assert set(frame.run) == {"gamma"}


def test_compare_table_is_the_compare_command_s_rows(made: Path) -> None:
    with pytest.warns(UserWarning) as caught:
        frame = tables.compare_table(made / "gamma", made / "beta")
    result = invoke("compare", str(made / "gamma"), str(made / "beta"), "--format", "json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)["rows"]
    assert [str(w.message) for w in caught] == json.loads(result.output)["warnings"] != []  # the command's notes
    columns = ["n", "mean_a", "mean_b", "diff", "lo", "hi", "a_better", "wins", "ties", "losses", "trajectories"]
    expected = pd.DataFrame(
        [[r[c] for c in columns] + [r["too_few"]] for r in rows],
        columns=[*columns, "too_few"],
        index=pd.Index([r["name"] for r in rows], name="domain"),
    ).astype({c: "float64" for c in ("mean_a", "mean_b", "diff", "lo", "hi", "a_better")})
    pd.testing.assert_frame_equal(frame, expected)
    # Gamma's MCP: 50 and 0 against beta's 50 and 50 (mcp/m1/1 unscored in gamma: not paired); Search: 75 vs 100.
    assert frame.loc["mcp", ["n", "mean_a", "mean_b", "diff", "wins", "ties", "losses"]].tolist() == [
        2,
        25.0,
        50.0,
        -25.0,
        0,
        1,
        1,
    ]
    assert frame.loc["search", ["n", "mean_a", "mean_b", "diff"]].tolist() == [1, 75.0, 100.0, -25.0]


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Quickstart's three baselines on the bundled sample, judged by the rule judge, in `results/`."""
    root = tmp_path_factory.mktemp("notebook")
    for name in ("oracle", "last-observation", "empty"):
        config = RunConfig(
            run_name=f"baseline-{name}__rules",
            output=root / "results",
            data=DataSettings(source="sample"),
            model=ModelSettings(model=f"baseline:{name}", backend="baseline"),
            judge=JudgeSettings(kind="rules"),
        )
        asyncio.run(pipeline.run(config))
    return root


def test_leaderboard_table_is_the_leaderboard_s_csv_with_numbers(baselines: Path) -> None:
    results = baselines / "results"
    frame = tables.leaderboard_table(results)
    names = ["baseline-oracle__rules", "baseline-last-observation__rules", "baseline-empty__rules"]
    labels = ["MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS"]
    scores = [json.loads((results / name / "scores.json").read_text()) for name in names]
    expected = pd.DataFrame(
        [[i + 1, name, f"baseline:{name.removeprefix('baseline-').removesuffix('__rules')}", "rules-v2", False]
         + [s["domains"][d]["score"] for d in ("mcp", "search", "terminal", "swe", "android", "web", "os")]
         + [s["overall"], 65, sum(d["failed"] for d in s["domains"].values()), 0, 1, "rules", ""]
         for i, (name, s) in enumerate(zip(names, scores))],
        columns=["rank", "run", "model", "judge_id", "published", *labels, "Overall", "scored", "failed", "unscored",
                 "generations", "judge", "status"],
    ).astype({c: "Int64" for c in ("rank", "scored", "failed", "unscored")})  # fmt: skip
    pd.testing.assert_frame_equal(frame[expected.columns], expected)
    assert frame.failed.tolist() == [0, 13, 65] and frame.loc[0, "Overall"] == 100.0
    # Its columns are the CSV's (plus judge_id, and generations always), each value the CSV's to two decimals.
    stores, _ = discover_runs([results])
    csv = pd.read_csv(io.StringIO(to_csv(build_leaderboard(stores))), keep_default_na=False)
    assert list(csv.columns) == [c for c in frame.columns if c not in ("judge_id", "generations")]
    for column in [*labels, "Overall"]:
        assert (frame[column].round(2) == csv[column]).all(), column
    assert (frame.group == csv.group).all() and frame.group[0].startswith("judge rules · prompts rules@2 · data ")


def readme_cell() -> str:
    section = (REPO / "README.md").read_text().split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    (cell,) = [block.split("```", 1)[0] for block in section.split("```python\n")[1:] if "tables." in block]
    return cell


def test_the_readme_notebook_cell_plots_the_domain_comparison(baselines: Path, monkeypatch) -> None:
    matplotlib.use("Agg")
    monkeypatch.chdir(baselines)
    namespace: dict = {}
    exec(compile(readme_cell(), "README.md (Python API)", "exec"), namespace)
    ax = namespace["ax"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS"]
    board = namespace["board"]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert (
        legend
        == board.run.tolist()
        == ["baseline-oracle__rules", "baseline-last-observation__rules", "baseline-empty__rules"]
    )
    heights = [[bar.get_height() for bar in container] for container in ax.containers]
    assert heights == board[namespace["domains"]].values.tolist()
    assert (baselines / "domains.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    by_turn, worst, paired = namespace["by_turn"], namespace["worst"], namespace["paired"]
    assert by_turn.loc[1, "baseline-last-observation__rules"] == 0.0  # the first turn has nothing to repeat
    assert (by_turn["baseline-oracle__rules"] == 100.0).all()
    assert len(worst) == 5 and worst.score.is_monotonic_increasing
    assert paired.loc["overall", "mean_a"] == 100.0 and paired.loc["overall", "n"] == 65
    matplotlib.pyplot.close("all")


def test_runs_are_read_once_per_call(made: Path, monkeypatch) -> None:
    """A RunData already loaded is used as it is: nothing is read again."""
    from awbench.analysis.runs import load_run_data

    data = load_run_data(RunStore(made / "gamma"))
    monkeypatch.setattr(RunStore, "read_manifest", lambda self: pytest.fail("read again"))
    assert len(tables.samples(data)) == 5
    with pytest.warns(UserWarning, match="gamma is incomplete"):
        assert tables.compare_table(data, data).loc["overall", "diff"] == 0.0


def test_samples_of_a_bundled_sample_run_are_its_records(baselines: Path) -> None:
    """The persistence baseline's rows, built here from the data and the judgments file as written: its first
    turns failed (scored 0), every other turn has the rule judge's score and no dimensions."""
    run = baselines / "results" / "baseline-last-observation__rules"
    judged = {r["key"]: r["score"] for r in map(json.loads, (run / "judges" / "rules-v2" / "judgments.jsonl").open())}
    rows = [
        ["baseline-last-observation__rules", "rules-v2", s.domain, s.key, s.record.trajectory_id, s.record.turn_idx, 0]
        + (["failed", 0.0] if s.record.turn_idx == 1 else ["scored", judged[s.key]])
        + [NAN] * 5
        + [""]
        for s in load_samples(DataSettings(source="sample")).samples
    ]
    expected = pd.DataFrame(rows, columns=tables.SAMPLE_COLUMNS)
    pd.testing.assert_frame_equal(tables.samples(run), expected)
    assert (expected.status == "failed").sum() == 13

"""An Overall is the mean of all seven domains: an evaluation with scores in fewer says "partial (k of 7
domains)" in every output, never a number (issue 37: `Overall (macro) 0.00` in `score` and `scores.json`)."""

from __future__ import annotations

import json

from runs_helpers import MCP, SEARCH, SMALL, make_run, write_data
from typer.testing import CliRunner

from awbench.cli import app

runner = CliRunner()


def test_score_show_ls_and_scores_json_say_partial_and_never_a_number(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    make_run(out, "low", data, dict.fromkeys(MCP + SEARCH, 1))  # every sample 0.00: the Overall 0.00
    scores = json.loads((out / "low" / "scores.json").read_text())
    assert (scores["overall"], scores["overall_micro"], scores["partial"]) == (None, None, "partial (2 of 7 domains)")
    scored = runner.invoke(app, ["score", "low", "--output", str(out)], env={"COLUMNS": "120"})
    lines = scored.output.splitlines()
    assert [line.split("│")[5].strip() for line in lines if "Overall (" in line] == ["partial", "partial"]  # score
    assert "partial (2 of 7 domains): the Overall is the mean of all seven" in " ".join(scored.output.split())
    assert json.loads(runner.invoke(app, ["score", "low", "--output", str(out), "--format", "json"]).stdout)["partial"]
    shown = runner.invoke(app, ["show", "low", "--output", str(out)], env={"COLUMNS": "120"}).output
    overall = next(line for line in shown.splitlines() if line.startswith("│ Overall "))  # the scores' table
    assert [cell.strip() for cell in overall.split("│")[1:5]] == ["Overall", "", "partial", "2 of 7 domains"]
    summary = json.loads(runner.invoke(app, ["show", "low", "--output", str(out), "--format", "json"]).stdout)
    assert "overall" not in summary["domains"] and summary["partial"] == "partial (2 of 7 domains)"
    listed = runner.invoke(app, ["ls", "--output", str(out)], env={"COLUMNS": "120"}).output
    assert "partial" in listed and "0.00" not in listed

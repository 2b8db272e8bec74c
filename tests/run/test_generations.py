"""Repeated generations: K per sample with distinct seeds, each judged; a sample scores their mean; the
spread between generations; intervals that resample trajectories of the samples' means."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fake_openai import FakeOpenAIServer, Reply
from typer.testing import CliRunner

from awbench.cli import app
from awbench.data.dataset import read_source

runner = CliRunner()


def test_k_generations_are_made_with_distinct_seeds_judged_and_averaged(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    truths = {s.record.action: s.record.ground_truth for s in read_source("sample")[0] if s.domain == "os"}

    def answer(body: dict) -> Reply:  # the truth for even seeds, nothing useful for odd ones
        truth = truths[body["messages"][-1]["content"]]
        return Reply(f"<predicted_observation>{truth if body['seed'] % 2 == 0 else 'x'}</predicted_observation>")

    out = tmp_path / "results"
    with FakeOpenAIServer(responder=answer) as server:
        result = runner.invoke(
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
                str(out),
            ],
        )
    assert result.exit_code == 0, result.output
    n = len(truths)
    assert len(server.requests) == 3 * n
    seeds: dict[str, set[int]] = {}
    for body in server.requests:
        seeds.setdefault(body["messages"][-1]["content"], set()).add(body["seed"])
    assert all(len(s) == 3 for s in seeds.values())  # K distinct seeds per sample
    predictions = [json.loads(line) for line in (out / "k3" / "predictions.jsonl").read_text().splitlines()]
    assert sorted({p["generation"] for p in predictions}) == [0, 1, 2] and len(predictions) == 3 * n
    scores = json.loads((out / "k3" / "scores.json").read_text())
    assert scores["generations"] == 3 and scores["domains"]["os"]["n"] == n
    judged = {
        (j["key"], j["generation"]): j["score"]
        for j in map(json.loads, next((out / "k3" / "judges").glob("*/judgments.jsonl")).read_text().splitlines())
    }
    means = [np.mean([judged[(key, g)] for g in range(3)]) for key in {k for k, _ in judged}]
    assert scores["domains"]["os"]["score"] == pytest.approx(float(np.mean(means)))
    spreads = [np.std([judged[(key, g)] for g in range(3)], ddof=1) for key in {k for k, _ in judged}]
    assert scores["domains"]["os"]["generation_spread"] == pytest.approx(float(np.mean(spreads)))
    note = (
        f"3 generations per sample (a sample scores their mean); spread between generations, the mean "
        f"per-sample standard deviation (n - 1; 0..100): OS {scores['domains']['os']['generation_spread']:.2f}"
    )
    assert note in " ".join(result.output.split())
    shown = runner.invoke(app, ["show", str(out / "k3")])
    assert shown.exit_code == 0, shown.output
    shown_text = " ".join(shown.output.split())
    assert note in shown_text and "95% bootstrap intervals over trajectories" in shown_text
    report = runner.invoke(app, ["report", str(out / "k3"), "-o", str(tmp_path / "k3.html"), "--no-ci"])
    assert report.exit_code == 0, report.output
    assert f"<p>{note}</p>" in (tmp_path / "k3.html").read_text()


def test_the_leaderboard_shows_k_when_a_run_has_several_generations(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "results"
    with FakeOpenAIServer(responder=lambda body: Reply("<predicted_observation>x</predicted_observation>")) as server:
        for k in ("1", "2"):
            result = runner.invoke(
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
                    k,
                    "--judge",
                    "rules",
                    "--run-name",
                    f"k{k}",
                    "--output",
                    str(out),
                    "--max-failure-rate",
                    "1",
                ],
            )
            assert result.exit_code == 0, result.output
    board = runner.invoke(app, ["leaderboard", "--output", str(out), "--format", "markdown"])
    assert board.exit_code == 0, board.output
    header = next(line for line in board.stdout.splitlines() if line.startswith("| # |"))
    assert "| Failed | Unscored | K | Judge |" in header
    # one domain of seven: each run is marked partial beside its name
    rows = {
        line.split(" | ")[1].split(" *(")[0]: line.split(" | ")
        for line in board.stdout.splitlines()
        if line.startswith("| ") and " k" in line
    }
    assert rows["k1"][header.split(" | ").index("K")] == "1" and rows["k2"][header.split(" | ").index("K")] == "2"
    csv = runner.invoke(app, ["leaderboard", "--output", str(out), "--format", "csv"])
    assert "generations" in csv.stdout.splitlines()[0]

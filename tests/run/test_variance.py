"""Variance components (`awbench.run.variance`): a judge of known noise, generations of known spread and items of
known spread, built as records and run end to end through a fake judge over HTTP; `judge_sd`, `generation_sd`,
`item_sd` and the Overall's judge standard error come back within their sampling error."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re

import numpy as np
import pytest
from fake_openai import FakeOpenAIServer, Reply
from judge_requests import verdict_text
from typer.testing import CliRunner

from awbench.cli import app
from awbench.domains import DIMENSIONS, DOMAINS, to_100
from awbench.records import JudgmentRecord, PredictionRecord, VerdictRecord
from awbench.run.scoring import variance_components

runner = CliRunner()

# Each of the five dimensions is 3 plus an independent draw from {-2, ..., 2} (variance 2): two carry the sample's
# own level, one the generation's, two the verdict's. A verdict's score is 25 (mean - 1) = 50 + 5 x (sum of the
# draws), so each source has 25 x (variance of its draws) of variance on 0..100.
DRAW_VAR = 2.0
ITEM_SD = 5 * math.sqrt(2 * DRAW_VAR)  # 10
GENERATION_SD = 5 * math.sqrt(DRAW_VAR)  # 7.07
JUDGE_SD = 5 * math.sqrt(2 * DRAW_VAR)  # 10


def draw(rng: random.Random) -> int:
    return rng.randint(-2, 2)


def verdict_scores(item: tuple[int, int], generation: int, rng: random.Random) -> dict[str, int]:
    levels = (*item, generation, draw(rng), draw(rng))
    return {d: 3 + level for d, level in zip(DIMENSIONS, levels, strict=True)}


def judged_records(samples: int, k: int, j: int, seed: int, turns: int = 3):
    """Per domain `samples` samples, `turns` to a trajectory, K generations, J verdicts each."""
    rng = random.Random(seed)
    keys, predictions, judgments = [], {}, {}
    for domain in DOMAINS:
        for i in range(samples):
            key = f"{domain}/{i // turns}/{i % turns + 1}"
            keys.append((key, domain, f"{domain}-{i // turns}"))
            item = (draw(rng), draw(rng))
            for g in range(k):
                level = draw(rng)
                verdicts = [VerdictRecord(status="complete", scores=verdict_scores(item, level, rng)) for _ in range(j)]
                dims = {d: float(np.mean([v.scores[d] for v in verdicts])) for d in DIMENSIONS}
                predictions[(key, g)] = PredictionRecord(
                    key=key, generation=g, domain=domain, sample_hash="h", status="ok", prediction="x"
                )
                judgments[(key, g)] = JudgmentRecord(
                    key=key,
                    generation=g,
                    domain=domain,
                    judge="llm",
                    cache_key=key,
                    status="ok",
                    score=to_100(float(np.mean(list(dims.values())))),
                    dimensions=dims,
                    verdicts=verdicts,
                )
    return keys, predictions, judgments


def sd_error(sd: float, df: int) -> float:
    """The sampling error of an SD estimated on `df` degrees of freedom (normal theory: sd / sqrt(2 df); the draws
    here have lighter tails than normal, so theirs is smaller)."""
    return sd / math.sqrt(2 * df)


def test_a_judge_of_known_noise_is_recovered_with_the_generations_and_items():
    n, k, j = 60, 2, 3
    keys, predictions, judgments = judged_records(n, k, j, seed=7)
    variance = variance_components("llm", keys, predictions, judgments, "minimum", k)
    assert variance is not None and variance.unseen == [] and (variance.generations, variance.verdicts) == (k, j)
    judge_df = len(DOMAINS) * n * k * (j - 1)
    assert variance.judge_sd == pytest.approx(JUDGE_SD, abs=3 * sd_error(JUDGE_SD, judge_df))
    # What each sample's generations spread by holds their noise and the judge's (judge_sd^2 / J): the estimate
    # takes the judge's out, so its error is that of the larger spread.
    spread = math.sqrt(GENERATION_SD**2 + JUDGE_SD**2 / j)
    generation_error = sd_error(spread, len(DOMAINS) * n * (k - 1)) * spread / GENERATION_SD
    assert variance.generation_sd == pytest.approx(GENERATION_SD, abs=3 * generation_error)
    assert variance.item_sd == pytest.approx(ITEM_SD, abs=3 * sd_error(ITEM_SD, len(DOMAINS) * (n - 1)) * 2)
    # The Overall's judge part: judge_sd / sqrt(K J n) per domain, over the seven domains.
    true_judge_se = JUDGE_SD / math.sqrt(k * j * n) / math.sqrt(len(DOMAINS))
    assert variance.overall_se_judge == pytest.approx(true_judge_se, abs=3.5 * sd_error(true_judge_se, judge_df))
    assert variance.overall_se_generation == pytest.approx(
        GENERATION_SD / math.sqrt(k * n * len(DOMAINS)), rel=3 * generation_error / GENERATION_SD
    )
    # The parts add up in squares to the whole.
    parts = [variance.overall_se_judge, variance.overall_se_generation, variance.overall_se_item]
    assert variance.overall_se == pytest.approx(math.sqrt(sum(p**2 for p in parts if p is not None)))
    os_ = variance.domains["os"]
    assert (os_.n, os_.trajectories) == (n, n // 3)
    assert os_.se_judge == pytest.approx(os_.judge_sd / math.sqrt(k * j * n))  # type: ignore[operator]


def test_the_overall_standard_error_is_the_spread_of_the_overall_over_repeated_benchmarks():
    """Over 40 fresh draws of the whole benchmark (items, generations, verdicts), the Overall's standard deviation
    is what each draw's `overall_se` says it is."""
    overalls, ses = [], []
    for seed in range(40):
        keys, predictions, judgments = judged_records(15, 2, 2, seed=seed, turns=1)
        variance = variance_components("llm", keys, predictions, judgments, "minimum", 2)
        assert variance is not None and variance.overall_se is not None
        ses.append(variance.overall_se)
        overalls.append(
            np.mean([np.mean([j.score for (k, _), j in judgments.items() if k.startswith(d)]) for d in DOMAINS])
        )
    # The SD of 40 draws is within about 11% of the truth (1 / sqrt(2 x 39)); 35% is three times that.
    assert float(np.std(overalls, ddof=1)) == pytest.approx(float(np.mean(ses)), rel=0.35)


def test_with_one_generation_and_one_verdict_the_judge_and_generations_are_unseen():
    keys, predictions, judgments = judged_records(20, 1, 1, seed=1)
    variance = variance_components("llm", keys, predictions, judgments, "minimum", 1)
    assert variance is not None and variance.unseen == ["judge", "generation"]
    assert (variance.judge_sd, variance.generation_sd, variance.overall_se_judge) == (None, None, None)
    assert variance.overall_se_item == pytest.approx(variance.overall_se)  # the items' part holds everything
    assert variance.unseen_note() == (
        "the judge's and the generations' noise is in the intervals but not measured apart from the items' (K = 1, "
        "J = 1); --judge-samples 2 and --generations 2 would measure it"
    )
    rows = dict(variance.rows())
    assert rows["Overall"][3:5] == ["–", "–"] and rows["OS"][:2] == ["20", "7"]


def test_a_baseline_has_no_generation_noise_and_is_not_told_to_measure_it(tmp_path):
    """Issue 36: a baseline gives a sample the same prediction every time, so --generations 2 (refused for it)
    would measure nothing: its generation noise is known to be 0, and no note suggests measuring it."""
    keys, predictions, judgments = judged_records(20, 1, 1, seed=1)
    variance = variance_components("llm", keys, predictions, judgments, "minimum", 1, deterministic=True)
    assert variance is not None and variance.unseen == ["judge"] and variance.generation_sd == 0.0
    assert "--generations" not in (variance.unseen_note() or "")
    out = tmp_path / "results"
    ran = CliRunner().invoke(
        app,
        ["run", "--model", "baseline:last-observation", "--judge", "rules"]
        + ["--data", "sample", "--domains", "os", "--output", str(out), "--run-name", "b"],
    )
    assert ran.exit_code in (0, 1), ran.output
    shown = CliRunner().invoke(app, ["show", "b", "--output", str(out)], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "--generations 2" not in shown.output, shown.output


def test_the_rule_judge_has_no_judge_noise_and_a_failed_generation_none_either():
    keys = [("os/1/1", "os", "t1"), ("os/2/1", "os", "t2"), ("os/3/1", "os", "t3")]
    predictions = {
        (k, g): PredictionRecord(
            key=k, generation=g, domain="os", sample_hash="h", status="error" if k == "os/3/1" else "ok"
        )
        for k, _, _ in keys
        for g in range(2)
    }
    judgments = {
        (k, g): JudgmentRecord(key=k, generation=g, domain="os", judge="rules", cache_key=k, status="ok", score=s)
        for (k, g), s in zip(predictions, (80.0, 60.0, 20.0, 40.0, 0.0, 0.0))
        if k != "os/3/1"
    }
    variance = variance_components("rules", keys, predictions, judgments, "minimum", 2)
    assert variance is not None and variance.unseen == [] and variance.judge_sd == 0.0
    # Generations differ by 20 in both scored samples, 0 in the failed one: pooled (200 + 200 + 0) / 3.
    assert variance.generation_sd == pytest.approx(math.sqrt(400 / 3))
    assert variance.domains["os"].se_judge == 0.0 and variance.overall_se is None  # one domain of seven: partial
    assert dict(variance.rows())["Overall"][2:6] == ["partial"] * 4


def test_an_end_to_end_run_through_a_judge_of_known_noise(tmp_path, monkeypatch):
    """The candidate predicts `level A B G`: the sample's own level (two draws from its action's hash) and the
    generation's (from its seed); the judge answers each verdict with those plus two draws of its own (from the
    verdict's seed). Two generations of each of the bundled sample's 65 samples, three verdicts each."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def candidate(body: dict) -> Reply:
        digest = hashlib.sha256(body["messages"][-1]["content"].encode()).digest()
        item = (digest[0] % 5 - 2, digest[1] % 5 - 2)
        generation = random.Random(body["seed"]).randint(-2, 2)
        return Reply(f"<predicted_observation>level {item[0]} {item[1]} {generation}</predicted_observation>")

    def judge(body: dict) -> Reply:
        levels = re.search(r"level (-?\d) (-?\d) (-?\d)", body["messages"][-1]["content"])
        assert levels is not None
        item, generation = (int(levels[1]), int(levels[2])), int(levels[3])
        return Reply(verdict_text(**verdict_scores(item, generation, random.Random(body["seed"]))))

    out = tmp_path / "results"
    with FakeOpenAIServer(responder=candidate) as model, FakeOpenAIServer(responder=judge) as judge_server:
        result = runner.invoke(
            app,
            [
                "run", "--model", "m", "--base-url", model.url, "--data", "sample", "--generations", "2",
                "--judge-model", "judge-x", "--judge-base-url", judge_server.url, "--judge-samples", "3",
                "--run-name", "noise", "--output", str(out),
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "noise" / "scores.json").read_text())
    variance = scores["variance"]
    samples = sum(d["n"] for d in scores["domains"].values())
    judge_df = samples * 2 * (3 - 1)
    assert (variance["generations"], variance["verdicts"], variance["unseen"]) == (2, 3, [])
    assert variance["judge_sd"] == pytest.approx(JUDGE_SD, abs=3 * sd_error(JUDGE_SD, judge_df))
    true_judge_se = JUDGE_SD * math.sqrt(sum(1 / (2 * 3 * d["n"]) for d in scores["domains"].values())) / 7
    assert variance["overall_se_judge"] == pytest.approx(true_judge_se, abs=3.5 * sd_error(true_judge_se, judge_df))
    text = " ".join(result.output.split())
    assert "Standard errors and their sources (0..100; docs/statistics.md)" in text
    assert "mean per-sample std of totals" not in text  # the undocumented line it replaces
    shown = json.loads(runner.invoke(app, ["show", str(out / "noise"), "--format", "json"]).stdout)
    assert shown["variance"] == variance


def test_with_one_verdict_the_judges_noise_is_inside_the_generations_spread():
    keys, predictions, judgments = judged_records(40, 3, 1, seed=2)
    variance = variance_components("llm", keys, predictions, judgments, "minimum", 3)
    assert variance is not None and variance.unseen == ["judge"] and variance.judge_sd is None
    both = math.sqrt(GENERATION_SD**2 + JUDGE_SD**2)  # what one verdict of each generation spreads by
    assert variance.generation_sd == pytest.approx(both, abs=3 * sd_error(both, len(DOMAINS) * 40 * 2))
    assert variance.unseen_note() == (
        "the judge's noise is in the intervals but not measured apart from the generations' (K = 3, J = 1); "
        "--judge-samples 2 would measure it"
    )

"""How much the judge decides (`awbench.analysis.judge_effects`, `awbench judges`): Kendall's tau of two judges'
leaderboards, each judge's offset against the others per domain, and a possible self-preference, on a constructed
case whose answers are known; and end to end, three runs judged by two fake judges over HTTP."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from fake_openai import FakeOpenAIServer, Reply
from judge_requests import verdict_text
from typer.testing import CliRunner

from awbench.analysis.judge_effects import judge_effects, kendall_tau, model_family
from awbench.analysis.options import OVERALL
from awbench.cli import app

runner = CliRunner()


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("gpt-5.2-2025-12-11", "openai"),
        ("o3-mini", "openai"),
        ("openai/gpt-oss-120b", "openai"),
        ("claude-opus-4-6", "anthropic"),
        ("Qwen/Qwen3-8B", "qwen"),
        ("Qwen-AgentWorld-397B-A17B", "qwen"),
        ("gemini-3.1-pro", "google"),
        ("meta-llama/Llama-3.1-8B-Instruct", "meta"),
        ("glm-5.1", "zhipu"),
        ("baseline:oracle", "baseline"),
        ("mymodel2", "mymodel"),
        ("omega-1", "omega"),  # not o1, o3 or o4
    ],
)
def test_model_families_by_name(model, family):
    assert model_family(model) == family


def test_kendall_tau_b():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert kendall_tau(x, x) == 1.0 and kendall_tau(x, -x) == -1.0
    assert kendall_tau(x, np.array([1.0, 3.0, 2.0, 4.0])) == pytest.approx(4 / 6)  # 5 concordant, 1 discordant
    # With a tie in y: (5 - 0) / sqrt(6 x 5) (scipy.stats.kendalltau's tau-b gives 0.9128709)
    assert kendall_tau(x, np.array([1.0, 2.0, 2.0, 4.0])) == pytest.approx(5 / np.sqrt(30))
    assert np.isnan(kendall_tau(x, np.ones(4)))
    many = kendall_tau(np.stack([x, x]), np.stack([x, -x]))  # leading axes: independent cases
    assert list(many) == [1.0, -1.0]


def constructed():
    """Four runs, two domains of six trajectories (two samples each); judge A scores run r's samples 40 + 10 r (+1
    per sample index, so that resamples differ), judge B the same plus 5, judge C in the reverse order of runs but
    30 points more for the qwen run."""
    runs = {"r0": "alpha-wm", "r1": "beta-wm", "r2": "qwen3-wm", "r3": "delta-wm"}
    judges = {"A": "gpt-5.2", "B": "claude-opus", "C": "Qwen/Qwen3-8B"}
    keys = {d: [f"{d}/t{t}/{s}" for t in range(6) for s in (1, 2)] for d in ("os", "web")}
    trajectories = {k: k.rsplit("/", 1)[0] for ks in keys.values() for k in ks}
    cells = {}
    for r, run in enumerate(runs):
        for judge in judges:
            level = {"A": 40 + 10 * r, "B": 45 + 10 * r, "C": 70 - 10 * r + (30 if run == "r2" else 0)}[judge]
            cells[(judge, run)] = {d: {k: level + i % 3 for i, k in enumerate(ks)} for d, ks in keys.items()}
    return cells, trajectories, judges, runs


def test_offsets_rank_agreement_and_self_preference_on_a_constructed_case():
    cells, trajectories, judges, runs = constructed()
    effects = judge_effects(cells, trajectories, judges, runs, resamples=2000, seed=0)
    assert effects is not None and effects.domains == ["web", "os"] and effects.notes == []
    # A's levels 40, 50, 60, 70; B's 45 .. 75; C's 70, 60, 80 (50 + 30), 40: consensus gaps exactly known.
    c = {"r0": 70, "r1": 60, "r2": 80, "r3": 40}
    a = {r: 40 + 10 * i for i, r in enumerate(runs)}
    offset_a = np.mean([a[r] - (a[r] + 5 + c[r]) / 2 for r in runs])
    offset_c = np.mean([c[r] - (a[r] + a[r] + 5) / 2 for r in runs])
    assert effects.offsets["A"][OVERALL].value == pytest.approx(offset_a)
    assert effects.offsets["A"]["os"].value == pytest.approx(offset_a)
    assert effects.offsets["C"][OVERALL].value == pytest.approx(offset_c)
    # every sample moves each run's scores alike, so these differences are the same in every resample
    assert (effects.offsets["A"][OVERALL].lo, effects.offsets["A"][OVERALL].hi) == pytest.approx((offset_a, offset_a))
    taus = {(t.judge_a, t.judge_b): t.tau.value for t in effects.rank_agreement}
    assert taus[("A", "B")] == pytest.approx(1.0)
    assert taus[("A", "C")] == pytest.approx(-1 / 3)  # of six pairs of runs, two in the same order
    # C, of the qwen family, on the qwen run: its gap there less its mean gap elsewhere
    (preference,) = effects.self_preference
    gaps = {r: c[r] - (a[r] + a[r] + 5) / 2 for r in runs}
    expected = gaps["r2"] - np.mean([gaps[r] for r in runs if r != "r2"])
    assert (preference.judge, preference.run, preference.family) == ("C", "r2", "qwen")
    assert preference.residual.value == pytest.approx(expected) and preference.clear


def test_too_few_trajectories_give_no_interval_and_say_where():
    cells, trajectories, judges, runs = constructed()
    few = {c: {d: dict(list(v.items())[:4]) for d, v in domains.items()} for c, domains in cells.items()}
    effects = judge_effects(few, trajectories, judges, runs, resamples=2000, seed=0)
    assert effects is not None and effects.offsets["A"][OVERALL].lo is None
    assert effects.notes == ["too few to tell in Web, OS (fewer than 5 trajectories): no intervals there"]
    assert judge_effects({k: v for k, v in cells.items() if k[0] == "A"}, trajectories, judges, runs) is None


def test_judges_shows_how_much_the_judge_decides_beside_the_turing_accuracy(tmp_path, monkeypatch):
    """Three runs (two models and a Qwen one) of the OS and Web samples, each judged by a gpt and a Qwen judge; the
    Qwen judge gives one point more in every dimension to the Qwen model's predictions. The gpt judge also took the
    Turing test on one run (always answering A: right half the time)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def candidate(body: dict) -> Reply:
        return Reply(f"<predicted_observation>from {body['model']}</predicted_observation>")

    def judge(body: dict) -> Reply:
        user = body["messages"][-1]["content"]
        if "Response B" in user:  # the Turing test's question
            return Reply("\\boxed{A}")
        model = re.search(r"from ([\w.-]+)", user)
        assert model is not None
        base = {"alpha-wm": 4, "beta-wm": 2, "qwen3-wm": 3}[model[1]]
        base += body["model"] == "Qwen/Qwen3-8B" and model[1] == "qwen3-wm"
        return Reply(verdict_text(*[base] * 5))

    out = tmp_path / "results"
    with FakeOpenAIServer(responder=candidate) as model, FakeOpenAIServer(responder=judge) as judges:
        for name in ("alpha-wm", "beta-wm", "qwen3-wm"):
            common = ["--base-url", model.url, "--data", "sample", "--domains", "os,web", "--output", str(out)]
            judged = ["--judge-base-url", judges.url, "--run-name", name]
            result = runner.invoke(app, ["run", "--model", name, *common, "--judge-model", "gpt-5.2", *judged])
            assert result.exit_code == 0, result.output
            result = runner.invoke(
                app, ["judge", str(out / name), "--judge-model", "Qwen/Qwen3-8B", "--judge-base-url", judges.url]
            )
            assert result.exit_code == 0, result.output
        turing = [
            "turing",
            "alpha-wm",
            "--output",
            str(out),
            "--judge-model",
            "gpt-5.2",
            "--judge-base-url",
            judges.url,
        ]
        assert runner.invoke(app, [*turing, "--both-orders"]).exit_code == 0
    result = runner.invoke(app, ["judges", "alpha-wm", "beta-wm", "qwen3-wm", "--output", str(out), "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (turing_result,) = report["judges"]
    assert turing_result["accuracy"] == {"value": 50.0, "low": None, "high": None, "n": 16}
    effects = report["judge_effects"]
    assert sorted(effects["judges"].values()) == ["Qwen/Qwen3-8B", "gpt-5.2"] and effects["domains"] == ["web", "os"]
    (agreement,) = effects["rank_agreement"]
    # gpt: alpha 75, qwen 50, beta 25; Qwen: alpha 75, qwen 75, beta 25. Two pairs agree, one is tied by Qwen.
    assert (agreement["runs"], agreement["tau"]["value"]) == (3, pytest.approx(2 / np.sqrt(3 * 2)))
    (preference,) = effects["self_preference"]
    qwen = next(j for j, m in effects["judges"].items() if m == "Qwen/Qwen3-8B")
    assert (preference["judge"], preference["run"], preference["family"]) == (qwen, "qwen3-wm", "qwen")
    assert preference["residual"]["value"] == pytest.approx(25.0)  # one point on 1..5 is 25 on 0..100
    assert preference["residual"]["lo"] is None  # two trajectories a domain in the sample: too few to tell
    output = runner.invoke(app, ["judges", "alpha-wm", "beta-wm", "qwen3-wm", "--output", str(out)]).output
    table = " ".join(output.split())
    assert "How much the judge decides: 2 judges of 3 runs (scores: Web and OS)" in table
    assert (
        f"possible self-preference: judge {qwen} gives qwen3-wm, of its own family (qwen), +25.00 (too few to tell)"
        in table
    )
    assert "Rank agreement of the judges' leaderboards (Kendall's tau-b)" in table
    gpt_row = next(line for line in output.splitlines() if "gpt-5.2-rubric-" in line)
    assert "│ gpt-5.2 " in gpt_row and "50.0 (too few to tell)" in gpt_row  # beside its Turing accuracy

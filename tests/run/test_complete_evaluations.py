"""Only complete evaluations are ranked or exported, and `run`, `judge` and `score` share one exit rule: real
runs against the fake judge server (tests/fake_openai.py) and the fake Batch API (tests/fake_batch_api.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_batch_api import FakeBatchAPI
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from typer.testing import CliRunner

from awbench.cli import app
from awbench.run.store import RunStore

runner = CliRunner()
SAMPLES = 65  # the bundled sample, all seven domains
NAMES = ("format", "factuality", "consistency", "realism", "quality")


def verdict(*scores: int) -> str:
    body = json.dumps({"strengths": ["s"], "weaknesses": ["w"], "scores": dict(zip(NAMES, scores or (5, 4, 3, 4, 2)))})
    return f"Reasoning.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-complete")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def run_args(url: str, out: Path, name: str, *extra: object) -> list[object]:
    return [
        "run",
        "--model",
        "baseline:oracle",
        "--data",
        "sample",
        "--judge-model",
        "judge-x",
        "--judge-base-url",
        url,
        "--judge-price-in",
        "1",
        "--judge-price-out",
        "1",
        "--judge-concurrency",
        "1",
        "--run-name",
        name,
        "--output",
        out,
        *extra,
    ]


def test_a_run_stopped_by_max_cost_is_never_ranked_nor_exported(tmp_path: Path) -> None:
    out = tmp_path / "results"
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        stopped = invoke(*run_args(server.url, out, "capped", "--max-cost", "0.05"))
        assert stopped.exit_code == 1 and "judge spend would pass the cap" in stopped.output
        assert (
            "run the same command again with a higher --max-cost; until then its evaluation is incomplete, and "
            "never ranked nor exported"
        ) in " ".join(stopped.output.split())
        judged = len(server.requests)
        assert 0 < judged < SAMPLES
        assert invoke(*run_args(server.url, out, "full")).exit_code == 0
    mark = f"incomplete ({judged} of {SAMPLES} judged, stopped by --max-cost)"
    waiting = f"{SAMPLES - judged} not judged yet (stopped by --max-cost)"
    # Issue 36: stopped, the run is scored at once (ls shows its state without `score`), and what is not judged
    # yet is waiting, never failed.
    listed = invoke("ls", "--output", out).stdout.splitlines()
    assert f"capped\tbaseline:oracle\tjudge-x-rubric-65f5da\t{mark}\tpartial\t–" in listed  # 2 domains of 7 so far
    scores = json.loads((out / "capped" / "scores.json").read_text())
    assert scores["stopped"] == "stopped by --max-cost"
    assert scores["completeness"] == {"judged": judged, "selected": SAMPLES}
    assert sum(d["pending"] for d in scores["domains"].values()) == SAMPLES - judged

    # Scored again: exit 1, the pending samples in a column and a line of their own, no failure.
    scored = invoke("score", "capped", "--output", out)
    assert scored.exit_code == 1, scored.output
    assert scored.stderr.splitlines() == [
        f"{waiting}: {judged} of {SAMPLES} judged, not ranked by the leaderboard nor exported; finish it with the "
        f"same `awbench run` command or `awbench judge {out / 'capped'}` with a higher --max-cost; `awbench score` "
        "shows an unfinished run's scores, which are never ranked"
    ]
    assert "failed" not in scored.stderr
    total = next(line for line in scored.stdout.splitlines() if line.startswith("│ Overall (macro)"))
    assert total.split("│")[2:6] == [" 65 ", "      0 ", "        0 ", f"{SAMPLES - judged:>8} "]
    failed = invoke("show", "capped", "--failed", "--output", out)
    assert failed.stdout == f"capped: no failed or unscored samples (judge {scores['judge_id']})\n"
    assert failed.stderr.startswith(f"{waiting}, not listed: waiting is not failing; finish it with")
    full = json.loads((out / "full" / "scores.json").read_text())
    assert full["completeness"] == {"judged": SAMPLES, "selected": SAMPLES} and full["overall"] == pytest.approx(65.0)

    # The leaderboard ranks the complete run only; the stopped one is listed below it, unranked and marked.
    board = invoke("leaderboard", "--output", out, "--format", "json")
    assert board.exit_code == 0, board.output
    (group,) = json.loads(board.stdout)["groups"]
    rows = [(r["run"], r["rank"], r["incomplete"]) for r in group["rows"]]
    assert rows == [("full", 1, None), ("capped", None, mark)]
    assert (
        f"note: capped ({scores['judge_id']}) is not ranked: {mark}; finish it with the same `awbench run` command"
    ) in board.stderr
    table = invoke("leaderboard", "--output", out)
    assert mark in table.stdout
    markdown = invoke("leaderboard", "--output", out, "--format", "markdown").stdout
    # some domains unjudged; parentheses escaped in a markdown cell, as any text
    escaped = mark.replace("(", "\\(").replace(")", "\\)")
    assert f"|  | capped *({escaped})* *(partial \\(" in markdown
    assert "| 1 | full |" in markdown

    # show, compare and the report say so too.
    shown = invoke("show", "capped", "--output", out)
    assert shown.exit_code == 0 and f"{mark}: not ranked by the leaderboard nor exported" in shown.output
    compared = invoke("compare", "capped", "full", "--output", out, "--format", "json")
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.stdout)["warnings"] == [
        f"capped is {mark}: its scores are not final, and only samples both runs judged are compared",
        f"left out samples scored by one run only: 0 of capped, {SAMPLES - judged} of full",
    ]
    page = tmp_path / "report.html"
    assert invoke("report", "--output", out, "-o", page, "--no-ci").exit_code == 0
    assert f'capped <span class="badge">{mark}</span>' in page.read_text()

    # The Hub export refuses it, --allow-subset or not.
    for extra in ([], ["--allow-subset"]):
        refused = invoke("export", out / "capped", "--hf-eval-results", tmp_path / "repo", *extra)
        assert refusal(refused) == (2, "not_scored") and mark in refused.stderr
    assert not (tmp_path / "repo").exists()
    # --allow-subset still writes a data subset (the bundled sample) whose selected samples are all judged
    assert invoke("export", out / "full", "--hf-eval-results", tmp_path / "repo", "--allow-subset").exit_code == 0

    # Finished with the same command and a higher cap: complete, ranked.
    with FakeOpenAIServer(responder=lambda body: Reply(verdict(5, 5, 5, 5, 5))) as server:
        resumed = invoke(*run_args(server.url, out, "capped", "--max-cost", "10"))
        assert resumed.exit_code == 0, resumed.output
        assert len(server.requests) == SAMPLES - judged
    assert json.loads((out / "capped" / "scores.json").read_text())["stopped"] is None  # judging again clears it
    board = json.loads(invoke("leaderboard", "--output", out, "--format", "json").stdout)
    assert [(r["run"], r["rank"], r["incomplete"]) for r in board["groups"][0]["rows"]] == [
        ("capped", 1, None),
        ("full", 2, None),
    ]


@pytest.mark.parametrize("batch", [False, True], ids=["direct", "batch"])
def test_judge_exits_1_when_every_verdict_failed_as_run_and_score_do(tmp_path: Path, batch: bool) -> None:
    out = tmp_path / "results"
    assert (
        invoke(
            "infer",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "os",
            "--run-name",
            "r",
            "--output",
            out,
        ).exit_code
        == 0
    )
    unusable = lambda body: Reply("no verdict here")
    options = ["--judge-model", "judge-x", "--judge-max-retries", "0", "--output", out]
    if batch:
        with FakeBatchAPI(responder=unusable) as api:
            judged = invoke(
                "judge",
                "r",
                "--judge-base-url",
                api.url,
                "--judge-batch",
                "--judge-batch-poll-interval",
                "0.02",
                *options,
            )
    else:
        with FakeOpenAIServer(responder=unusable) as server:
            judged = invoke("judge", "r", "--judge-base-url", server.url, *options)
    (evaluation,) = RunStore(out / "r").evaluations()
    records = evaluation.judgments.load()
    n = len(records)
    assert n > 0 and all(r.status == "failed" and not r.transient for r in records.values())
    assert f"{n} judged ({n} failed)" in judged.output
    assert judged.exit_code == 1, judged.output
    scored = invoke("score", "r", "--output", out)
    assert scored.exit_code == 1
    # the judgments are final (unusable for good): the evaluation is complete, and it is its failures that fail it
    assert json.loads((out / "r" / "scores.json").read_text())["completeness"] == {"judged": n, "selected": n}

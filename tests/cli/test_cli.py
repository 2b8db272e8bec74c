"""The command line end to end: real files, a real HTTP judge on 127.0.0.1, exit codes and messages."""

import json

import pytest
from fake_openai import FakeOpenAIServer, Reply
from refusals import refusal
from typer.testing import CliRunner

from awbench.cli import app
from awbench.data.dataset import read_source
from awbench.judging.rules.judge import RuleJudge
from awbench.run.store import RunStore

SECRET = "sk-test-cli-SECRET-4711"
runner = CliRunner()


def verdict(format=5, factuality=4, consistency=3, realism=4, quality=2):
    scores = dict(format=format, factuality=factuality, consistency=consistency, realism=realism, quality=quality)
    body = json.dumps({"strengths": ["s"], "weaknesses": ["w"], "scores": scores})
    return f"Reasoning.\n<final_evaluation>\n```json\n{body}\n```\n</final_evaluation>"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def out(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return tmp_path / "results"


def _no_secret_in(directory):
    for path in directory.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_quickstart_main_job_reports_first_turn_failures(out):
    samples, _ = read_source("sample")
    first_turns = sum(s.record.turn_idx == 1 for s in samples)
    result = invoke(
        "run", "--model", "baseline:last-observation", "--judge", "rules", "--data", "sample", "--output", out
    )
    assert result.exit_code == 1, result.output  # the persistence baseline has nothing to predict on turn 1
    assert "Overall (macro)" in result.output and "rule score" in result.output
    assert f"{first_turns} of {len(samples)} samples failed or were not scored" in result.output
    scores = json.loads((out / "baseline-last-observation__rules" / "scores.json").read_text())
    assert scores["judge"] == "rules" and sum(d["failed"] for d in scores["domains"].values()) == first_turns


def test_oracle_with_rules_exits_0_and_scores_100(out):
    result = invoke("run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--output", out)
    assert result.exit_code == 0, result.output
    scores = json.loads((out / "baseline-oracle__rules" / "scores.json").read_text())
    assert scores["overall"] == pytest.approx(100.0) and scores["schema_version"] == 1
    board = invoke("leaderboard", "--output", out)  # an 80-column terminal keeps the run names
    assert board.exit_code == 0 and "baseline-oracle__rules" in board.output and "100.00" in board.output


def test_llm_judge_end_to_end_over_http(out):
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        result = invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "os,web",
            "--judge-model",
            "judge-x",
            "--judge-base-url",
            server.url,
            "--judge-structured",
            "--run-name",
            "r",
            "--output",
            out,
        )
    assert result.exit_code == 0, result.output
    samples = [s for s in read_source("sample")[0] if s.domain in ("os", "web")]
    assert len(server.requests) == len(samples)
    assert all(body["model"] == "judge-x" and "response_format" in body for body in server.requests)
    assert {h.get("authorization") or h.get("Authorization") for h in server.headers} == {f"Bearer {SECRET}"}
    scores = json.loads((out / "r" / "scores.json").read_text())
    # (5 + 4 + 3 + 4 + 2) / 5 = 3.6 on 1..5, so 65 on 0..100, in every domain.
    assert [d["score"] for d in scores["domains"].values()] == pytest.approx([65.0, 65.0])
    assert set(scores["domains"]) == {"web", "os"} and scores["partial"] == "partial (2 of 7 domains)"
    assert scores["domains"]["os"]["dimensions"]["format"] == pytest.approx(100.0)
    _no_secret_in(out / "r")


def test_an_interrupted_judging_resumes_without_asking_again(out):
    args = [
        "run",
        "--model",
        "baseline:oracle",
        "--data",
        "sample",
        "--domains",
        "os",
        "--judge-model",
        "j",
        "--judge-concurrency",
        "1",
        "--run-name",
        "r",
        "--output",
        out,
    ]
    n = sum(s.domain == "os" for s in read_source("sample")[0])
    with FakeOpenAIServer(
        script=[Reply(verdict()), Reply(verdict()), Reply(status=401, error_message="key revoked")]
    ) as server:
        first = invoke(*args, "--judge-base-url", server.url)
    assert refusal(first) == (2, "api_refused") and "key revoked" in first.stderr
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        second = invoke(*args, "--judge-base-url", server.url)
    assert second.exit_code == 0, second.output
    assert len(server.requests) == n - 2


def test_dry_run_spends_nothing_and_writes_nothing(out):
    with FakeOpenAIServer() as server:
        result = invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--judge-model",
            "gpt-5.2",
            "--judge-base-url",
            server.url,
            "--dry-run",
            "--output",
            out,
        )
    assert result.exit_code == 0, result.output
    assert server.requests == [] and not out.exists()
    samples, _ = read_source("sample")
    assert f"{len(samples)} judge calls" in result.output and "Nothing was spent" in result.output


def test_a_missing_judge_key_stops_before_any_inference(out, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    result = invoke("run", "--model", "baseline:oracle", "--data", "sample", "--output", out)
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.output and "--judge rules" in result.output
    assert not out.exists()


def test_bad_data_names_file_line_and_field_without_traceback(out, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task": "os", "id": 1, "prompt": ["a"], "response": ["b"], "turn_idx": "1"}\nnot json\n')
    result = invoke("run", "--model", "baseline:oracle", "--judge", "rules", "--data", bad, "--output", out)
    assert result.exit_code == 2
    assert f"{bad}:1: turn_idx: expected int, got str" in result.output
    assert f"{bad}:2:" in result.output and "Traceback" not in result.output


def test_data_validate_lists_every_problem(tmp_path):
    bad = tmp_path / "os_test.jsonl"
    bad.write_text(
        '{"task": "os"}\n[1]\n{"task": "web", "id": 1, "prompt": ["a"], "response": ["b"], "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 1}\n'
    )
    result = invoke("data", "validate", bad)
    assert result.exit_code == 2
    assert (
        result.output.count("error") >= 3
        and ":1:" in result.output
        and ":2:" in result.output
        and ":3:" in result.output
    )


def test_data_validate_reports_each_missing_field_of_the_schema(tmp_path):
    """Records without `total_turns`, `system_str` or `current_prompt` used to pass with 0 errors."""
    full = {
        "task": "os",
        "id": 1,
        "prompt": ["a"],
        "response": ["b"],
        "current_prompt": "a",
        "system_str": "s",
        "turn_idx": 1,
        "total_turns": 1,
    }
    lines = [json.dumps(full)] + [
        json.dumps({k: v for k, v in full.items() if k != name} | {"id": n})
        for n, name in enumerate(["total_turns", "system_str", "current_prompt"], 2)
    ]
    path = tmp_path / "os_test.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = invoke("data", "validate", path)
    assert (result.exit_code, result.output) == (
        2,
        (
            f"error: {path}:2: total_turns: missing field\n"
            f"error: {path}:3: system_str: missing field\n"
            f"error: {path}:4: current_prompt: missing field\n"
            "1 valid sample; 3 errors; 0 warnings\n"
        ),
    )


def test_data_validate_accepts_the_sample_with_its_duplicate_note():
    result = invoke("data", "validate", "sample")
    assert result.exit_code == 0, result.output
    assert "0 errors; 0 warnings; 1 note" in result.output and "note: " in result.output
    assert "duplicate key android/4/3" in result.output


def test_data_info_shows_every_domain():
    result = invoke("data", "info", "sample")
    assert result.exit_code == 0, result.output
    for label in ("MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS", "total"):
        assert label in result.output


def test_infer_then_judge_then_score_with_another_policy(out):
    assert (
        invoke("infer", "--model", "baseline:empty", "--data", "sample", "--run-name", "e", "--output", out).exit_code
        == 0
    )
    judged = invoke("judge", "e", "--judge", "rules", "--output", out)
    # every generation failed: `judge` exits 1, as `score` does for the same state
    assert judged.exit_code == 1 and f"judge {RuleJudge.id}: 0 judged" in judged.output
    minimum = invoke("score", "e", "--output", out)
    assert minimum.exit_code == 1 and json.loads((out / "e" / "scores.json").read_text())["overall"] == 0.0
    excluded = invoke("score", str(out / "e"), "--failure-policy", "exclude", "--output", "elsewhere")
    assert excluded.exit_code == 1 and json.loads((out / "e" / "scores.json").read_text())["overall"] is None


def test_changed_settings_are_refused(out):
    base = [
        "run",
        "--model",
        "baseline:oracle",
        "--judge",
        "rules",
        "--data",
        "sample",
        "--run-name",
        "x",
        "--output",
        out,
    ]
    assert invoke(*base).exit_code == 0
    result = invoke(*[a if a != "baseline:oracle" else "baseline:empty" for a in base])
    assert (
        refusal(result) == (2, "settings_differ")
        and "model.model: 'baseline:oracle' -> 'baseline:empty'" in result.stderr
    )


def test_export_then_import_round_trips_the_reference_format(out, tmp_path):
    with FakeOpenAIServer(responder=lambda body: Reply(verdict(quality=4))) as server:
        assert (
            invoke(
                "run",
                "--model",
                "baseline:oracle",
                "--data",
                "sample",
                "--judge-model",
                "j",
                "--judge-base-url",
                server.url,
                "--run-name",
                "orig",
                "--output",
                out,
            ).exit_code
            == 0
        )
    official = tmp_path / "official"
    assert invoke("export", "orig", "--official", official, "--output", out).exit_code == 0
    rows = [json.loads(line) for line in (official / "judged.jsonl").read_text().split("\n") if line]
    samples, _ = read_source("sample")
    assert len(rows) == len(samples)
    assert {k: rows[0][k] for k in ("format", "factuality", "consistency", "realism", "quality", "failed")} == {
        "format": 5.0,
        "factuality": 4.0,
        "consistency": 3.0,
        "realism": 4.0,
        "quality": 4.0,
        "failed": 0.0,
    }
    assert rows[0]["total_score"] == pytest.approx(4.0) and rows[0]["gen"] == samples[0].record.ground_truth

    imported = invoke("import", official / "judged.jsonl", "--run-name", "back", "--judge-model", "j", "--output", out)
    assert imported.exit_code == 0, imported.output
    original = json.loads((out / "orig" / "scores.json").read_text())
    back = json.loads((out / "back" / "scores.json").read_text())
    assert back["overall"] == pytest.approx(original["overall"]) == pytest.approx(75.0)
    assert (
        json.loads((out / "back" / "run.json").read_text())["data_fingerprint"]
        == json.loads((out / "orig" / "run.json").read_text())["data_fingerprint"]
    )


def test_import_of_predictions_only_can_be_judged_later(out, tmp_path):
    assert (
        invoke(
            "run",
            "--model",
            "baseline:oracle",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--run-name",
            "o",
            "--output",
            out,
        ).exit_code
        == 0
    )
    assert invoke("export", "o", "--official", tmp_path, "--output", out).exit_code == 0
    assert invoke("import", tmp_path / "predictions.jsonl", "--run-name", "p", "--output", out).exit_code == 0
    result = invoke("judge", "p", "--judge", "rules", "--output", out)
    assert result.exit_code == 0, result.output
    assert invoke("score", "p", "--output", out).exit_code == 0
    assert json.loads((out / "p" / "scores.json").read_text())["overall"] == pytest.approx(100.0)


@pytest.mark.parametrize(
    "command",
    [
        ["run"],
        ["infer"],
        ["judge"],
        ["score"],
        ["export"],
        ["import"],
        ["leaderboard"],
        ["compare"],
        ["show"],
        ["report"],
        ["data", "validate"],
        ["data", "info"],
    ],
)
def test_every_command_has_help_with_an_example(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0 and "Example" in result.output


def test_reparse_applies_the_current_parser_without_calls(out):
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        assert (
            invoke(
                "run",
                "--model",
                "baseline:oracle",
                "--data",
                "sample",
                "--domains",
                "os",
                "--judge-model",
                "j",
                "--judge-base-url",
                server.url,
                "--run-name",
                "r",
                "--output",
                out,
            ).exit_code
            == 0
        )
    (evaluation,) = RunStore(out / "r").evaluations()
    path = evaluation.judgments.path
    lines = path.read_text().split("\n")
    stale = json.loads(lines[0])  # as an older parser might have read it
    stale["verdicts"][0]["scores"]["quality"] = 5
    stale["dimensions"]["quality"] = 5.0
    path.write_text("\n".join([json.dumps(stale), *lines[1:]]))
    with FakeOpenAIServer() as server:
        result = invoke("judge", "r", "--reparse", "--judge-base-url", server.url, "--output", out)
    assert result.exit_code == 0, result.output
    assert "reparse: 1 verdicts changed" in result.output and server.requests == []
    records = evaluation.judgments.load()
    assert records[(stale["key"], 0)].dimensions["quality"] == 2.0


def test_reparse_under_the_reference_protocol_reads_what_the_judge_was_asked(out, tmp_path):
    """The request is rebuilt as the protocol builds it (its text, its cache key) and the reference's readings
    are kept: re-parsing unchanged answers changes nothing."""
    from reference_checkout import write_checkout

    checkout = write_checkout(tmp_path / "checkout")
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        assert (
            invoke(
                "run",
                "--model",
                "baseline:oracle",
                "--data",
                "sample",
                "--domains",
                "os",
                "--judge-model",
                "j",
                "--judge-base-url",
                server.url,
                "--judge-prompts",
                str(checkout),
                "--run-name",
                "r",
                "--output",
                out,
            ).exit_code
            == 0
        )
    (evaluation,) = RunStore(out / "r").evaluations()
    before = evaluation.judgments.load()
    assert before and all(v.reference is not None for record in before.values() for v in record.verdicts)
    with FakeOpenAIServer() as server:
        result = invoke("judge", "r", "--reparse", "--judge-base-url", server.url, "--output", out)
    assert result.exit_code == 0, result.output
    assert "reparse: 0 verdicts changed" in result.output and server.requests == []
    assert evaluation.judgments.load() == before


def test_judge_dry_run_counts_only_what_is_missing(out):
    assert (
        invoke(
            "infer",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--domains",
            "web",
            "--run-name",
            "w",
            "--output",
            out,
        ).exit_code
        == 0
    )
    n = sum(s.domain == "web" for s in read_source("sample")[0])
    result = invoke("judge", "w", "--judge-model", "gpt-5.2-2025-12-11", "--dry-run", "--output", out)
    assert result.exit_code == 0, result.output
    assert f"{n} judge calls" in result.output and "estimated judge cost $" in result.output
    assert not (out / "w" / "judges").exists()


def test_skip_invalid_runs_the_valid_records_and_says_how_many_it_skipped(out, tmp_path, sample_path):
    data = tmp_path / "os_test.jsonl"
    good = (sample_path / "os_test.jsonl").read_text().split("\n")[:2]
    data.write_text("\n".join([good[0], '{"task": "os", "id": 9}', good[1], "{broken"]) + "\n")
    refused = invoke("run", "--model", "baseline:oracle", "--judge", "rules", "--data", data, "--output", out)
    assert refused.exit_code == 2 and f"{data}:2:" in refused.output and f"{data}:4:" in refused.output
    result = invoke(
        "run", "--model", "baseline:oracle", "--judge", "rules", "--data", data, "--skip-invalid", "--output", out
    )
    assert result.exit_code == 0, result.output
    assert "skipped 2 invalid records" in result.output
    assert json.loads((out / "baseline-oracle__rules" / "scores.json").read_text())["domains"]["os"]["n"] == 2


def test_both_judges_give_agreement_and_rl_rewards(out, tmp_path):
    with FakeOpenAIServer(responder=lambda body: Reply(verdict())) as server:
        result = invoke(
            "run",
            "--model",
            "baseline:last-observation",
            "--judge",
            "both",
            "--data",
            "sample",
            "--domains",
            "terminal",
            "--judge-model",
            "j",
            "--judge-base-url",
            server.url,
            "--run-name",
            "b",
            "--output",
            out,
            "--max-failure-rate",
            "1",
        )
    assert result.exit_code == 0, result.output
    assert "rule score vs LLM judge, Spearman: overall" in result.output
    scores = json.loads((out / "b" / "scores.json").read_text())
    assert scores["judge"] == "llm" and scores["rules"]["judge"] == "rules" and "terminal" in scores["agreement"]

    rewards_path = tmp_path / "rewards.jsonl"
    assert invoke("score", "b", "--reward", rewards_path, "--output", out, "--max-failure-rate", "1").exit_code == 0
    rows = {row["key"]: row for row in map(json.loads, rewards_path.read_text().split("\n")[:-1])}
    samples = {s.key: s for s in read_source("sample")[0] if s.domain == "terminal"}
    assert set(rows) == set(samples)
    for key, row in rows.items():
        assert row["schema_version"] == 1
        if samples[key].record.turn_idx == 1:  # an empty prediction: minimum rubric, no rule match
            assert row["reward"] == pytest.approx(0.9 * 5.0)
        else:  # rubric mean 3.6 -> 18 of 25; the previous observation never matches the truth exactly here
            assert (row["rubric"], row["rule"]) == (pytest.approx(18.0), 0.0)
            assert row["reward"] == pytest.approx(0.9 * 18.0)


def test_engine_args_are_typed_from_json_when_they_parse():
    from awbench.cli.options import engine_args as _engine_args

    pairs = ["language_model_only=true", "swap=4", "ratio=0.5", 'limits={"image": 0}', "name=fp8", "max-num-seqs=3"]
    assert _engine_args(pairs) == {
        "language_model_only": True,
        "swap": 4,
        "ratio": 0.5,
        "limits": {"image": 0},
        "name": "fp8",
        "max_num_seqs": 3,
    }
    result = invoke("infer", "--model", "m", "--engine-arg", "no-equals-sign", "--data", "sample")
    assert refusal(result) == (2, "bad_option") and "--engine-arg" in result.stderr


def test_a_model_behind_an_endpoint_reports_the_prefix_cache_hit_rate(out):
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "total_tokens": 105,
        "prompt_tokens_details": {"cached_tokens": 40},
    }
    answer = "<think>plan</think><predicted_observation>done</predicted_observation>"
    with FakeOpenAIServer(responder=lambda body: Reply(answer, usage=usage)) as server:
        result = invoke(
            "run",
            "--model",
            "world-model",
            "--base-url",
            server.url,
            "--data",
            "sample",
            "--domains",
            "os",
            "--judge",
            "rules",
            "--run-name",
            "m",
            "--output",
            out,
        )
    assert result.exit_code == 0, result.output
    assert "prefix cache: 40.0% of" in result.output
    predictions = [json.loads(line) for line in (out / "m" / "predictions.jsonl").read_text().split("\n") if line]
    assert {p["prediction"] for p in predictions} == {"done"} and all(
        p["usage"]["cached_tokens"] == 40 for p in predictions
    )

"""Messages that fit what was given (issue 26): whose key or endpoint, options a command does not have, what a
rule-judged run cannot give. Each test asserts the exact words."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_openai import FakeOpenAIServer, Reply
from judge_requests import verdict_text
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, UNSCORED, make_run, write_data
from typer.testing import CliRunner

from awbench.cli import app
from awbench.run.store import RunStore

SECRET = "sk-test-messages-SECRET-9042"
VERDICT = verdict_text()


def invoke(*args: object, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})})


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_a_missing_candidate_key_does_not_suggest_the_rule_judge_already_given(no_key, tmp_path):
    result = invoke(
        "run", "--model", "gpt-4o", "--backend", "openai", "--judge", "rules", "--data", "sample", "--output", tmp_path
    )
    assert (result.exit_code, result.stderr) == (
        2,
        "error: the candidate: no API key: set the environment variable OPENAI_API_KEY\n",
    )


def test_a_missing_judge_key_suggests_the_rule_judge(no_key, tmp_path):
    result = invoke("run", "--model", "baseline:oracle", "--data", "sample", "--output", tmp_path)
    assert (result.exit_code, result.stderr) == (
        2,
        "error: the judge: no API key: set the environment variable "
        "OPENAI_API_KEY. For a free offline score without any API, use "
        "--judge rules\n",
    )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())


@pytest.mark.parametrize("party", ["candidate", "judge"])
def test_a_refused_key_names_the_endpoint_that_refused(monkeypatch, tmp_path, party):
    """The endpoint check passes (the listing needs no key on this server), then the first request gets a 401."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    refused = Reply(status=401, error_message="Incorrect API key provided")
    with FakeOpenAIServer(script=[refused] * 100) as server:
        url = f"{server.url}?api-key={SECRET}"  # a key in the URL is never printed
        if party == "candidate":
            args = ["--model", "m", "--backend", "openai", "--base-url", url, "--judge", "rules"]
        else:
            args = ["--model", "baseline:oracle", "--judge-model", "j", "--judge-base-url", url]
        result = invoke("run", *args, "--data", "sample", "--output", tmp_path)
    assert result.exit_code == 2, result.output
    progress = re.compile(r"(infer|judge) \S+: \d+/65 \(\d+%\), 0 failed, 0:00:0\d elapsed")  # the stages' first lines
    assert [line for line in result.stderr.splitlines() if not progress.fullmatch(line)] == [
        f"error: the {party} endpoint {server.url}?api-key=*** refused the request: HTTP 401: "
        f"Incorrect API key provided; retrying cannot help"
    ]
    assert SECRET not in result.output


def test_data_hints_name_no_option_data_info_does_not_have(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    result = invoke("data", "info", "nobody-here/no-such-benchmark")
    assert result.exit_code == 2
    assert "--data" not in result.stderr
    assert result.stderr.endswith(
        "or give instead a local directory of {domain}_test.jsonl files, or `sample` for "
        "the small sample bundled with awbench.\n"
    )


def test_help_shows_no_type_beside_a_flag():
    for args in ([], ["run"], ["leaderboard"]):
        text = invoke(*args, "--help").stdout
        assert "<bool>" not in text, args
    assert "--version" in invoke("--help").stdout


# --------------------------------------------------------------------------- runs judged by rules alone


@pytest.fixture
def results(tmp_path: Path) -> Path:
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    make_run(
        out, "ruled", data, {MCP[0]: 3, MCP[1]: None, SEARCH[0]: 4}, rules={MCP[0]: 1.0, SEARCH[0]: 0.5}, llm=False
    )
    make_run(out, "llm-only", data, {MCP[0]: 3, MCP[1]: None, SEARCH[0]: 4})
    make_run(out, "both", data, {MCP[0]: 3, MCP[1]: None, SEARCH[0]: 4}, rules={MCP[0]: 1.0, SEARCH[0]: 0.5})
    return out


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (
            "ruled",
            "error: --reward needs an LLM judge's evaluation (the rubric, 90% of the reward), which ruled does "
            "not have: add it with `awbench judge ruled --judge llm`\n",
        ),
        (
            "llm-only",
            "error: --reward needs a rule evaluation (the exact match, 10% of the reward), which llm-only does "
            "not have: add it with `awbench judge llm-only --judge rules`\n",
        ),
    ],
)
def test_rewards_need_both_evaluations(results, tmp_path, run, message):
    rewards = tmp_path / "rewards.jsonl"
    before = (results / run / "run.json").read_text()
    result = invoke("score", run, "--output", results, "--reward", rewards, "--failure-policy", "exclude")
    assert (result.exit_code, result.stderr) == (2, message)
    assert not rewards.exists() and (results / run / "run.json").read_text() == before  # nothing changed


def test_rewards_of_a_run_with_both_judges(results, tmp_path):
    rewards = tmp_path / "rewards.jsonl"
    result = invoke("score", "both", "--output", results, "--reward", rewards, "--max-failure-rate", "1")
    rows = [json.loads(line) for line in rewards.read_text().splitlines()]
    assert f"wrote 3 rewards to {rewards}" in result.stdout
    by_key = {row["key"]: row["reward"] for row in rows if row["reward"] is not None}
    as_json = invoke("score", "both", "--output", results, "--reward", rewards, "--format", "json")
    assert as_json.stderr.startswith(f"wrote 3 rewards to {rewards}\n")  # stdout holds the JSON alone
    assert json.loads(as_json.stdout)["judge_id"] == "llm-both"
    assert by_key == {
        MCP[0]: pytest.approx(0.9 * 15 + 2.5),
        MCP[1]: pytest.approx(4.5),
        SEARCH[0]: pytest.approx(0.9 * 20),
    }


def test_a_scoring_option_given_to_score_is_said_to_stay(results):
    result = invoke("score", "llm-only", "--output", results, "--failure-policy", "exclude")
    assert (
        "llm-only: --failure-policy minimum -> exclude, saved in its run.json for every later command (back "
        "with `awbench score llm-only --failure-policy minimum`)\n"
    ) in result.stdout
    assert RunStore(results / "llm-only").read_manifest().config.scoring.failure_policy == "exclude"
    again = invoke("score", "llm-only", "--output", results, "--failure-policy", "exclude")
    assert "saved in its run.json" not in again.stdout  # nothing changed this time
    both = invoke(
        "score",
        "llm-only",
        "--output",
        results,
        "--failure-policy",
        "minimum",
        "--max-failure-rate",
        "1",
        "--format",
        "json",
    )
    assert json.loads(both.stdout)["failure_policy"] == "minimum"  # the note goes to stderr: stdout is the JSON
    assert both.stderr.startswith(
        "llm-only: --failure-policy exclude -> minimum, --max-failure-rate 0.05 -> 1.0, saved in its run.json for "
        "every later command (back with `awbench score llm-only --failure-policy exclude --max-failure-rate 0.05`)\n"
    )


def test_show_dimension_on_a_rule_evaluation_says_it_has_no_dimensions(results):
    result = invoke("show", "ruled", "--output", results, "--worst", "2", "--dimension", "realism")
    assert refusal(result) == (2, "bad_option") and "--dimension needs an LLM judge's evaluation" in result.stderr
    assert invoke("show", "both", "--output", results, "--worst", "2", "--dimension", "realism").exit_code == 0


# --------------------------------------------------------------------------- imported runs


def test_an_imported_run_records_its_run_name_as_the_model_not_the_file_name(results, tmp_path):
    out = results
    exported = invoke("export", "llm-only", "--official", tmp_path / "official", "--output", out)
    assert exported.exit_code == 0, exported.output
    result = invoke("import", tmp_path / "official" / "judged.jsonl", "--run-name", "qwen-official", "--output", out)
    assert result.exit_code == 0, result.output
    assert RunStore(out / "qwen-official").read_manifest().config.model.model == "qwen-official"
    given = invoke(
        "import", tmp_path / "official" / "predictions.jsonl", "--run-name", "p", "--model", "Qwen/Q", "--output", out
    )
    assert given.exit_code == 0 and RunStore(out / "p").read_manifest().config.model.model == "Qwen/Q"
    # an imported evaluation's prompts have no hash: its group says `prompts imported`, never `imported@`
    board = invoke("leaderboard", "--output", out)
    assert "prompts imported ·" in board.stdout and "imported@" not in board.stdout


# --------------------------------------------------------------------------- options a backend does not use

BASELINE = "a baseline calls no model and samples nothing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [
                "--model",
                "m",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--max-model-len",
                "4096",
                "--overlength",
                "truncate-history",
            ],
            "error: --max-model-len, --overlength do not apply to the openai backend (the endpoint's server runs the model "
            "with its own engine settings and context window): leave them out\n",
        ),
        (
            ["--model", "baseline:oracle", "--max-model-len", "2"],
            f"error: --max-model-len does not apply to the baseline backend ({BASELINE}): leave it out\n",
        ),
        (
            ["--model", "baseline:oracle", "--concurrency", "3"],
            f"error: --concurrency does not apply to the baseline backend ({BASELINE}): leave it out\n",
        ),
        (  # issue 36: the sampling options were accepted, recorded and never applied
            ["--model", "baseline:oracle", "--top-p", "0.9", "--stop", "x", "--extra-body", "{}", "--temperature", "0"],
            f"error: --temperature, --top-p, --extra-body, --stop do not apply to the baseline backend ({BASELINE}): "
            "leave them out\n",
        ),
        (
            ["--model", "some/model", "--backend", "vllm", "--request-timeout", "5"],
            "error: --request-timeout does not apply to the vllm backend (they are for an OpenAI-compatible endpoint, "
            "--base-url): leave it out\n",
        ),
        (
            ["--model", "baseline:oracle", "--judge-model", "j", "--judge-engine-arg", "max_model_len=9"],
            "error: --judge-engine-arg does not apply to the openai judge backend (the in-process judge's: "
            "--judge-backend vllm): leave it out\n",
        ),
        (  # issue 36: accepted and recorded, though the rule judge spends nothing
            ["--model", "baseline:oracle", "--judge", "rules", "--max-cost", "5"],
            "error: --max-cost does not apply to --judge rules (an LLM judge's settings; the rule judge is offline and "
            "free): leave it out, or use --judge llm or both\n",
        ),
        (
            ["--model", "baseline:oracle", "--judge-backend", "vllm", "--judge-model", "j", "--judge-tpm", "9"],
            "error: --judge-tpm does not apply to the vllm judge backend (it runs in this process: no endpoint, no "
            "price): leave it out\n",
        ),
        (
            ["--model", "baseline:oracle", "--judge-model", "j", "--judge-batch-tokens", "9"],
            "error: --judge-batch-tokens does not apply to direct judge calls (the Batch API's: --judge-batch): leave it "
            "out\n",
        ),
        (
            ["--model", "baseline:oracle", "--judge-model", "j", "--rule-workers", "2"],
            "error: --rule-workers does not apply to an LLM judge alone (rule scoring only: --judge rules or both): "
            "leave it out\n",
        ),
    ],
)
def test_options_the_backend_does_not_use_are_refused_by_name(tmp_path, args, message):
    result = invoke("run", *args, "--data", "sample", "--output", tmp_path / "results")
    assert (result.exit_code, result.stderr) == (2, message)
    assert not (tmp_path / "results").exists()


# --------------------------------------------------------------------------- --stop and --judge-stop


def test_stop_strings_reach_the_candidate_and_the_judge_requests(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    verdict = (
        '<final_evaluation>\n```json\n{"strengths": [], "weaknesses": [], "scores": {"format": 4, '
        '"factuality": 4, "consistency": 4, "realism": 4, "quality": 4}}\n```\n</final_evaluation>'
    )
    with (
        FakeOpenAIServer(responder=lambda body: Reply("x")) as candidate,
        FakeOpenAIServer(responder=lambda body: Reply(verdict)) as judge,
    ):
        result = invoke(
            "run",
            "--model",
            "base",
            "--base-url",
            candidate.url,
            "--stop",
            "### Turn",
            "--stop",
            "\n\n",
            "--judge-model",
            "j",
            "--judge-base-url",
            judge.url,
            "--judge-stop",
            "</final_evaluation>",
            "--data",
            "sample",
            "--domains",
            "os",
            "--limit",
            "1",
            "--output",
            tmp_path,
        )
    assert result.exit_code == 0, result.output
    assert [body["stop"] for body in candidate.requests] == [["### Turn", "\n\n"]]
    assert [body["stop"] for body in judge.requests] == [["</final_evaluation>"]]
    config = json.loads(next(tmp_path.glob("*/run.json")).read_text())["config"]
    assert (config["model"]["stop"], config["judge"]["stop"]) == (["### Turn", "\n\n"], ["</final_evaluation>"])


def test_without_stop_no_request_has_one_and_judge_ids_stay(monkeypatch, tmp_path):
    from awbench.config import JudgeSettings
    from awbench.judging import llm_judge_id

    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(responder=lambda body: Reply("x")) as candidate:
        result = invoke(
            "run",
            "--model",
            "base",
            "--base-url",
            candidate.url,
            "--judge",
            "rules",
            "--data",
            "sample",
            "--domains",
            "os",
            "--limit",
            "1",
            "--output",
            tmp_path,
        )
    assert result.exit_code in (0, 1), result.output
    assert ["stop" in body for body in candidate.requests] == [False]
    # a judge without stop strings keeps the id it had before the option existed
    assert llm_judge_id(JudgeSettings(), "rubric", "0" * 64) == "gpt-5.2-2025-12-11-rubric-61c0c0"  # as in 0.3.0
    assert llm_judge_id(JudgeSettings(stop=["x"]), "rubric", "0" * 64) != llm_judge_id(
        JudgeSettings(), "rubric", "0" * 64
    )


# --------------------------------------------------------------------------- unscored samples are counted


def test_unscored_samples_are_counted_in_the_leaderboard_and_the_report(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    out = tmp_path / "results"
    grades = {MCP[0]: UNSCORED, MCP[1]: UNSCORED, MCP[2]: None, SEARCH[0]: UNSCORED, SEARCH[1]: UNSCORED}
    make_run(out, "nothing-scored", data, grades)
    board = invoke("leaderboard", "--output", out, "--format", "csv")
    rows = board.stdout.splitlines()
    assert rows[0].split(",")[13:16] == ['"scored"', '"failed"', '"unscored"']  # text quoted, numbers not
    assert rows[1].split(",")[13:16] == ["1", "1", "4"]  # the failed generation scores 0 (policy minimum)
    table = invoke("leaderboard", "--output", out)
    assert "Scored/" in table.stdout and "unscored" in table.stdout and " 1/1/4" in table.stdout
    report = tmp_path / "report.html"
    assert invoke("report", "--output", out, "-o", report, "--no-ci").exit_code in (0, 1)
    html = report.read_text()
    assert '<th class="">Scored / failed / unscored</th>' in html and '<td class="counts">1/1/4</td>' in html


def test_a_judge_added_to_a_capped_run_says_the_cap_it_kept(monkeypatch, tmp_path):
    """`awbench judge RUN` keeps the run's --max-cost: a model without a known price is refused naming the cap's
    value and where it may come from, although this command line gave no --max-cost."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT)) as server:
        made = invoke("run", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--limit", "1",
                      "--judge-base-url", server.url, "--max-cost", "5", "--run-name", "capped", "--output", tmp_path)  # fmt: skip
    assert made.exit_code == 0, made.output
    with FakeOpenAIServer() as server:
        result = invoke("judge", "capped", "--output", tmp_path, "--judge-model", "my-judge",
                        "--judge-base-url", server.url)  # fmt: skip
    assert refusal(result) == (2, "cost_unknown")
    assert (
        "--max-cost 5 (given, or kept from the run's judge settings)" in result.stderr and "'my-judge'" in result.stderr
    )
    assert server.requests == []


def test_retries_are_counted_per_endpoint_and_kept_in_the_records(monkeypatch, tmp_path):
    """Issue 36: against a server answering some requests with HTTP 500 the run ended "0 failed", its retries never
    mentioned, and prediction records kept no attempt count. Now the end of the command says how many calls were
    sent again and after what, per endpoint, and each record keeps its attempts (the judge's verdicts too)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    answered: dict[str, int] = {}

    def flaky(body: dict) -> Reply:
        """The first call for every third sample fails with a 500; a verdict's first call, for every fourth."""
        text = json.dumps(body["messages"])
        seen = answered[text] = answered.get(text, 0) + 1
        judging = "final_evaluation" in text
        if seen == 1 and len(answered) % (4 if judging else 3) == 0:
            return Reply(status=500, error_message="internal error")
        return Reply(VERDICT if judging else "a prediction")

    with FakeOpenAIServer(responder=flaky) as candidate, FakeOpenAIServer(responder=flaky) as judge:
        result = invoke(
            "run", "--model", "m", "--base-url", candidate.url, "--judge-model", "j", "--judge-base-url", judge.url,
            "--data", "sample", "--domains", "os", "--concurrency", "1", "--judge-concurrency", "1",
            "--output", tmp_path, "--run-name", "r",
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    store = RunStore(tmp_path / "r")
    attempts = [p.attempts for p in store.predictions.load().values()]
    (evaluation,) = store.evaluations()
    verdicts = [v.attempts for j in evaluation.judgments.load().values() for v in j.verdicts]
    assert attempts.count(2) == len(candidate.requests) - len(attempts) > 0 and set(attempts) == {1, 2}
    assert verdicts.count(2) == len(judge.requests) - len(verdicts) > 0 and set(verdicts) == {1, 2}
    retried = {line for line in result.stderr.splitlines() if line.startswith("retried: ")}

    def retries(n: int) -> str:
        return f"{n} {'retry' if n == 1 else 'retries'} ({n} after HTTP 500)"

    assert retried == {
        f"retried: {candidate.url}: {retries(attempts.count(2))}",
        f"retried: {judge.url}: {retries(verdicts.count(2))}",
    }
    # a timeout is named as such
    with FakeOpenAIServer(script=[Reply("slow", delay_s=1.0)], responder=flaky) as slow:
        args = ["infer", "--model", "m", "--base-url", slow.url, "--request-timeout", "0.3", "--data", "sample"]
        timed = invoke(*args, "--domains", "os", "--limit", "1", "--output", tmp_path, "--run-name", "t")
    assert timed.exit_code == 0, timed.output
    assert f"retried: {slow.url}: 1 retry (1 after a timeout)" in timed.stderr.splitlines()


# --------------------------------------------------------------------------- the one rule, as a matrix
# Issue 36: every option group against every backend and judge. A value per option (a flag: none); the groups as
# the rule has them; the reason expected for each (party, group) it refuses, written out here (not read from
# awbench.config), and no entry where the party uses the group: then it must not be refused.

VALUES: dict[str, str | None] = {
    "--prompt-cache-key": None,
    "--base-url": "http://127.0.0.1:9/v1",
    "--api-key-env": "SOME_KEY",
    "--concurrency": "2",
    "--request-timeout": "5",
    "--max-retries": "1",
    "--tpm": "1000",
    "--rpm": "10",
    "--check-timeout": "5",
    "--max-model-len": "4096",
    "--engine-arg": "batch_size=8",
    "--overlength": "truncate-history",
    "--model-arg": "depth=1",
    "--temperature": "0.1",
    "--max-tokens": "64",
    "--top-p": "0.9",
    "--stop": "x",
    "--extra-body": "{}",
    "--seed": "3",
    "--generations": "2",
    "--judge-temperature": "0",
    "--judge-max-tokens": "9",
    "--judge-reasoning-effort": "low",
    "--judge-extra-body": "{}",
    "--judge-stop": "x",
    "--judge-structured": None,
    "--judge-samples": "2",
    "--judge-max-retries": "1",
    "--judge-base-url": "http://127.0.0.1:9/v1",
    "--judge-api-key-env": "SOME_KEY",
    "--judge-request-timeout": "9",
    "--judge-concurrency": "2",
    "--judge-tpm": "1000",
    "--judge-rpm": "10",
    "--judge-engine-arg": "max_model_len=9",
    "--judge-price-in": "1",
    "--max-cost": "5",
    "--judge-batch-fallback": "direct",
    "--judge-batch-poll-interval": "1",
    "--judge-batch-tokens": "99",
    "--rule-workers": "0",
    "--failure-policy": "exclude",
}
MODEL_GROUPS = {
    "endpoint": [
        "--base-url", "--api-key-env", "--request-timeout", "--max-retries", "--tpm", "--rpm", "--check-timeout",
        "--prompt-cache-key",
    ],
    "concurrency": ["--concurrency"],
    "engine": ["--max-model-len", "--engine-arg", "--overlength"],
    "python": ["--model-arg"],
    "sampling": ["--temperature", "--max-tokens"],
    "sampling on the wire": ["--top-p", "--stop", "--extra-body"],
    "seed": ["--seed"],
    "generations": ["--generations"],
}  # fmt: skip
ENDPOINT_ONLY = "they are for an OpenAI-compatible endpoint, --base-url"
PYTHON_ARGS = "they are a Python world model's class arguments, --model python:MODULE:CLASS"
MODEL_WHY = {
    ("openai", "engine"): "the endpoint's server runs the model with its own engine settings and context window",
    ("openai", "python"): PYTHON_ARGS,
    ("vllm", "endpoint"): ENDPOINT_ONLY,
    ("vllm", "concurrency"): ENDPOINT_ONLY,
    ("vllm", "python"): PYTHON_ARGS,
    **{("baseline", g): BASELINE for g in ("endpoint", "concurrency", "engine", "python", "sampling")},
    ("baseline", "sampling on the wire"): BASELINE,
    ("baseline", "generations"): "a baseline is deterministic: every generation would be the same",
    ("python", "endpoint"): "a Python world model runs in this process: there is no endpoint",
    ("python", "engine"): "a Python world model runs in this process, not in vLLM's engine",
    ("python", "sampling on the wire"): "a Python world model is given only seed, max_tokens and temperature",
}
LOCAL = "http://127.0.0.1:9/v1"
MODELS = {"openai": "m", "vllm": "some/model", "baseline": "baseline:oracle", "python": "python:wm:predict"}


def _given(option: str) -> list[str]:
    return [option, *filter(None, [VALUES[option]])]


def _one_rule(result, option: str, why: str | None, refused_by: str) -> None:
    """Refused with `why` by `refused_by` when given, else not refused by the rule (the command may still stop
    for another reason: vLLM not installed, no such module)."""
    if why is None:
        assert refusal(result)[1] != "bad_option" and "does not apply" not in result.stderr, (option, result.output)
    else:
        assert refusal(result) == (2, "bad_option"), (option, result.output)
        assert result.stderr.startswith(f"error: {option} does not apply to {refused_by} ({why}): leave it out"), (
            option,
            result.stderr,
        )


@pytest.mark.parametrize("group", sorted(MODEL_GROUPS))
@pytest.mark.parametrize("backend", sorted(MODELS))
def test_the_one_rule_for_every_candidate_option_group_and_backend(monkeypatch, tmp_path, backend, group):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    why = MODEL_WHY.get((backend, group))
    for option in MODEL_GROUPS[group]:
        model = ["--model", MODELS[backend], "--backend", backend]
        if backend == "openai" and option != "--base-url":
            model += ["--base-url", LOCAL]
        result = invoke(
            "run", *model, *_given(option), "--judge", "rules", "--data", "sample", "--dry-run",
            "--output", tmp_path / "results",
        )  # fmt: skip
        _one_rule(result, option, why, f"the {backend} backend")
        if why is None and backend in ("openai", "baseline"):  # nothing else stops these
            assert result.exit_code == 0 and "Nothing was spent." in result.stdout, (option, result.output)
    assert not (tmp_path / "results").exists()


JUDGE_GROUPS = {
    "LLM judge": [
        "--judge-temperature", "--judge-max-tokens", "--judge-reasoning-effort", "--judge-extra-body", "--judge-stop",
        "--judge-structured", "--judge-samples", "--judge-max-retries",
    ],
    "endpoint": ["--judge-api-key-env", "--judge-request-timeout"],
    "pacing": ["--judge-concurrency", "--judge-tpm", "--judge-rpm"],
    "engine": ["--judge-engine-arg"],
    "cost": ["--judge-price-in", "--max-cost"],
    "batch": ["--judge-batch-fallback", "--judge-batch-poll-interval", "--judge-batch-tokens"],
    "rules": ["--rule-workers"],
    "both parties": ["--check-timeout", "--prompt-cache-key"],
    "scoring": ["--failure-policy"],
}  # fmt: skip
JUDGES = {
    "rules": ["--judge", "rules"],
    "llm": ["--judge-model", "j", "--judge-base-url", LOCAL],
    "batch": ["--judge-model", "j", "--judge-batch"],
    "batch, re-asks direct": ["--judge-model", "j", "--judge-batch", "--judge-batch-fallback", "direct"],
    "vllm": ["--judge-model", "some/judge", "--judge-backend", "vllm"],
}
RULES = "--judge rules (an LLM judge's settings; the rule judge is offline and free)"
IN_PROCESS = "the vllm judge backend (it runs in this process: no endpoint, no price)"
DIRECT = "direct judge calls (the Batch API's: --judge-batch)"
BATCHED = (
    "--judge-batch (the Batch API paces the batches; these pace verdicts sent directly: --judge-batch-fallback direct)"
)
ENDPOINT_JUDGE = "the openai judge backend (the in-process judge's: --judge-backend vllm)"
ALONE = "an LLM judge alone (rule scoring only: --judge rules or both)"
BASELINE_BACKEND = f"the baseline backend ({BASELINE})"  # the candidate's side names it: neither party uses it
JUDGE_WHY = {
    **{("rules", g): RULES for g in ("LLM judge", "endpoint", "pacing", "engine", "cost", "batch")},
    ("rules", "both parties"): BASELINE_BACKEND,
    **{("vllm", g): IN_PROCESS for g in ("endpoint", "pacing", "cost", "batch")},
    ("vllm", "both parties"): BASELINE_BACKEND,
    **{(j, "engine"): ENDPOINT_JUDGE for j in ("llm", "batch", "batch, re-asks direct")},
    ("llm", "batch"): DIRECT,
    ("batch", "pacing"): BATCHED,
    **{(j, "rules"): ALONE for j in ("llm", "batch", "batch, re-asks direct", "vllm")},
}


@pytest.mark.parametrize("group", sorted(JUDGE_GROUPS))
@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_the_one_rule_for_every_judge_option_group_and_judge(monkeypatch, tmp_path, judge, group):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    why = JUDGE_WHY.get((judge, group))
    for option in JUDGE_GROUPS[group]:
        if option in JUDGES[judge]:
            continue  # the judge's own choice (--judge-batch-fallback direct)
        priced = ["--judge-price-in", "1", "--judge-price-out", "2"] if option == "--max-cost" and not why else []
        result = invoke(
            "run", "--model", "baseline:oracle", *JUDGES[judge], *_given(option), *priced, "--data", "sample",
            "--dry-run", "--output", tmp_path / "results",
        )  # fmt: skip
        refused_by, reason = why.rsplit(" (", 1) if why else ("", None)
        _one_rule(result, option, reason and reason.removesuffix(")"), refused_by)
        if why is None and judge != "vllm":  # nothing else stops these
            assert result.exit_code == 0 and "Nothing was spent." in result.stdout, (option, result.output)
    assert not (tmp_path / "results").exists()


SHARED = ("--check-timeout", "5", "--prompt-cache-key")  # each one option for the candidate and the judge alike


@pytest.mark.parametrize(
    ("parties", "refused_by"),
    [
        (["--model", "baseline:oracle", "--judge-model", "m", "--judge-base-url", LOCAL], None),  # the judge's
        (["--model", "m", "--base-url", LOCAL, "--judge", "rules"], None),  # the candidate's
        (["--model", "baseline:oracle", "--judge", "rules"], f"the baseline backend ({BASELINE})"),
        (
            ["--model", "some/model", "--backend", "vllm", "--judge-backend", "vllm", "--judge-model", "m"],
            "the vllm backend (they are for an OpenAI-compatible endpoint, --base-url)",
        ),
    ],
)
def test_an_option_of_both_parties_is_refused_only_when_neither_uses_it(monkeypatch, tmp_path, parties, refused_by):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    result = invoke("run", *parties, *SHARED, "--data", "sample", "--dry-run", "--output", tmp_path / "results")
    if refused_by is None:
        assert result.exit_code == 0 and "Nothing was spent." in result.stdout, result.output
    else:
        assert (result.exit_code, result.stderr) == (
            2,
            f"error: --check-timeout, --prompt-cache-key do not apply to {refused_by}: leave them out\n",
        )
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("user", ["judge", "candidate"])
def test_an_option_of_both_parties_is_recorded_only_by_the_party_that_uses_it(monkeypatch, tmp_path, user):
    """run.json claims a setting only where it was applied: a baseline never checked an endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT if user == "judge" else "x")) as server:
        parties = {
            "judge": ["--model", "baseline:oracle", "--judge-model", "m", "--judge-base-url", server.url],
            "candidate": ["--model", "m", "--base-url", server.url, "--judge", "rules"],
        }[user]
        result = invoke("run", *parties, *SHARED, "--data", "sample", "--domains", "os", "--output", tmp_path)
    assert result.exit_code in (0, 1), result.output
    config = json.loads(next(tmp_path.glob("*/run.json")).read_text())["config"]
    applied = {"check_timeout": 5.0, "prompt_cache_key": True}
    not_applied = {"check_timeout": None, "prompt_cache_key": None}
    recorded = {party: {f: config[party][f] for f in applied} for party in ("model", "judge")}
    other = "model" if user == "judge" else "judge"
    assert recorded == {{"judge": "judge", "candidate": "model"}[user]: applied, other: not_applied}


def test_a_cap_on_a_local_judge_without_a_price_says_to_leave_it_out(monkeypatch, tmp_path):
    """Issue 36: `--max-cost` with a judge on this machine demanded list prices it cannot have."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    url = "http://127.0.0.1:9/v1"
    result = invoke("run", "--model", "baseline:oracle", "--judge-model", "gemma-3-270m", "--judge-base-url", url,
                    "--max-cost", "1", "--data", "sample", "--output", tmp_path)  # fmt: skip
    assert refusal(result) == (2, "cost_unknown")
    assert result.stderr == (
        "error: --max-cost 1 (given, or kept from the run's judge settings) caps spend at a price, and judge model "
        f"'gemma-3-270m' on {url} has none: leave --max-cost out, or give what its calls cost with --judge-price-in "
        "and --judge-price-out (USD per million tokens)\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--judge", "rule"], "--judge: 'rule' is not one of 'llm', 'rules', 'both'; did you mean 'rules'?"),
        (
            ["run", "--backend", "openia"],
            "--backend: 'openia' is not one of 'baseline', 'openai', 'vllm', 'python'; did you mean 'openai'?",
        ),
        (
            ["leaderboard", "--format", "jsn"],
            "--format: 'jsn' is not one of 'table', 'markdown', 'csv', 'json', 'html'; did you mean 'json'?",
        ),
    ],
)
def test_a_misspelt_choice_gets_the_closest(tmp_path, args, message):
    """Issue 36: `--judge rule` did not suggest `rules`."""
    command, *rest = args
    extra = ["--model", "m", "--data", "sample"] if command == "run" else []
    result = invoke(command, *rest, *extra, "--output", tmp_path)
    assert (result.exit_code, result.stderr) == (2, f"error: {message}\n")


def test_a_key_given_as_the_name_of_its_variable_is_not_printed_by_print_config():
    """Issue 36: a key pasted as --api-key-env was echoed by --print-config."""
    key = "sk-proj-" + "q7" * 20
    result = invoke(
        "run", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env", key, "--print-config"
    )
    assert result.exit_code == 0 and key not in result.output
    assert 'api_key_env = "***"' in result.stdout.splitlines()


def test_compare_names_where_the_judge_kind_came_from(results):
    """Issue 36: `compare A B` said "B has no judge 'llm'", a word the user never typed."""
    result = invoke("compare", "llm-only", "ruled", "--output", results)
    assert result.exit_code == 2
    assert "has no judge 'llm'" not in result.stderr
    assert result.stderr.startswith("error: ruled has no LLM judge's evaluation, as llm-only's primary judge (")
    assert result.stderr.endswith("Give --judge to compare evaluations of one kind both runs have\n")


# --------------------------------------------------------------------------- typos of options and commands


@pytest.mark.parametrize(
    ("args", "message", "key"),
    [
        (["run", "--domian", "os"], "no such option: --domian; did you mean --domains?", "bad_usage"),
        (["show", "RUN", "--falied"], "no such option: --falied; did you mean --failed or --flagged?", "bad_usage"),
        (["--bogus"], "no such option: --bogus", "bad_usage"),
        (["lss"], "no such command 'lss'; did you mean 'ls'?", "no_such_command"),
        (["data", "valdate"], "no such command 'valdate'; did you mean 'validate'?", "no_such_command"),
        (["show"], "missing argument RUN", "bad_usage"),  # as --help names it, never `{run}`
    ],
)
def test_a_typo_of_an_option_or_a_command_is_one_error_line_with_the_closest_names(args, message, key):
    """Issue 36: the parser's refusals were click's five-line usage box; every refusal is one `error:` line."""
    result = invoke(*args)
    assert refusal(result) == (2, key)
    assert result.stderr == f"error: {message}\n" and result.stdout == ""


def test_a_group_alone_still_shows_its_help():
    result = invoke("data")
    assert result.exit_code == 2 and "validate" in result.output and "error:" not in result.output


# --------------------------------------------------------------------------- a run stopped by --max-cost


def test_a_run_stopped_by_the_cap_prints_its_partial_scores_and_lists_every_sample_with_its_state(
    monkeypatch, tmp_path
):
    """Issue 36: the stopped run printed nothing on stdout, its inference progress stayed at 0 though some were
    predicted, and `ls RUN` left out the samples never predicted. The candidate is slow, the judge priced."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with FakeOpenAIServer(
        responder=lambda body: Reply("obs", delay_s=0.3) if body["model"] == "m" else Reply(VERDICT)
    ) as server:
        result = invoke(
            "run", "--model", "m", "--base-url", server.url, "--concurrency", "2",
            "--judge-model", "j", "--judge-base-url", server.url, "--judge-price-in", "1000",
            "--judge-price-out", "1000", "--judge-max-tokens", "1500", "--max-cost", "10",
            "--data", "sample", "--domains", "os", "--output", tmp_path, "--run-name", "capped",
        )  # fmt: skip
    assert refusal(result) == (1, "budget_exhausted")
    run_dir = tmp_path / "capped"
    predicted = {json.loads(line)["key"] for line in (run_dir / "predictions.jsonl").read_text().splitlines()}
    scores = json.loads((run_dir / "scores.json").read_text())
    judged, selected = scores["completeness"]["judged"], scores["completeness"]["selected"]
    assert 0 < judged < len(predicted) < selected == 8
    # stdout: the partial scores table, as at any command's end; stderr: the truth about what waits
    assert "pending" in result.stdout and f"run saved in {run_dir}" in result.stdout
    assert f"{selected - judged} not judged yet (stopped by --max-cost)" in result.stderr
    assert "with a higher --max-cost;" in result.stderr and "if the cap stopped it" not in result.stderr
    last_infer = [line for line in result.stderr.splitlines() if line.startswith("infer m: ")][-1]
    assert last_infer.startswith(f"infer m: {len(predicted)}/8 ")
    # every sample of the run, the never-predicted ones pending
    listed = invoke("ls", "capped", "--output", tmp_path, "--format", "json")
    statuses = {s["key"]: s["status"] for s in json.loads(listed.stdout)["samples"]}
    assert len(statuses) == selected and {k for k, s in statuses.items() if s != "pending"} == predicted
    assert sum(s == "scored" for s in statuses.values()) == judged


def test_the_advice_to_finish_a_run_knows_how_it_was_made_and_whether_the_cap_stopped_it(monkeypatch, tmp_path):
    """Issue 36: a run `infer` made was told to finish with "the same `awbench run` command", and a run the cap
    stopped "with a higher --max-cost if the cap stopped it"."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    made = invoke(
        "infer", "--model", "baseline:oracle", "--data", "sample", "--domains", "os", "--output", tmp_path,
        "--run-name", "inferred",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert json.loads((tmp_path / "inferred" / "run.json").read_text())["made_by"] == "infer"
    with FakeOpenAIServer(responder=lambda body: Reply(VERDICT)) as server:
        judged = invoke(
            "judge", "inferred", "--output", tmp_path, "--judge-model", "j", "--judge-base-url", server.url,
            "--judge-price-in", "1000", "--judge-price-out", "1000", "--judge-max-tokens", "1500",
            "--judge-concurrency", "1", "--max-cost", "5",
        )  # fmt: skip
    assert refusal(judged) == (1, "budget_exhausted")
    board = invoke("leaderboard", "--output", tmp_path)
    advice = f"finish it with `awbench judge {tmp_path / 'inferred'}` with a higher --max-cost; `awbench score`"
    assert advice in board.stderr.replace("\n", " ") and "`awbench run`" not in board.stderr, board.stderr


def test_a_baseline_far_from_every_name_lists_them_all(tmp_path):
    result = invoke("run", "--model", "baseline:xyz", "--judge", "rules", "--data", "sample", "--output", tmp_path)
    assert (result.exit_code, result.stderr) == (
        2,
        "error: unknown baseline 'baseline:xyz'; choose one of: baseline:oracle, baseline:last-observation, "
        "baseline:empty\n",
    )


def test_turing_without_a_judge_or_a_test_to_resume_says_how_to_start_one(no_key, tmp_path):
    """Issue 36: it said "no API key" for a judge the user never asked for."""
    made = invoke("infer", "--model", "baseline:oracle", "--data", "sample", "--run-name", "r", "--output", tmp_path)
    assert made.exit_code == 0, made.output
    result = invoke("turing", "r", "--output", tmp_path)
    assert refusal(result) == (2, "no_turing_test")
    assert result.stderr == "error: no Turing test of r yet: run `awbench turing r --judge-model ...`\n"


def test_python_dash_m_awbench_runs_the_command_line():
    import subprocess
    import sys

    import awbench

    done = subprocess.run(
        [sys.executable, "-m", "awbench", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout.startswith(f"awbench {awbench.__version__}"), done.stderr) == (0, True, "")


def test_a_missing_score_is_marked_as_every_other_table_marks_it(tmp_path):
    """Issue 36: `score`'s tables showed `-` where `ls`, `show` and `leaderboard` show `–`."""
    result = invoke(
        "run", "--model", "baseline:empty", "--judge", "rules", "--failure-policy", "exclude", "--data", "sample",
        "--domains", "os", "--output", tmp_path,
    )  # fmt: skip
    (os_row,) = [line for line in result.stdout.splitlines() if line.startswith("│ OS ")]
    assert os_row.split("│")[1:-1][-1].strip() == "–"

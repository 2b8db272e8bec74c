"""AgentWorldBench in inspect_ai: the real inspect_ai, its `openai/...` provider pointed at local servers (the
candidate and the judge), on a few samples of the bundled sample. The scores inspect reports equal those of
awbench's own run of the same answers, and `awbench import` makes the same run from the log."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAIServer, Reply
from reference_checkout import write_checkout
from refusals import refusal
from typer.testing import CliRunner

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig
from awbench.domains import DIMENSIONS, DOMAINS

if os.environ.get("AWBENCH_REQUIRE_INSPECT") == "1":
    import inspect_ai
else:
    inspect_ai = pytest.importorskip(
        "inspect_ai", reason="inspect_ai is not installed (pip install '.[inspect]'; AWBENCH_REQUIRE_INSPECT=1 fails)"
    )

# after the skip: these import inspect_ai
from inspect_ai.log import read_eval_log, write_eval_log

from awbench.cli import app
from awbench.interop.inspect_task import agentworldbench
from awbench.run import pipeline
from awbench.run.store import RunStore

LIMIT = 1  # per domain: 7 samples
# inspect's openai provider sends a model name it does not know to the Responses API; the servers here, like
# vLLM's and SGLang's, answer chat completions
CHAT_COMPLETIONS = {"responses_api": False}


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def candidate(body: dict) -> Reply:
    """A world model whose answer depends only on the messages: a quarter of them empty (failed generations)."""
    action = body["messages"][-1]["content"]
    if digest(action)[0] % 4 == 0:
        return Reply("")
    return Reply(f"<think>the command is clear</think>\n**Environment Observation:**\nran {action[:60]!r}")


def judge(body: dict) -> Reply:
    """A judge whose verdict depends only on the prompt it is sent: the same prompt, the same verdict."""
    prompt = "".join(m["content"] for m in body["messages"])
    code = digest(prompt)
    scores = {d: 1 + code[i] % 5 for i, d in enumerate(DIMENSIONS)}
    return Reply(json.dumps({"strengths": ["plausible"], "weaknesses": ["made up"], "scores": scores}))


@pytest.fixture
def servers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "dummy-key")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServer(responder=candidate) as model, FakeOpenAIServer(responder=judge) as judge_server:
        yield model, judge_server


def inspect_eval(model_url: str, log_dir: Path, **task_args):
    task = agentworldbench(data="sample", limit=LIMIT, **task_args)
    [log] = inspect_ai.eval(
        task,
        model="openai/candidate",
        model_base_url=model_url,
        model_args=CHAT_COMPLETIONS,
        log_dir=str(log_dir),
        display="none",
        max_retries=1,
        timeout=30,
    )
    assert log.status == "success", log.error
    return log


def awbench_run(tmp_path: Path, model_url: str, judge_settings: JudgeSettings):
    config = RunConfig(
        run_name="own",
        output=tmp_path / "results",
        data=DataSettings(source="sample", limit=LIMIT),
        model=ModelSettings(model="candidate", backend="openai", base_urls=[model_url]),
        judge=judge_settings,
    )
    return asyncio.run(pipeline.run(config)).scores


def metrics(log) -> dict[str, float]:
    [score] = log.results.scores
    return {name: m.value for name, m in score.metrics.items()}


def test_llm_judge_scores_equal_awbench_own_run_and_the_log_imports(servers, tmp_path):
    model, judge_server = servers
    log = inspect_eval(
        model.url,
        tmp_path / "logs",
        judge_model="openai/judge",
        judge_base_url=judge_server.url,
        judge_model_args=CHAT_COMPLETIONS,
        judge_max_retries=1,
    )
    judge_calls = len(judge_server.requests)
    own = awbench_run(tmp_path, model.url, JudgeSettings(model="judge", base_url=judge_server.url, max_retries=1))

    # awbench's run sent the judge exactly the texts inspect's scorer sent (inspect's openai provider sends the
    # system prompt as the "developer" message to a model it takes for a reasoning model)
    assert judge_calls == len(judge_server.requests) - judge_calls > 0
    sent = [json.dumps([m["content"] for m in r["messages"]]) for r in judge_server.requests]
    assert sorted(sent[:judge_calls]) == sorted(sent[judge_calls:])
    expected = {"overall": own.overall, **{d: row.score for d, row in own.domains.items()}}
    assert set(expected) == {"overall", *DOMAINS}
    expected["scored"] = sum(row.scored for row in own.domains.values())
    assert metrics(log) == pytest.approx(expected)
    assert (
        sum(row.failed for row in own.domains.values()) > 0
    )  # the empty answers are in the numbers, scored 0, in both

    # each sample shows its verdict
    samples = {s.id: s for s in log.samples}
    assert len(samples) == 7
    for sample in samples.values():
        [score] = sample.scores.values()
        prediction = score.metadata["prediction"]
        if prediction["status"] == "ok":
            assert score.explanation.startswith("score ")
            assert "strength: plausible" in score.explanation
            assert score.value == score.metadata["judgment"]["score"]
        else:
            assert score.explanation.startswith("failed generation (empty)")
            assert score.value == 0.0

    # the log imports as a run whose scores are awbench's own
    [log_file] = (tmp_path / "logs").glob("*.eval")
    result = CliRunner().invoke(
        app, ["import", str(log_file), "--run-name", "from-inspect", "--output", str(tmp_path / "results")]
    )
    assert result.exit_code == 0, result.output
    imported = RunStore(tmp_path / "results" / "from-inspect")
    scores = json.loads((imported.path / "scores.json").read_text())
    assert scores["overall"] == pytest.approx(own.overall)
    assert {d: row["score"] for d, row in scores["domains"].items()} == pytest.approx(
        {d: row.score for d, row in own.domains.items()}
    )
    manifest = imported.read_manifest()
    assert manifest.config.model.model == "openai/candidate"
    assert manifest.primary_judge == RunStore(tmp_path / "results" / "own").read_manifest().primary_judge

    # ranked beside awbench's own run
    board = CliRunner().invoke(app, ["leaderboard", "--output", str(tmp_path / "results"), "--format", "json"])
    assert board.exit_code == 0, board.output
    [group] = json.loads(board.stdout)["groups"]  # one group: the same judge, prompts and data
    ranks = {row["run"]: row["rank"] for row in group["rows"]}
    assert set(ranks) == {"own", "from-inspect"}
    assert None not in ranks.values()
    compared = CliRunner().invoke(
        app, ["compare", "own", "from-inspect", "--output", str(tmp_path / "results"), "--format", "json"]
    )
    assert compared.exit_code == 0, compared.output
    overall = next(row for row in json.loads(compared.stdout)["rows"] if row["name"] == "overall")
    assert (overall["diff"], overall["wins"], overall["losses"]) == (0.0, 0, 0)


def test_rule_judge_scores_equal_awbench_own_run(servers, tmp_path):
    model, _ = servers
    log = inspect_eval(model.url, tmp_path / "logs", judge="rules", domains="terminal,os")
    own = awbench_run(tmp_path, model.url, JudgeSettings(kind="rules"))
    expected = {d: own.domains[d].score for d in ("terminal", "os")}  # no Overall: two domains of seven
    expected["scored"] = own.domains["terminal"].scored + own.domains["os"].scored
    assert metrics(log) == pytest.approx(expected)
    for sample in log.samples:
        [score] = sample.scores.values()
        assert score.explanation.startswith(("rule score ", "failed generation"))


def test_json_log_imports_and_bad_logs_exit_2(servers, tmp_path):
    model, _ = servers
    log = inspect_eval(model.url, tmp_path / "logs", judge="rules", domains="os")
    json_log = tmp_path / "log.json"
    write_eval_log(log, str(json_log), format="json")
    runner = CliRunner()
    output = str(tmp_path / "results")
    ok = runner.invoke(app, ["import", str(json_log), "--run-name", "json-log", "--output", output])
    assert ok.exit_code == 0, ok.output
    assert "imported 1 predictions and 1 judgments" in ok.output

    not_a_log = tmp_path / "broken.eval"
    not_a_log.write_bytes(b"not a zip")
    bad = runner.invoke(app, ["import", str(not_a_log), "--run-name", "bad", "--output", output])
    assert bad.exit_code == 2
    assert f"{not_a_log}: not an inspect_ai log" in bad.output
    assert "Traceback" not in bad.output
    assert not (tmp_path / "results" / "bad").exists()

    # a log whose score metadata was tampered with: the sample and field are named
    document = json.loads(json_log.read_text())
    [sample] = document["samples"]
    [score] = sample["scores"].values()
    score["metadata"]["prediction"]["status"] = "splendid"
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(document))
    bad = runner.invoke(app, ["import", str(tampered), "--run-name", "bad", "--output", output])
    assert bad.exit_code == 2
    assert f"{tampered}: sample {sample['id']}: prediction.status" in bad.output
    assert not (tmp_path / "results" / "bad").exists()

    # the log of another task, and one without samples
    other = json.loads(json_log.read_text())
    other["eval"]["task"] = "inspect_evals/gsm8k"
    other["eval"]["metadata"] = None
    (tmp_path / "other.json").write_text(json.dumps(other))
    bad = runner.invoke(app, ["import", str(tmp_path / "other.json"), "--run-name", "bad", "--output", output])
    assert bad.exit_code == 2
    assert "a log of the inspect task 'inspect_evals/gsm8k', not of awbench/agentworldbench" in bad.output
    empty = json.loads(json_log.read_text())
    empty["samples"] = []
    (tmp_path / "empty.json").write_text(json.dumps(empty))
    bad = runner.invoke(app, ["import", str(tmp_path / "empty.json"), "--run-name", "bad", "--output", output])
    assert bad.exit_code == 2
    assert "the log holds no samples" in bad.output
    assert not (tmp_path / "results" / "bad").exists()


def test_an_archive_that_is_no_log_is_refused(tmp_path):
    log = tmp_path / "other.eval"
    with zipfile.ZipFile(log, "w") as archive:
        archive.writestr("header.json", "{}")
    result = CliRunner().invoke(app, ["import", str(log), "--run-name", "x", "--output", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_inspect_eval_finds_the_task_by_its_entry_point(servers, tmp_path):
    """The README's command, `inspect eval awbench/agentworldbench`, in a fresh process that has awbench only as
    an editable install of this checkout declares it (its entry points from pyproject.toml): inspect finds the
    task through the `inspect_ai` entry point, with the README's `-T` options."""
    model, judge_server = servers
    checkout = Path(__file__).resolve().parents[2]
    if not (checkout / "pyproject.toml").is_file():
        pytest.skip("needs the source checkout's pyproject.toml")
    declared = tomllib.loads((checkout / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    assert declared == {"awbench": "awbench.interop.inspect_task"}
    site = tmp_path / "site"
    info = site / "awbench-0.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: awbench\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text("[inspect_ai]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    (info / "direct_url.json").write_text(json.dumps({"url": checkout.as_uri(), "dir_info": {"editable": True}}))
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{checkout}", "OPENAI_API_KEY": "dummy-key"}
    command = [sys.executable, "-m", "inspect_ai", "eval", "awbench/agentworldbench", "--model", "openai/candidate"]
    command += ["-M", "responses_api=false", "--model-base-url", model.url, "--log-dir", str(tmp_path / "logs")]
    command += ["-T", "data=sample", "-T", "domains=os,web", "-T", "limit=1", "--display", "none"]
    command += ["-T", "judge_model=openai/judge", "-T", f"judge_base_url={judge_server.url}"]
    command += ["-T", "judge_model_args={responses_api: false}"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    [log_file] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.eval.task == "awbench/agentworldbench"
    assert sorted(s.id for s in log.samples) == ["os/2/1", "web/6/1"]
    assert set(metrics(log)) == {"os", "web", "scored"}  # no Overall: two domains of seven
    for sample in log.samples:
        [score] = sample.scores.values()
        assert score.explanation.startswith(("score ", "failed generation"))
    assert judge_server.requests
    assert len(judge_server.requests) == sum(
        s.scores["awbench_judge"].explanation.startswith("score ") for s in log.samples
    )


def test_reference_protocol_gives_awbench_reference_numbers(servers, tmp_path):
    """judge_prompts=CHECKOUT: the reference's prompts and protocol; the imported run has the reference reading
    (what eval.py prints) equal to awbench's own run under the same protocol."""
    model, judge_server = servers
    checkout = write_checkout(tmp_path / "Qwen-AgentWorld")
    log = inspect_eval(
        model.url,
        tmp_path / "logs",
        domains="os,web,terminal",
        judge_model="openai/judge",
        judge_base_url=judge_server.url,
        judge_model_args=CHAT_COMPLETIONS,
        judge_prompts=str(checkout),
        judge_max_retries=1,
    )
    settings = JudgeSettings(model="judge", base_url=judge_server.url, max_retries=1, prompts=str(checkout))
    config = RunConfig(
        run_name="own",
        output=tmp_path / "results",
        data=DataSettings(source="sample", limit=LIMIT, domains=["os", "web", "terminal"]),
        model=ModelSettings(model="candidate", backend="openai", base_urls=[model.url]),
        judge=settings,
    )
    own = asyncio.run(pipeline.run(config)).scores
    assert own.reference is not None
    scored = sum(r.scored for r in own.domains.values())
    assert own.overall is None
    assert metrics(log) == pytest.approx({**{d: r.score for d, r in own.domains.items()}, "scored": scored})

    [log_file] = (tmp_path / "logs").glob("*.eval")
    output = str(tmp_path / "results")
    result = CliRunner().invoke(app, ["import", str(log_file), "--run-name", "ref", "--output", output])
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "results" / "ref" / "scores.json").read_text())
    assert scores["reference"] == own.reference.model_dump(mode="json")
    info = json.loads(next((tmp_path / "results" / "ref" / "judges").glob("*/judge.json")).read_text())
    assert info["id"].startswith("judge-reference-")
    assert info["id"] == RunStore(tmp_path / "results" / "own").read_manifest().primary_judge
    assert info["described"]["protocol"] == "reference"


def test_a_sample_inspect_could_not_run_imports_as_a_failed_generation(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "dummy-key")
    refusing = lambda body: Reply(status=400, error_message="bad request") if "os" in str(body) else candidate(body)
    with FakeOpenAIServer(responder=lambda body: candidate(body)) as model:
        task = agentworldbench(data="sample", limit=LIMIT, domains="web,os", judge="rules")
        model.responder = refusing
        [log] = inspect_ai.eval(
            task,
            model="openai/candidate",
            model_base_url=model.url,
            model_args=CHAT_COMPLETIONS,
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_retries=0,
            fail_on_error=False,
        )
    errored = [s.id for s in log.samples if s.error is not None]
    assert errored
    [log_file] = (tmp_path / "logs").glob("*.eval")
    result = CliRunner().invoke(
        app, ["import", str(log_file), "--run-name", "partial", "--output", str(tmp_path / "results")]
    )
    assert result.exit_code == 0, result.output
    assert f"{len(errored)} samples inspect could not run" in result.output
    store = RunStore(tmp_path / "results" / "partial")
    failed = {p.key: p for p in store.predictions.load().values() if p.failed}
    assert sorted(failed) == sorted(errored)
    assert all(p.status == "error" and (p.error or "").startswith("inspect_ai: ") for p in failed.values())


def test_an_eval_that_stopped_imports_as_an_incomplete_run(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", "dummy-key")
    refusing = lambda body: Reply(status=400, error_message="bad request") if "os" in str(body) else candidate(body)
    with FakeOpenAIServer(responder=refusing) as model:
        [log] = inspect_ai.eval(
            agentworldbench(data="sample", limit=3, domains="os,web", judge="rules"),
            model="openai/candidate",
            model_base_url=model.url,
            model_args=CHAT_COMPLETIONS,
            log_dir=str(tmp_path / "logs"),
            display="none",
            max_retries=0,
            max_samples=1,
        )
    assert log.status == "error"
    in_log = len(log.samples or [])
    assert in_log < 6  # it stopped at the first error: the samples after it never ran
    [log_file] = (tmp_path / "logs").glob("*.eval")
    output = str(tmp_path / "results")
    result = CliRunner().invoke(app, ["import", str(log_file), "--run-name", "stopped", "--output", output])
    assert result.exit_code == 0, result.output
    assert f"the eval ended with status 'error': {6 - in_log} samples of the task's selection" in result.output
    scores = json.loads((tmp_path / "results" / "stopped" / "scores.json").read_text())
    assert scores["completeness"]["selected"] == 6
    assert scores["completeness"]["judged"] == in_log


def test_without_inspect_ai_a_log_import_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # what `import inspect_ai.log` finds uninstalled
    log = tmp_path / "run.eval"
    log.write_bytes(b"PK")
    result = CliRunner().invoke(app, ["import", str(log), "--run-name", "x", "--output", str(tmp_path / "r")])
    assert refusal(result) == (2, "missing_extra") and "pip install 'awbench[inspect]'" in result.stderr


def test_the_task_inputs_are_awbench_messages_of_awbench_selection():
    """Every sample's input is exactly awbench's world-model messages; `-T` selections select as awbench's
    options do (the same samples, in the same order)."""
    from awbench.data.dataset import load_samples
    from awbench.world_model.messages import world_model_messages

    task = agentworldbench(data="sample", judge="rules")
    samples = {s.key: s for s in load_samples(DataSettings(source="sample")).samples}
    assert [s.id for s in task.dataset] == list(samples)
    for sample in task.dataset:
        expected = world_model_messages(samples[str(sample.id)].record)
        assert [(m.role, m.text) for m in sample.input] == [(m["role"], m["content"]) for m in expected]
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"domains": "os,web", "limit": 2}, {"domains": ["os", "web"], "limit": 2}),
        ({"domains": ["mcp"]}, {"domains": ["mcp"]}),
        ({"ids": "os/2/1,web/6/1"}, {"ids": ["os/2/1", "web/6/1"]}),
        ({"ids": 2}, {"ids": ["2"]}),
        ({"sample": 9, "seed": 3}, {"sample": 9, "seed": 3}),
    ]
    for task_args, settings in cases:
        chosen = load_samples(DataSettings(source="sample", **settings)).samples
        assert 0 < len(chosen) < len(samples)
        assert [s.id for s in agentworldbench(data="sample", judge="rules", **task_args).dataset] == [
            s.key for s in chosen
        ]


def test_a_key_in_the_judge_model_args_is_refused_before_it_reaches_the_log():
    with pytest.raises(ValueError, match="judge_model_args: 'api_key' would be written to the eval log"):
        agentworldbench(data="sample", judge_model_args={"api_key": "sk-secret"})


def test_a_finished_eval_of_part_of_the_selection_imports_as_a_complete_run_of_that_part(servers, tmp_path):
    """inspect's own --limit takes the first samples of a random `-T sample`: the run is those samples, drawn
    again neither by the sample nor by a limit."""
    model, _ = servers
    task = agentworldbench(data="sample", sample=9, seed=3, judge="rules")
    [log] = inspect_ai.eval(
        task,
        model="openai/candidate",
        model_base_url=model.url,
        model_args=CHAT_COMPLETIONS,
        log_dir=str(tmp_path / "logs"),
        display="none",
        limit=3,
    )
    assert log.status == "success"
    [log_file] = (tmp_path / "logs").glob("*.eval")
    result = CliRunner().invoke(app, ["import", str(log_file), "--run-name", "part", "--output", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    store = RunStore(tmp_path / "r" / "part")
    assert store.read_manifest().config.data.ids == [s.id for s in log.samples]
    scores = json.loads((store.path / "scores.json").read_text())
    assert (scores["completeness"]["judged"], scores["completeness"]["selected"]) == (3, 3)


def rules_log(servers, tmp_path: Path) -> dict:
    """A rule-judged log of one sample, as the JSON a `.json` log holds, to tamper with."""
    log = inspect_eval(servers[0].url, tmp_path / "logs", judge="rules", domains="os")
    write_eval_log(log, str(tmp_path / "log.json"), format="json")
    return json.loads((tmp_path / "log.json").read_text())


def _tamper(document: dict, change: Callable[[dict], None], path: Path) -> Path:
    copy = json.loads(json.dumps(document))
    change(copy)
    path.write_text(json.dumps(copy))  # json writes NaN and Infinity as inspect's own logs have them
    return path


def _judgment(document: dict, sample: int = 0) -> dict:
    [score] = document["samples"][sample]["scores"].values()
    return score["metadata"]["judgment"]


def _set_in_judgment(field: str, value: Any) -> Callable[[dict], None]:
    def change(document: dict) -> None:
        inner = _judgment(document)
        *outer, last = field.split(".")
        for key in outer:
            inner = inner.setdefault(key, {})
        inner[last] = value

    return change


NOT_AWBENCH_SCORES = [
    ("score", -5, "judgment.score: Input should be greater than or equal to 0"),
    ("score", 150.5, "judgment.score: Input should be less than or equal to 100"),
    ("score", "80", "judgment.score: Input should be a valid number"),
    ("score", True, "judgment.score: Input should be a valid number"),
    ("score", math.inf, "judgment.score: inf is not a finite number (JSON has no NaN or infinity)"),
    ("score", math.nan, "judgment.score: nan is not a finite number (JSON has no NaN or infinity)"),
    ("rule.score", 2, "judgment.rule.score: 2 is off awbench's scale, 0 to 1"),
    ("rule.parts.format", -0.5, "judgment.rule.parts.format: -0.5 is off awbench's scale, 0 to 1"),
    ("dimensions", {"format": 7}, "judgment.dimensions.format: Input should be less than or equal to 5"),
    ("cost_usd", -1, "judgment.cost_usd: Input should be greater than or equal to 0"),
    ("cost_usd", -math.inf, "judgment.cost_usd: -inf is not a finite number (JSON has no NaN or infinity)"),
]


def test_inspect_scores_off_awbench_scales_are_refused_naming_the_sample_and_field(servers, tmp_path):
    """Negative, textual and infinite scores were imported as given, and averaged."""
    document = rules_log(servers, tmp_path)
    sample = document["samples"][0]["id"]
    assert _judgment(document)["rule"]  # the fields tampered with are the rule judge's own
    output = tmp_path / "results"
    for i, (field, value, message) in enumerate(NOT_AWBENCH_SCORES):
        tampered = _tamper(document, _set_in_judgment(field, value), tmp_path / f"tampered{i}.json")
        result = CliRunner().invoke(app, ["import", str(tampered), "--run-name", "bad", "--output", str(output)])
        assert result.exit_code == 2, (field, value, result.output)
        assert result.stderr.splitlines()[0] == f"{tampered}: sample {sample}: {message}"
        assert "Traceback" not in result.output and not output.exists()
    latency = _tamper(
        document,
        lambda d: next(iter(d["samples"][0]["scores"].values()))["metadata"]["prediction"].update(latency_s=math.inf),
        tmp_path / "latency.json",
    )
    result = CliRunner().invoke(app, ["import", str(latency), "--run-name", "bad", "--output", str(output)])
    assert (
        result.exit_code == 2 and f"sample {sample}: prediction.latency_s: inf is not a finite number" in result.stderr
    )


def test_an_inspect_sample_given_twice_is_imported_once_when_alike_and_refused_when_not(servers, tmp_path):
    document = rules_log(servers, tmp_path)
    sample = document["samples"][0]["id"]
    output = tmp_path / "results"

    alike = _tamper(document, lambda d: d["samples"].append(d["samples"][0]), tmp_path / "alike.json")
    result = CliRunner().invoke(app, ["import", str(alike), "--run-name", "twice", "--output", str(output)])
    assert result.exit_code == 0, result.output
    assert f"warning: {alike}: sample {sample} is in the log twice (its samples 1 and 2), alike: imported once" in (
        " ".join(result.stderr.split())
    )
    assert "imported 1 predictions and 1 judgments" in result.stdout

    def differently(d: dict) -> None:
        d["samples"].append(json.loads(json.dumps(d["samples"][0])))
        _judgment(d, 1)["score"] = 100.0

    other = _tamper(document, differently, tmp_path / "other.json")
    result = CliRunner().invoke(app, ["import", str(other), "--run-name", "bad", "--output", str(output)])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[0] == (
        f"{other}: sample {sample} is in the log twice (its samples 1 and 2): with other records: which to import "
        "is not known"
    )
    assert not (output / "bad").exists()


def test_a_judge_id_that_is_no_folder_of_its_own_is_refused(servers, tmp_path):
    """A log whose metadata names the judge `..` wrote judge.json into the run's root."""
    document = rules_log(servers, tmp_path)
    output = tmp_path / "results"
    for judge_id in ("..", ".", ".hidden"):
        tampered = tmp_path / "t.json"
        document["eval"]["metadata"]["awbench"]["judge_id"] = judge_id
        tampered.write_text(json.dumps(document))
        result = CliRunner().invoke(app, ["import", str(tampered), "--run-name", "bad", "--output", str(output)])
        assert (result.exit_code, result.stdout) == (2, "")
        assert result.stderr == (
            f"error: {tampered}: the task's metadata (awbench) cannot be read: judge_id: Value error, {judge_id!r} is "
            "not a judge id awbench makes (letters, digits, '.', '_' and '-' only, not starting with '.')\n"
        )
        assert not output.exists()


def test_an_eval_with_nothing_scored_still_has_a_metric():
    """Issue 36: a fully unscored eval showed no metric lines (every value None)."""
    from awbench.interop.inspect_task import domain_scores

    assert domain_scores()([]) == {"scored": 0.0}

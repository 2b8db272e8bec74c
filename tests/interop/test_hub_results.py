"""`awbench export RUN --hf-eval-results DIR`: the Hugging Face Hub's model-repository evaluation results.

The file is checked three ways: its exact text, a schema restated here from the Hub's documentation
(docs/hub/eval-results.md and eval_results.yaml of huggingface/hub-docs: a list of entries, each with
`dataset.id`, `dataset.task_id` and `value` required), and `huggingface_hub`'s own parser of the format.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml
from refusals import refusal
from runs_helpers import MCP, SEARCH, SMALL, UNSCORED, Grade, make_run, write_data
from typer.testing import CliRunner

import awbench
from awbench.analysis.leaderboard import load_published, provenance
from awbench.cli import app
from awbench.domains import DOMAINS, PUBLISHED_STATS
from awbench.interop.hub_results import DATASET_ID, EVAL_RESULTS_FOLDER, FILE_NAME
from awbench.records import ReferenceReading
from awbench.run.evaluations import score_run
from awbench.run.pipeline import run_samples
from awbench.run.store import RunManifest, RunStore

runner = CliRunner()
REFERENCE_SHA = "9f" * 32
FINISHED = datetime(2026, 1, 15, 10, 30, 5, 123456, tzinfo=timezone.utc)
# Grades of the full-size run: one turn per trajectory, as many trajectories as the published samples.
# Domain scores (failures left out): MCP 100, Search 75, Terminal 50, SWE 65 (mean 3.6), Android 25, Web 75, OS 0.
GRADES: dict[str, Grade] = {
    "mcp": 5,
    "search": 4,
    "terminal": 3,
    "swe": dict(format=5, factuality=4, consistency=3, realism=4, quality=2),
    "android": 2,
    "web": 4,
    "os": 1,
}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def key(domain: str, t: int) -> str:
    return f"{domain}/{domain[0]}{t}/1"


def as_reference_protocol(store: RunStore, judge_id: str, finished: datetime | None = FINISHED) -> None:
    """The evaluation described as one made with the reference protocol (what `--judge-prompts CHECKOUT`
    records), its verdicts read by the reference as by awbench, rescored, and the run finished at `finished`."""
    evaluation = store.evaluation(judge_id)
    info = evaluation.read_info()
    described = {
        "protocol": "reference",
        "prompt_set": "/checkouts/Qwen-AgentWorld",
        "prompt_sha256": REFERENCE_SHA,
        "prompt_source": "/checkouts/Qwen-AgentWorld",
        "parser_version": "1",
    }
    evaluation.info_path.write_text(info.model_copy(update={"described": described}).model_dump_json(indent=2))
    evaluation.judgments.rewrite(
        [
            j.model_copy(
                update={
                    "verdicts": [
                        v.model_copy(
                            update={
                                "reference": ReferenceReading(
                                    success=True, scores=v.scores, total_score=sum(v.scores.values()) / 5, attempt=1
                                )
                            }
                        )
                        for v in j.verdicts
                    ]
                }
            )
            for j in evaluation.judgments.load().values()
        ]
    )
    manifest = store.read_manifest()
    store.write_manifest(manifest.model_copy(update={"primary_described": described, "finished_at": finished}))
    score_run(store, run_samples(store))


@pytest.fixture(scope="module")
def full(tmp_path_factory) -> tuple[Path, RunStore]:
    """A run the size of the benchmark (2,170 samples), judged with the reference protocol by the published
    judge, failures left out: one failed generation in MCP, one sample of Web without a verdict."""
    root = tmp_path_factory.mktemp("full")
    data = write_data(root / "data", {d: [1] * n for d, (n, _) in PUBLISHED_STATS.items()})
    grades: dict[str, Grade] = {key(d, t): GRADES[d] for d, (n, _) in PUBLISHED_STATS.items() for t in range(n)}
    grades[key("mcp", 0)] = None  # failed
    grades[key("web", 7)] = UNSCORED  # no usable verdict
    store = make_run(root / "results", "qwen-aw", data, grades, policy="exclude")
    as_reference_protocol(store, "llm-qwen-aw")
    return root, store


def judged(grades: dict[str, Grade]) -> dict[str, Grade]:
    """`grades`, and every other sample of SMALL judged without a usable verdict: a complete evaluation."""
    return dict.fromkeys(MCP + SEARCH, UNSCORED) | grades


@pytest.fixture
def small(tmp_path) -> RunStore:
    data = write_data(tmp_path / "data", SMALL)
    grades: dict[str, Grade] = {"mcp/m0/1": 4, "mcp/m0/2": 5, "mcp/m1/1": None, "search/s0/1": 3}
    return make_run(tmp_path / "results", "small", data, judged(grades))


# --- The format, as the Hub documents it --------------------------------------------------------------------

ENTRY_KEYS = {"dataset", "value", "verifyToken", "date", "source", "notes", "evaluation_framework"}
DATASET_KEYS = {"id", "task_id", "revision"}
SOURCE_KEYS = {"url", "name", "user", "org"}


def check_eval_results(text: str) -> list[dict]:
    """The file against the documented fields: a YAML list of entries; `dataset` (`id`: a Hub dataset id,
    `task_id`, optional `revision`) and `value` (a number) required; `date` an ISO-8601 date or datetime
    written as a string; `source` with a required `url`; `notes` a string; nothing else. One value per task."""
    data = yaml.safe_load(text)
    assert isinstance(data, list) and data
    tasks = []
    for entry in data:
        assert isinstance(entry, dict) and {"dataset", "value"} <= set(entry) <= ENTRY_KEYS, entry
        dataset = entry["dataset"]
        assert isinstance(dataset, dict) and {"id", "task_id"} <= set(dataset) <= DATASET_KEYS, dataset
        assert all(isinstance(v, str) and v for v in dataset.values())
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", dataset["id"])
        tasks.append((dataset["id"], dataset["task_id"]))
        value = entry["value"]
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        if "date" in entry:
            assert isinstance(entry["date"], str)
            datetime.fromisoformat(entry["date"].replace("Z", "+00:00"))
        if "source" in entry:
            source = entry["source"]
            assert isinstance(source, dict) and "url" in source and set(source) <= SOURCE_KEYS
            assert all(isinstance(v, str) for v in source.values()) and source["url"].startswith(
                ("https://", "http://")
            )
        if "notes" in entry:
            assert isinstance(entry["notes"], str) and entry["notes"]
    assert len(tasks) == len(set(tasks)), tasks
    return data


def check_with_huggingface_hub(text: str) -> list:
    """`huggingface_hub`'s reader of `.eval_results/*.yaml` (2.x: EvalResultEntry), when it has one."""
    hub = pytest.importorskip("huggingface_hub")
    if not hasattr(hub, "parse_eval_result_entries"):
        pytest.skip(f"huggingface_hub {hub.__version__} has no reader of .eval_results")
    data = yaml.safe_load(text)
    entries = hub.parse_eval_result_entries(data)
    assert len(entries) == len(data)
    assert hub.eval_result_entries_to_yaml(entries) == data  # nothing it does not know, nothing lost
    return entries


# --- The full benchmark ----------------------------------------------------------------------------------------


def expected_notes(store: RunStore, what: str, counts: str) -> str:
    manifest = store.read_manifest()
    return (
        f"{what}. Judge: gpt-5.2-2025-12-11 (temperature 0.6, 1 verdict per prediction), reference protocol (the "
        f"judge prompts of the Qwen-AgentWorld release, byte for byte; prompts sha256 {REFERENCE_SHA}). {counts} "
        "Scored as the reference eval.py prints it, from the same generations and judge answers (the rows it does "
        "not judge or cannot read are left out); awbench''s strict score differs in 0 samples. "
        "Comparable with the published leaderboard: yes (the reference protocol with the published judge, on the "
        f"full benchmark, scored as the reference script scores). Source: awbench {manifest.awbench_version}, run qwen-aw, evaluation "
        f"llm-qwen-aw, data fingerprint {manifest.data_fingerprint[:12]}."
    )


def test_a_full_run_gives_overall_and_the_seven_domains_exactly(full, tmp_path):
    _root, store = full
    repo = tmp_path / "my-model"
    result = invoke("export", store.path, "--hf-eval-results", repo)
    assert result.exit_code == 0, result.output
    path = repo / EVAL_RESULTS_FOLDER / FILE_NAME
    assert result.output.splitlines() == [
        f"wrote {path} (overall 55.71, mcp 100.00, search 75.00, terminal 50.00, swe 65.00, android 25.00, web 75.00, "
        "os 0.00)",
        f"to open it as a pull request on the model's repository: hf upload ORG/MODEL {path} "
        f".eval_results/{FILE_NAME} --create-pr",
    ]
    assert sorted(p.name for p in (repo / EVAL_RESULTS_FOLDER).iterdir()) == [FILE_NAME]  # no temporary file left

    rows = [
        (
            "overall",
            "55.71",
            "AgentWorldBench Overall (0-100): the mean of the 7 domain scores",
            "Samples: 2,170; scored: 2,168; failed: 1; unscored by the judge: 1.",
        )
    ]
    labels = {
        "mcp": "MCP",
        "search": "Search",
        "terminal": "Terminal",
        "swe": "SWE",
        "android": "Android",
        "web": "Web",
        "os": "OS",
    }
    values = {
        "mcp": "100.0",
        "search": "75.0",
        "terminal": "50.0",
        "swe": "65.0",
        "android": "25.0",
        "web": "75.0",
        "os": "0.0",
    }
    for d in DOMAINS:
        n = PUBLISHED_STATS[d][0]
        failed, unscored = int(d == "mcp"), int(d == "web")
        rows.append(
            (
                d,
                values[d],
                f"AgentWorldBench {labels[d]} domain score (0-100)",
                f"Samples: {n:,}; scored: {n - failed - unscored:,}; failed: {failed}; unscored by the judge: "
                f"{unscored}.",
            )
        )
    expected = "".join(
        f"- dataset:\n    id: Qwen/AgentWorldBench\n    task_id: {task}\n  value: {value}\n"
        f"  date: '2026-01-15T10:30:05Z'\n  notes: '{expected_notes(store, what, counts)}'\n"
        for task, value, what, counts in rows
    )
    text = path.read_text(encoding="utf-8")
    assert text == expected

    data = check_eval_results(text)
    assert [e["dataset"]["task_id"] for e in data] == ["overall", *DOMAINS]
    assert {e["dataset"]["id"] for e in data} == {DATASET_ID}
    entries = check_with_huggingface_hub(text)
    assert entries[0].dataset_id == "Qwen/AgentWorldBench" and entries[0].task_id == "overall"
    assert entries[0].value == 55.71 and entries[0].date == "2026-01-15T10:30:05Z" and entries[0].source_url is None


def test_the_comparability_said_is_the_leaderboards(full):
    _, store = full
    manifest = store.read_manifest()
    info = store.evaluation("llm-qwen-aw").read_info()
    assert provenance(manifest, info, "minimum", reference=True).published_protocol  # ranked by eval.py's numbers
    assert not provenance(manifest, info, "exclude").published_protocol  # no reference reading


def test_a_source_url_becomes_the_source_of_every_entry(full, tmp_path):
    _, store = full
    url = "https://huggingface.co/datasets/me/qwen-aw-logs"
    result = invoke("export", store.path, "--hf-eval-results", tmp_path, "--hf-source-url", url)
    assert result.exit_code == 0, result.output
    text = (tmp_path / EVAL_RESULTS_FOLDER / FILE_NAME).read_text()
    data = check_eval_results(text)
    name = f"awbench {awbench.__version__}, run qwen-aw"
    assert all(e["source"] == {"url": url, "name": name} for e in data)
    assert f"  source:\n    url: {url}\n    name: {name}\n" in text and "&id" not in text  # no YAML aliases
    assert all(e.source_url == url and e.source_name == name for e in check_with_huggingface_hub(text))

    bad = invoke("export", store.path, "--hf-eval-results", tmp_path / "other", "--hf-source-url", "logs/")
    assert refusal(bad) == (2, "bad_option") and "--hf-source-url 'logs/'" in bad.stderr
    assert not (tmp_path / "other").exists()


def test_a_rubric_evaluation_with_failures_at_zero_says_why_it_is_not_comparable(tmp_path):
    data = write_data(tmp_path / "data", {d: [1] * n for d, (n, _) in PUBLISHED_STATS.items()})
    grades = {key(d, t): 3 for d, (n, _) in PUBLISHED_STATS.items() for t in range(n)}
    store = make_run(tmp_path / "results", "rubric", data, grades)
    result = invoke("export", store.path, "--hf-eval-results", tmp_path / "repo")
    assert result.exit_code == 0, result.output
    assert (
        "run rubric has no finish date (it was not made by `awbench run` in one go): `date` is left out, and the Hub "
        "shows the commit's time instead"
    ) in result.output.splitlines()
    entries = check_eval_results((tmp_path / "repo" / EVAL_RESULTS_FOLDER / FILE_NAME).read_text())
    assert all("date" not in e for e in entries)
    notes = entries[0]["notes"]
    assert "awbench protocol (the rubric prompts of awbench; prompts sha256 1a2b3c" in notes
    assert "Failure policy minimum: failed generations score 0 and count as scored." in notes
    assert (
        "Comparable with the published leaderboard: no (not the reference protocol; failure policy minimum, where "
        "the published scores leave failures out)."
    ) in notes


# --- What the format cannot hold -----------------------------------------------------------------------------


def test_a_subset_is_refused_unless_allowed_and_then_said(small, tmp_path):
    repo = tmp_path / "repo"
    result = invoke("export", small.path, "--hf-eval-results", repo)
    assert refusal(result) == (2, "subset") and "(5 of 2,170 samples)" in result.stderr
    assert not repo.exists()

    result = invoke("export", small.path, "--hf-eval-results", repo, "--allow-subset")
    assert result.exit_code == 0, result.output
    assert (
        "run small is a subset (5 of 2,170 samples): written because of --allow-subset, and said in every entry's notes"
    ) in result.output.splitlines()
    data = check_eval_results((repo / EVAL_RESULTS_FOLDER / FILE_NAME).read_text())
    check_with_huggingface_hub((repo / EVAL_RESULTS_FOLDER / FILE_NAME).read_text())
    assert [(e["dataset"]["task_id"], e["value"]) for e in data] == [
        ("overall", 54.17),
        ("mcp", 58.33),
        ("search", 50.0),
    ]
    assert data[0]["notes"].startswith(
        "AgentWorldBench Overall (0-100) of a subset: the mean of its 2 domain scores (MCP, Search). "
    )
    assert all("Subset, not the full benchmark: 5 of 2,170 samples." in e["notes"] for e in data)
    assert all("Comparable with the published leaderboard: no (" in e["notes"] for e in data)
    assert "not the full benchmark with one generation per sample" in data[0]["notes"]


def test_a_selection_is_named_in_the_subset(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    store = make_run(tmp_path / "results", "sel", data, judged({"mcp/m0/1": 4}))
    manifest = store.read_manifest()
    config = manifest.config.model_copy(
        update={"data": manifest.config.data.model_copy(update={"domains": ["mcp"], "limit": 2})}
    )
    store.write_manifest(manifest.model_copy(update={"config": config}))
    result = invoke("export", store.path, "--hf-eval-results", tmp_path / "repo")
    assert refusal(result) == (2, "subset") and "(5 of 2,170 samples, --domains mcp --limit 2)" in result.stderr


def test_the_rule_judge_is_refused_and_an_llm_evaluation_beside_it_is_taken(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    rules_only = make_run(tmp_path / "results", "ro", data, {"mcp/m0/1": 4}, rules={"mcp/m0/1": 0.5}, llm=False)
    for extra in ([], ["--judge", "rules"], ["--allow-subset"]):
        result = invoke("export", rules_only.path, "--hf-eval-results", tmp_path / "repo", *extra)
        assert refusal(result) == (2, "rule_judge") and "`awbench judge ro --judge-model MODEL`" in result.stderr
    assert not (tmp_path / "repo").exists()

    both = make_run(
        tmp_path / "results", "both", data, judged({"mcp/m0/1": 4, "search/s0/1": 4}), rules={"mcp/m0/1": 0.5}
    )
    result = invoke("export", both.path, "--hf-eval-results", tmp_path / "repo", "--judge", "rules", "--allow-subset")
    assert refusal(result) == (2, "rule_judge")
    result = invoke("export", both.path, "--hf-eval-results", tmp_path / "repo", "--allow-subset")
    assert result.exit_code == 0, result.output
    entries = check_eval_results((tmp_path / "repo" / EVAL_RESULTS_FOLDER / FILE_NAME).read_text())
    assert entries[0]["value"] == 75.0 and "evaluation llm-both," in entries[0]["notes"]


def test_a_run_without_scores_is_refused(small, tmp_path):
    (small.evaluation("llm-small").scores_path).unlink()
    result = invoke("export", small.path, "--hf-eval-results", tmp_path / "repo", "--allow-subset")
    assert refusal(result) == (2, "not_scored") and f"`awbench judge {small.path}`" in result.stderr

    manifest = small.read_manifest()
    unjudged = RunStore(tmp_path / "results" / "unjudged")
    unjudged.create(
        RunManifest(
            config=manifest.config.model_copy(update={"run_name": "unjudged", "judge": None}),
            data_source=manifest.data_source,
            data_fingerprint=manifest.data_fingerprint,
            samples=manifest.samples,
        )
    )
    result = invoke("export", unjudged.path, "--hf-eval-results", tmp_path / "repo")
    assert refusal(result) == (2, "not_judged") and "`awbench judge unjudged`" in result.stderr
    assert not (tmp_path / "repo").exists()


def test_a_domain_without_a_score_is_refused(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    store = make_run(tmp_path / "results", "gap", data, judged({"mcp/m0/1": 4, "search/s0/1": None}), policy="exclude")
    result = invoke("export", store.path, "--hf-eval-results", tmp_path / "repo", "--allow-subset")
    assert refusal(result) == (2, "not_scored") and "run gap has no Search score" in result.stderr


def test_an_unknown_judge_is_refused(tmp_path):
    data = write_data(tmp_path / "data", SMALL)
    store = make_run(tmp_path / "results", "anon", data, {"mcp/m0/1": 4}, judge_model="imported")
    result = invoke("export", store.path, "--hf-eval-results", tmp_path / "repo", "--allow-subset")
    assert refusal(result) == (2, "judge_model_unknown") and "llm-anon" in result.stderr


def test_dir_a_file_is_refused_naming_it(small, tmp_path):
    target = tmp_path / "model"
    target.write_text("keep me")
    result = invoke("export", small.path, "--hf-eval-results", target, "--allow-subset")
    assert refusal(result) == (2, "not_a_directory") and f"--hf-eval-results {target}" in result.stderr
    assert target.read_text() == "keep me"

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / EVAL_RESULTS_FOLDER).write_text("not a folder")
    result = invoke("export", small.path, "--hf-eval-results", repo, "--allow-subset")
    assert refusal(result) == (2, "not_a_directory") and str(repo / EVAL_RESULTS_FOLDER) in result.stderr


def test_the_file_is_replaced_whole_and_a_refusal_leaves_it(small, tmp_path):
    repo = tmp_path / "repo"
    folder = repo / EVAL_RESULTS_FOLDER
    folder.mkdir(parents=True)
    (folder / "other.yaml").write_text("- kept\n")
    (folder / FILE_NAME).write_text("old\n")
    assert invoke("export", small.path, "--hf-eval-results", repo).exit_code == 2  # a subset: refused
    assert (folder / FILE_NAME).read_text() == "old\n"
    assert invoke("export", small.path, "--hf-eval-results", repo, "--allow-subset").exit_code == 0
    check_eval_results((folder / FILE_NAME).read_text())
    assert sorted(p.name for p in folder.iterdir()) == [FILE_NAME, "other.yaml"]
    assert (folder / "other.yaml").read_text() == "- kept\n"


# --- The command ------------------------------------------------------------------------------------------------


def test_export_needs_one_destination_and_can_write_both(small, tmp_path):
    result = invoke("export", small.path)
    assert refusal(result) == (2, "bad_option") and "--official DIR" in result.stderr
    result = invoke("export", small.path, "--official", tmp_path / "o", "--allow-subset")
    assert refusal(result) == (2, "bad_option") and "--allow-subset" in result.stderr
    result = invoke(
        "export", small.path, "--official", tmp_path / "o", "--hf-eval-results", tmp_path / "m", "--allow-subset"
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "o" / "judged.jsonl").is_file() and (tmp_path / "m" / EVAL_RESULTS_FOLDER / FILE_NAME).is_file()


def test_export_help_shows_the_option_with_an_example():
    result = runner.invoke(app, ["export", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--hf-eval-results" in result.output and "--allow-subset" in result.output
    assert "Example: awbench export my-run --hf-eval-results ./my-model/" in result.output


def test_a_reference_protocol_run_on_the_full_data_is_ranked_with_the_published_rows(full) -> None:
    root, _store = full
    board = invoke("leaderboard", "--output", root / "results", "--reference", "--format", "json")
    assert board.exit_code == 0, board.output
    groups = json.loads(board.stdout)["groups"]
    assert len(groups) == 1 and groups[0]["header"].startswith("published protocol")
    rows = groups[0]["rows"]
    ours = [row for row in rows if row["run"] == "qwen-aw"]
    assert len(ours) == 1 and len(rows) == 1 + len(load_published())
    assert [row["rank"] for row in rows] == sorted(row["rank"] for row in rows)

"""A run's scores as the Hugging Face Hub's model-repository evaluation results: `.eval_results/*.yaml`.

The Hub reads a model repository's `.eval_results/` folder: each YAML file is a list of entries, one value
per entry, each naming a benchmark dataset and a task of it (https://huggingface.co/docs/hub/eval-results;
the specification is `eval_results.yaml` of github.com/huggingface/hub-docs; `huggingface_hub` has the
same fields in `EvalResultEntry`):

    - dataset:
        id: Qwen/AgentWorldBench   # required: the benchmark's dataset on the Hub
        task_id: overall           # required: the task (a leaderboard) of that dataset
      value: 58.25                 # required
      date: '2026-01-15T10:30:00Z' # optional: ISO-8601, a string
      source:                      # optional; `url` is required when it is given
        url: https://...
        name: ...
      notes: ...                   # optional: how the result was obtained

One file, `agentworldbench.yaml`, holds eight entries: Overall and the seven domains, each its own task
(task ids: `overall` and the domain ids). Every entry's notes say what the value is: the judge model and
its settings, the judge protocol with its prompts' sha256, the failure policy, how many samples were
scored and failed, and whether the scores are comparable with the published leaderboard.

Only what the format can hold honestly is written: an LLM judge's scores of the full benchmark. The rule
judge's scores are refused: the format has no metric name, so they would be read, and ranked, as the
benchmark's LLM-judge score. An incomplete evaluation (some generation of the run's selection not judged) is
refused. A subset of the data is refused unless asked for (`allow_subset`), and then said in the notes.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean
from typing import Any

import yaml

from awbench.analysis.leaderboard import full_benchmark, provenance, published_judge
from awbench.config import DEFAULT_JUDGE_MODEL
from awbench.domains import DOMAIN_LABELS, DOMAINS, PUBLISHED_TOTAL
from awbench.interop.reference import IMPORTED_PROMPT_SET
from awbench.judging.llm.prompts import BUILTIN_SETS
from awbench.redact import url_secrets_masked
from awbench.run.evaluations import resolve_judge
from awbench.run.scoring import DomainScore, ScoresFile, resume_advice
from awbench.run.store import (
    Evaluation,
    JudgeInfo,
    RunManifest,
    RunStore,
    StoreError,
    refuse_run_output,
    write_into_folder,
)

DATASET_ID = "Qwen/AgentWorldBench"
EVAL_RESULTS_FOLDER = ".eval_results"  # huggingface_hub.constants.EVAL_RESULTS_FOLDER
FILE_NAME = "agentworldbench.yaml"
OVERALL_TASK = "overall"
TASK_IDS: dict[str, str] = {OVERALL_TASK: OVERALL_TASK, **{d: d for d in DOMAINS}}  # ours -> the Hub's task ids
DIGITS = 2  # as the published leaderboard gives its scores
_URL = re.compile(r"https?://[^\s/]+\S*")


@dataclass
class HubResults:
    path: Path  # the file written
    entries: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)  # what the user should know, beyond the file


def export_hub_results(
    store: RunStore,
    directory: Path,
    judge: str | None = None,
    *,
    allow_subset: bool = False,
    source_url: str | None = None,
) -> HubResults:
    """Write `directory/.eval_results/agentworldbench.yaml` from an LLM evaluation of the run (the named one,
    else the primary, else the first), replacing the file atomically. StoreError, naming what is wrong, for
    what the format cannot hold."""
    folder = directory / EVAL_RESULTS_FOLDER
    refuse_run_output("--hf-eval-results", directory)
    if directory.exists() and not directory.is_dir():
        raise StoreError(
            f"--hf-eval-results {directory} is a file: give a directory (a checkout of the model's "
            f"repository, or an empty one) to write {EVAL_RESULTS_FOLDER}/{FILE_NAME} into",
            key="not_a_directory",
        )
    if folder.exists() and not folder.is_dir():
        raise StoreError(
            f"{folder} is a file: the Hub reads evaluation results from a folder of that name; move the file away",
            key="not_a_directory",
        )
    if source_url is not None and not _URL.fullmatch(source_url):
        raise StoreError(
            f"--hf-source-url {source_url!r} is not an http(s) URL: the Hub links the result's source to it",
            key="bad_option",
        )
    if source_url is not None and url_secrets_masked(source_url) != source_url:
        raise StoreError(
            f"--hf-source-url {url_secrets_masked(source_url)} holds a user name, password or key: the "
            "file is published; give a link without them",
            key="bad_option",
        )
    entries, notes = eval_results_entries(store, judge, allow_subset=allow_subset, source_url=source_url)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    write_into_folder("--hf-eval-results", path, to_yaml(entries))
    return HubResults(path=path, entries=entries, notes=notes)


class _Dumper(yaml.SafeDumper):
    """Every value written out where it is: no anchors and aliases for repeated ones."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def to_yaml(entries: list[dict[str, Any]]) -> str:
    return yaml.dump(
        entries, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=100_000
    )


def eval_results_entries(
    store: RunStore, judge: str | None = None, *, allow_subset: bool = False, source_url: str | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """The file's entries (Overall first, then the domains in the published order), and notes for the user."""
    manifest = store.read_manifest()
    evaluation = _llm_evaluation(store, judge)
    info = evaluation.read_info()
    if info.settings.model == IMPORTED_PROMPT_SET:
        raise StoreError(
            f"the judge of {info.id} is not known (the run was imported without --judge-model): the "
            "results must name the judge model; import the file again with --judge-model",
            key="judge_model_unknown",
        )
    scores = evaluation.read_scores()
    if scores is None:
        raise StoreError(
            f"run {store.name} has no scores from judge {info.id} yet: {resume_advice(store.path)}", key="not_scored"
        )
    scores = scores.ranked()
    completeness = scores.completeness
    if not completeness.complete:
        raise StoreError(
            f"run {store.name} is {completeness.label()} by judge {info.id}: only complete evaluations "
            f"are written (--allow-subset allows a data subset, not this); {resume_advice(store.path)}",
            key="not_scored",
        )
    scored = [ds.score for ds in scores.domains.values() if ds.score is not None]
    if not scored:
        raise StoreError(
            f"judge {info.id} scored nothing of run {store.name}: there is no value to write", key="not_scored"
        )
    subset = subset_reason(manifest)
    if subset is not None and not allow_subset:
        raise StoreError(
            f"run {store.name} is not the full benchmark ({subset}): the Hub ranks its results with "
            "full-benchmark scores; pass --allow-subset to write them anyway, labelled as a subset in "
            "the notes",
            key="subset",
        )
    foreign = [d for d in scores.domains if d not in DOMAINS]
    if foreign:
        raise StoreError(
            f"run {store.name} has domains that are not AgentWorldBench's ({', '.join(foreign)}): its "
            f"scores are not of {DATASET_ID}",
            key="not_agentworldbench",
        )
    missing = [DOMAIN_LABELS[d] for d, ds in scores.domains.items() if ds.score is None]
    if missing:
        raise StoreError(
            f"run {store.name} has no {', '.join(missing)} score from judge {info.id} (nothing in the "
            "domain was scored): its Overall leaves the domain out, which the benchmark's Overall does "
            "not",
            key="not_scored",
        )

    common = _common_notes(store, manifest, info, scores, subset)
    date = manifest.finished_at
    base: dict[str, Any] = {}
    if date is not None:
        base["date"] = iso_utc(date)
    if source_url is not None:
        base["source"] = {"url": source_url, "name": f"awbench {manifest.awbench_version}, run {store.name}"}
    # A subset has no Overall of the benchmark's (all seven domains): its entry is the mean of its domains, and says so.
    overall = scores.overall if scores.overall is not None else fmean(scored)
    rows: list[tuple[str, float, str]] = [(OVERALL_TASK, overall, _overall_what(scores, subset))]
    rows += [
        (d, ds.score, f"AgentWorldBench {DOMAIN_LABELS[d]} domain score (0-100)")
        for d, ds in _ordered(scores.domains)
        if ds.score is not None
    ]
    entries = []
    for task, value, what in rows:
        counts = _counts(scores, None if task == OVERALL_TASK else task)
        entries.append(
            {
                "dataset": {"id": DATASET_ID, "task_id": TASK_IDS[task]},
                "value": round(value, DIGITS),
                **copy.deepcopy(base),
                "notes": " ".join([what + ".", *common[:1], counts, *common[1:]]),
            }
        )
    notes = []
    if date is None:
        notes.append(
            f"run {store.name} has no finish date (it was not made by `awbench run` in one go): `date` is "
            "left out, and the Hub shows the commit's time instead"
        )
    if subset is not None:
        notes.append(
            f"run {store.name} is a subset ({subset}): written because of --allow-subset, and said in every "
            "entry's notes"
        )
    return entries, notes


def subset_reason(manifest: RunManifest) -> str | None:
    """Why the run is not the whole benchmark (its selection, its number of samples), or None."""
    data = manifest.config.data
    parts = []
    if data.domains is not None and set(data.domains) != set(DOMAINS):
        parts.append(f"--domains {','.join(data.domains)}")
    if data.limit is not None:
        parts.append(f"--limit {data.limit}")
    if data.ids is not None:
        parts.append(f"--ids ({len(data.ids)} ids)")
    if data.sample is not None:
        parts.append(f"--sample {data.sample}")
    total = PUBLISHED_TOTAL[0]
    if parts or manifest.samples != total:
        return f"{manifest.samples:,} of {total:,} samples" + (f", {' '.join(parts)}" if parts else "")
    return None


def _llm_evaluation(store: RunStore, judge: str | None) -> Evaluation:
    if judge is not None:
        chosen = resolve_judge(store, judge)
    else:
        evaluations = store.evaluations()  # the primary first
        llm = [e for e in evaluations if e.read_info().kind == "llm"]
        chosen = llm[0] if llm else resolve_judge(store, None)
    if chosen.read_info().kind != "llm":
        raise StoreError(
            f"judge {chosen.id} of run {store.name} is the rule judge: its scores are a rule-based similarity to the "
            "ground truth, not AgentWorldBench's metric (the LLM judge's rubric score), and the Hub's format has no "
            "field to tell them apart, so they would be ranked as LLM-judge scores; judge the run with an LLM "
            f"(`awbench judge {store.name} --judge-model MODEL`) and export that evaluation",
            key="rule_judge",
        )
    return chosen


def _common_notes(
    store: RunStore, manifest: RunManifest, info: JudgeInfo, scores: ScoresFile, subset: str | None
) -> list[str]:
    """[judge and protocol, failure policy, (subset), comparability, provenance]: the same in every entry."""
    settings = info.settings
    judge = (
        f"Judge: {settings.model} (temperature {settings.temperature:g}, {settings.samples} verdict"
        + ("s" if settings.samples > 1 else "")
        + " per prediction"
    )
    if settings.structured:
        judge += ", structured output"
    if settings.reasoning_effort:
        judge += f", reasoning effort {settings.reasoning_effort}"
    if settings.extra_body:
        judge += ", extra request fields"
    judge += f"), {_protocol(info)}."
    if scores.reference is not None:
        scoring = (
            "Scored as the reference eval.py prints it, from the same generations and judge answers (the rows "
            "it does not judge or cannot read are left out); awbench's strict score differs in "
            f"{scores.reference.differing} samples."
        )
    else:
        policy = {
            "minimum": "failed generations score 0 and count as scored",
            "exclude": "failed generations are left out, as the reference script leaves them out",
        }[scores.failure_policy]
        scoring = f"Failure policy {scores.failure_policy}: {policy}."
    notes = [judge, scoring]
    if scores.generations > 1:
        notes.append(f"The score of a sample is the mean over its {scores.generations} generations.")
    if subset is not None:
        notes.append(f"Subset, not the full benchmark: {subset}.")
    key = provenance(manifest, info, scores.failure_policy, scores.reference is not None)
    if key.published_protocol:
        notes.append(
            "Comparable with the published leaderboard: yes (the reference protocol with the published "
            "judge, on the full benchmark, scored as the reference script scores)."
        )
    else:
        reasons = "; ".join(_not_comparable(manifest, info, scores))
        notes.append(f"Comparable with the published leaderboard: no ({reasons}).")
    commit = f", commit {manifest.git_commit[:12]}" if manifest.git_commit else ""
    notes.append(
        f"Source: awbench {manifest.awbench_version}{commit}, run {store.name}, evaluation {info.id}, data "
        f"fingerprint {manifest.data_fingerprint[:12]}."
    )
    return notes


def _protocol(info: JudgeInfo) -> str:
    described = info.described
    protocol = described.get("protocol")
    sha = described.get("prompt_sha256") or "not recorded"
    if protocol == "reference":
        return (
            "reference protocol (the judge prompts of the Qwen-AgentWorld release, byte for byte; prompts sha256 "
            f"{sha})"
        )
    if protocol == "imported":
        return "judged outside awbench (imported from a judged.jsonl of the reference script; its prompts not recorded)"
    prompts = described.get("prompt_set")
    named = f"the {prompts} prompts of awbench" if prompts in BUILTIN_SETS else "custom prompts"
    if info.settings.template:
        named += " with a custom user template"
    return f"awbench protocol ({named}; prompts sha256 {sha})"


def _not_comparable(manifest: RunManifest, info: JudgeInfo, scores: ScoresFile) -> list[str]:
    reasons = []
    if info.described.get("protocol") != "reference":
        reasons.append("not the reference protocol")
    if not published_judge(info.settings):
        reasons.append(f"not the published judge ({DEFAULT_JUDGE_MODEL}, temperature 0.6, one free-form verdict)")
    if not full_benchmark(manifest):
        reasons.append("not the full benchmark with one generation per sample")
    if scores.reference is None and scores.failure_policy != "exclude":
        reasons.append(f"failure policy {scores.failure_policy}, where the published scores leave failures out")
    return reasons or ["its provenance differs"]


def _overall_what(scores: ScoresFile, subset: str | None) -> str:
    n = len([d for d in scores.domains.values() if d.score is not None])
    if subset is None:
        return f"AgentWorldBench Overall (0-100): the mean of the {n} domain scores"
    domains = ", ".join(DOMAIN_LABELS[d] for d, _ in _ordered(scores.domains))
    return f"AgentWorldBench Overall (0-100) of a subset: the mean of its {n} domain scores ({domains})"


def _counts(scores: ScoresFile, domain: str | None) -> str:
    parts: list[DomainScore] = list(scores.domains.values()) if domain is None else [scores.domains[domain]]
    n, scored = sum(d.n for d in parts), sum(d.scored for d in parts)
    failed, unscored = sum(d.failed for d in parts), sum(d.unscored for d in parts)
    k = scores.generations
    if k == 1:
        return f"Samples: {n:,}; scored: {scored:,}; failed: {failed:,}; unscored by the judge: {unscored:,}."
    return (
        f"Samples: {n:,}, {k} generations each; samples scored: {scored:,}; generations failed: {failed:,}, "
        f"unscored by the judge: {unscored:,}."
    )


def _ordered(domains: dict[str, DomainScore]) -> list[tuple[str, DomainScore]]:
    return sorted(domains.items(), key=lambda item: DOMAINS.index(item[0]))


def iso_utc(moment: datetime) -> str:
    """ISO-8601 in UTC to the second, as the Hub's examples write it: 2025-01-15T10:30:00Z. awbench records UTC;
    a time without a zone is taken as UTC."""
    utc = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ")

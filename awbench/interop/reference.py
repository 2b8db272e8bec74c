"""Files of the reference evaluation script (`eval.py` of the Qwen-AgentWorld release), both ways.

Its `predictions.jsonl` holds each benchmark record plus `gen` (the raw generation, "" when it failed);
its `judged.jsonl` adds `total_score` (the 1..5 mean of the valid scores), the five dimension scores (ints
1..5, 0 when missing), `failed` (0.0 or 1.0), `strengths`, `weaknesses`, `extracted_output`,
`judge_raw_output` and `error_message`. Its scores leave the `failed: 1.0` rows out.

Import is strict: every row is checked, its benchmark fields by the data loader, the reference's fields
here; a file with any error imports nothing, and nothing is coerced without a warning. The run is made in
a hidden directory beside its place and renamed into place only when complete, so a failed import leaves
nothing behind. A byte-order mark at the start of the file is accepted (it marks the encoding only), as the
data loader accepts it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import fmean
from typing import Any, TypeGuard

from pydantic import BaseModel

from awbench.config import (
    DataSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    ScoringSettings,
)
from awbench.data.dataset import LoadedData, conflicting_rows, load_samples, read_source
from awbench.data.json_lines import TOO_DEEP, parse_line, surrogate, value_problems
from awbench.data.problems import DataError, Problem
from awbench.domains import DIMENSIONS, to_100
from awbench.files import DIR_MODE, fsync_dir, open_input
from awbench.judging import llm_judge_id
from awbench.records import (
    Generation,
    JudgmentRecord,
    PredictionRecord,
    ReferenceReading,
    Sample,
    VerdictRecord,
)
from awbench.run.evaluations import REFERENCE_PROTOCOLS, resolve_judge, score_run
from awbench.run.reference_scores import reading
from awbench.run.scoring import ScoresFile
from awbench.run.store import (
    JudgeInfo,
    RunManifest,
    RunStore,
    StoreError,
    environment_facts,
    refuse_run_output,
    run_name_option,
    write_into_folder,
)
from awbench.world_model.predictions import prediction_record

IMPORTED_PROMPT_SET = "imported"
# The reference's error_message for a row it did not judge (no generation), and for a verdict it could not read.
NO_GENERATION = "No model generation"
JUDGE_FAILED = "Judge scoring failed"
SCORE_FIELDS = ("total_score", *DIMENSIONS)
TEXT_FIELDS = ("extracted_output", "judge_raw_output", "error_message")
LIST_FIELDS = ("strengths", "weaknesses")
# What the reference script adds to a benchmark record; an exported record carries none of them from before.
REFERENCE_FIELDS = frozenset({"gen", "failed", *SCORE_FIELDS, *TEXT_FIELDS, *LIST_FIELDS})
JUDGED_MARKERS = ("failed", *SCORE_FIELDS)  # a row with any of them is a judged.jsonl row
TOTAL_TOLERANCE = 0.01  # total_score may be rounded
MAX_TOTAL = 5  # total_score is the mean of the scores above 0, each at most 5, or 0


# --- Export ------------------------------------------------------------------------------------------------


def reference_prediction(sample: Sample, prediction: PredictionRecord | None) -> dict[str, Any]:
    """The benchmark record (without any reference field it carried in: an imported run's) plus `gen`: what the
    model answered, as the reference's inference stage keeps it (an empty or cut-off answer too; "" for none)."""
    record = {k: v for k, v in sample.record.model_dump(mode="json").items() if k not in REFERENCE_FIELDS}
    gen = "" if prediction is None else prediction.content
    return {**record, "gen": gen}


def _scored_verdict(judgment: JudgmentRecord) -> dict[str, int] | None:
    """One verdict's scores, integers as the reference format holds them: the first verdict that has any;
    else the judgment's dimensions when they are whole numbers (one verdict's)."""
    for verdict in judgment.verdicts:
        if verdict.scores:
            return dict(verdict.scores)
    if judgment.dimensions and all(float(v).is_integer() for v in judgment.dimensions.values()):
        return {d: int(v) for d, v in judgment.dimensions.items()}
    return None


def reference_judged(
    sample: Sample,
    prediction: PredictionRecord | None,
    judgment: JudgmentRecord | None,
    judge_id: str = "",
    as_read_by_reference: bool = False,
) -> dict[str, Any]:
    """One judged.jsonl row. What was not scored is a `failed: 1.0` row with the reason in error_message:
    without a generation as the reference writes it (no total_score), else with total_score 0.
    `as_read_by_reference`: the row holds the reference's reading of the answers (a reference-protocol or
    imported evaluation), so that `eval.py score` prints what awbench shows as the reference's numbers;
    otherwise awbench's strict reading."""
    row = reference_prediction(sample, prediction)
    if not row["gen"]:
        if prediction is None:
            reason = f"{NO_GENERATION} (the run has no prediction for this sample)"
        elif prediction.error and prediction.error.startswith(NO_GENERATION):  # an imported row's own reason
            reason = prediction.error
        else:
            reason = f"{NO_GENERATION} ({prediction.status}" + (f": {prediction.error})" if prediction.error else ")")
        return {**row, "failed": 1.0, "error_message": reason}
    extracted = prediction.prediction if prediction is not None else ""
    scores: Mapping[str, int | float] | None
    if as_read_by_reference:
        read = reading(judgment)
        scores = dict(read.scores) if read is not None and read.success else None
        total = read.total_score if read is not None else 0
        verdict = judgment.verdicts[0] if judgment is not None and judgment.verdicts else None
    else:
        scores = _scored_verdict(judgment) if judgment is not None and judgment.score is not None else None
        total = fmean(scores.values()) if scores else 0
        verdict = next((v for v in judgment.verdicts if v.scores), None) if judgment is not None else None
    if judgment is None or not scores:
        if judgment is None:
            reason = f"Not judged: judge {judge_id} has no verdict on this sample" if judge_id else "Not judged"
        else:
            reason = judgment.error or f"{JUDGE_FAILED} ({judgment.status})"
        return {**row, "total_score": 0, "failed": 1.0, "error_message": reason, "extracted_output": extracted}
    return {
        **row,
        "total_score": total,
        **{d: scores.get(d, 0) for d in DIMENSIONS},
        "failed": 0.0,
        "strengths": list(verdict.strengths) if verdict else [],
        "weaknesses": list(verdict.weaknesses) if verdict else [],
        "extracted_output": extracted,
        "judge_raw_output": (verdict.raw or "") if verdict else "",
    }


class Export(BaseModel):
    written: list[Path]
    notes: list[str]  # what was not written, and why


def export_reference(store: RunStore, samples: list[Sample], directory: Path, judge: str | None = None) -> Export:
    """predictions.jsonl always; judged.jsonl from an LLM evaluation (the named one, else the primary, else the
    first), since the reference format holds five rubric scores, which the rule judge does not give. Only
    what the format can hold is written: generation 0 of each sample, one verdict per sample."""
    if directory.exists() and not directory.is_dir():
        raise StoreError(
            f"--official {directory} is a file: give a directory to write predictions.jsonl and judged.jsonl into",
            key="not_a_directory",
        )
    refuse_run_output("--official", directory)
    manifest = store.read_manifest()
    predictions = store.predictions.load()
    evaluations = [e for e in store.evaluations() if e.read_info().kind == "llm"]
    chosen = resolve_judge(store, judge) if judge is not None else (evaluations[0] if evaluations else None)
    if chosen is not None and chosen.read_info().kind != "llm":
        raise StoreError(
            f"judge {chosen.id} is the rule judge: judged.jsonl holds the five rubric scores of an LLM judge"
        )
    directory.mkdir(parents=True, exist_ok=True)
    pred_path, judged_path = directory / "predictions.jsonl", directory / "judged.jsonl"
    predictions_text = "".join(_line(reference_prediction(s, predictions.get((s.key, 0)))) for s in samples)
    write_into_folder("--official", pred_path, predictions_text)
    written, notes = [pred_path], []
    if chosen is None:
        notes.append(
            f"judged.jsonl not written: run {store.name} has no LLM-judge scores, and the reference format "
            "holds five rubric scores per sample (rule scores have none)"
        )
        if judged_path.exists():
            notes.append(
                f"{judged_path} was left as it was: it is not from this export; remove it, so that it is "
                "not read with the new predictions.jsonl"
            )
    else:
        judgments = chosen.judgments.load()
        by_reference = chosen.read_info().described.get("protocol") in REFERENCE_PROTOCOLS
        rows = [
            reference_judged(s, predictions.get((s.key, 0)), judgments.get((s.key, 0)), chosen.id, by_reference)
            for s in samples
        ]
        write_into_folder("--official", judged_path, "".join(_line(row) for row in rows))
        written.append(judged_path)
        if by_reference:
            notes.append(
                f"judged.jsonl holds the reference's reading of judge {chosen.id}'s answers: `eval.py score` prints "
                f"for it what `awbench score {store.name} --format reference` prints"
            )
        unscored = sum(row["failed"] != 0.0 for row in rows)
        if unscored:
            notes.append(
                f"{unscored} of {len(rows)} samples have no score from judge {chosen.id}: written as failed "
                "(failed 1.0) with the reason in error_message"
            )
        verdicts = max([chosen.read_info().settings.samples, *(len(j.verdicts) for j in judgments.values())])
        if verdicts > 1:
            notes.append(
                f"judged.jsonl holds one verdict per sample, the first scored one (judge {chosen.id} gave up "
                f"to {verdicts}): the reference format holds one; awbench's scores are their mean"
            )
    generations = manifest.config.model.generations
    if generations > 1:
        notes.append(
            f"only generation 0 of each sample's {generations} generations was exported: the reference "
            "format holds one per sample"
        )
    return Export(written=written, notes=notes)


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


# --- Import: reading and checking --------------------------------------------------------------------------


@dataclass
class _Row:
    line: int
    fields: dict[str, Any]  # the reference fields the row has


@dataclass
class _Reading:
    data: bytes  # the file's bytes; emptied once the rows are read, unless a copy must be made of them
    sha256: str
    rows: dict[int, _Row] = field(default_factory=dict)  # line -> row, for every line read as an object
    problems: list[Problem] = field(default_factory=list)
    unreadable: set[int] = field(default_factory=set)  # lines kept from the data loader (it would fail on them)
    judged_at: int | None = None  # the first line with a judged field
    judged_by: str = ""  # which


def _shown(value: Any) -> str:
    """A value as the file has it, short: 4.7, "4", true, null, NaN; "a list", "an object"."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, int) and not isinstance(value, bool) and len(digits := str(value)) > 40:
        return f"{digits[:40]}… ({len(digits.lstrip('-'))} digits)"
    if isinstance(value, str) and len(value) > 40:
        value = value[:40] + "…"
    # Text that is not valid Unicode is shown escaped, as it could not be printed.
    return json.dumps(value, ensure_ascii=isinstance(value, str) and surrogate(value) is not None)


def _number(value: Any) -> TypeGuard[int | float]:
    """A number the reference's arithmetic takes: an integer of any size (its judge parser keeps a judge's
    negative score whole), `true` and `false` too (eval.py averages them as 1 and 0), a finite float."""
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _parse_line(raw: bytes, number: int, label: str) -> tuple[dict[str, Any] | None, list[Problem]]:
    """The line's object and what makes it unreadable for awbench (deep nesting, repeated keys, text that
    is not Unicode). A line that is not a JSON object at all gives (None, []): the data loader reports it."""
    obj, problems = parse_line([raw], number, 0, label)
    if obj is None:
        return None, [problem for problem in problems if problem.message == TOO_DEEP]
    return obj, problems + value_problems(obj.items(), label, number)


def _awbench_kind(obj: dict[str, Any]) -> str | None:
    """What awbench file a first record comes from, if it is one."""
    keys = obj.keys()
    if {"key", "sample_hash", "status"} <= keys:
        return "an awbench run's predictions.jsonl"
    if {"key", "judge", "cache_key"} <= keys:
        return "an awbench run's judgments.jsonl (judges/<judge id>/judgments.jsonl)"
    if {"key", "reward"} <= keys:
        return "an awbench rewards file (awbench score --reward)"
    if {"config", "data_fingerprint"} <= keys:
        return "an awbench run's run.json"
    if {"run", "failure_policy", "domains"} <= keys:
        return "an awbench scores.json"
    if {"id", "kind", "settings"} <= keys:
        return "an awbench run's judge.json (judges/<judge id>/judge.json)"
    return None


def _refuse_awbench_file(path: Path, label: str, kind: str) -> DataError:
    run_dir = next((d for d in list(path.absolute().parents)[:3] if (d / "run.json").is_file()), None)
    if run_dir is None:
        use = "awbench score RUN, awbench leaderboard DIR"
    else:
        shown = run_dir if path.is_absolute() else Path(os.path.relpath(run_dir))
        use = f"awbench score {shown}, awbench leaderboard {shown.parent}"
    return DataError(
        f"{label} is {kind}, not a file of the reference script: awbench runs are used as they are, "
        f"without importing ({use})",
        key="not_a_reference_file",
    )


def refuse_awbench_json(path: Path) -> None:
    """DataError when `path` is one of an awbench run's JSON files (run.json, scores.json, judge.json), given to
    an import by mistake (the inspect log import reads `.json` files too)."""
    try:
        with open_input(path) as file:
            document = json.loads(file.read().decode("utf-8-sig"))
    except (OSError, ValueError, RecursionError):
        return
    if isinstance(document, dict) and (kind := _awbench_kind(document)):
        raise _refuse_awbench_file(path, str(path), kind)


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """(number, line) split on "\n" only, as the data loader splits (records hold U+2028 and the like), one
    line at a time: a large file is not held twice."""
    start, number = 0, 0
    while start <= len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        yield number, data[start:end]
        start = end + 1


def _read(path: Path, label: str) -> _Reading:
    """Every line of a reference file read and its reference fields checked; what is wrong with the file as
    a whole raises DataError in one line."""
    if path.is_dir():
        raise DataError(
            f"{label} is a directory: give the reference script's predictions.jsonl or judged.jsonl", key="not_a_file"
        )
    try:
        with open_input(path) as file:
            data = file.read()
    except FileNotFoundError:
        raise DataError(f"no such file: {label}", key="no_such_file") from None
    except OSError as error:
        raise DataError(f"cannot read {label}: {error.strerror or error}") from None
    reading = _Reading(data, hashlib.sha256(data).hexdigest())
    first_line_read: bool | None = None  # whether the first non-blank line is a JSON object
    for number, raw in _lines(data):
        if not raw.strip():
            continue
        obj, problems = _parse_line(raw, number, label)
        if first_line_read is None:
            first_line_read = obj is not None or bool(problems)
            if obj is not None and (kind := _awbench_kind(obj)):
                raise _refuse_awbench_file(path, label, kind)
        if problems:
            reading.problems += problems
            reading.unreadable.add(number)
        if obj is None:
            continue
        reading.rows[number] = _Row(number, {k: v for k, v in obj.items() if k in REFERENCE_FIELDS})
        if reading.judged_at is None and (marker := next((k for k in JUDGED_MARKERS if k in obj), None)):
            reading.judged_at, reading.judged_by = number, marker
    if first_line_read is False:
        _refuse_json_document(path, label, data)
    if reading.rows and not any("gen" in row.fields for row in reading.rows.values()):
        raise DataError(
            f"{label}: no row has a 'gen' field, so this is not the reference script's predictions.jsonl "
            f"or judged.jsonl (they add the model's generation, 'gen', to each benchmark record); "
            f"benchmark data is evaluated with `awbench run --data {label}`"
        )
    for row in reading.rows.values():
        reading.problems += _row_problems(row, reading, label)
    if not reading.unreadable:
        reading.data = b""  # the data loader reads the file itself
    return reading


def _refuse_json_document(path: Path, label: str, data: bytes) -> None:
    """A file whose first line is not a JSON object may be one JSON document (run.json, scores.json, an
    array of rows): said in one line instead of an error on every line."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return
    if isinstance(document, dict) and (kind := _awbench_kind(document)):
        raise _refuse_awbench_file(path, label, kind)
    what = "a JSON array" if isinstance(document, list) else "one JSON document"
    raise DataError(f"{label} is {what}, not JSON Lines: the reference script writes one JSON object per line")


def _row_problems(row: _Row, reading: _Reading, label: str) -> list[Problem]:
    """The reference fields of one row: errors for what is wrong, warnings for what is suspicious."""
    problems: list[Problem] = []
    values = row.fields

    def add(name: str | None, message: str, severity: str = "error") -> None:
        problems.append(Problem(label, row.line, name, message, severity))  # type: ignore[arg-type]

    gen = values.get("gen")
    if "gen" not in values:
        add("gen", "missing field: every row of the reference script's files has the generation")
    elif not isinstance(gen, str):
        add("gen", f"expected a string, got {_shown(gen)}")
    for name in TEXT_FIELDS:
        if name in values and not isinstance(values[name], str):
            add(name, f"expected a string, got {_shown(values[name])}")
    for name in LIST_FIELDS:
        if name not in values:
            continue
        items = values[name]
        if not isinstance(items, list):
            add(name, f"expected a list of strings, got {_shown(items)}")
            continue
        for i, item in enumerate(items):
            if not isinstance(item, str):
                add(f"{name}.{i}", f"expected a string, got {_shown(item)}")
    if reading.judged_at is None:
        return problems
    failed = values.get("failed")
    if "failed" not in values:
        add(
            "failed",
            f"missing field: this is a judged.jsonl (line {reading.judged_at} has {reading.judged_by}), "
            "and every row of one has failed (0.0 or 1.0)",
        )
        failed = None
    elif not _number(failed) or failed not in (0, 1):
        add("failed", f"expected 0.0 or 1.0, got {_shown(failed)}")
        failed = None
    total = values.get("total_score")
    if "total_score" in values and not (_number(total) and 0 <= total <= MAX_TOTAL):
        add(
            "total_score",
            f"expected a number 0..{MAX_TOTAL} (the mean of the scores above 0, or 0), got {_shown(total)}",
        )
        total = None
    scores: dict[str, int | float] = {}
    for name in DIMENSIONS:
        if name not in values:
            if failed == 0:
                add(name, "missing field: a scored row (failed 0.0) has all five dimension scores, 0 for a missing one")
            continue
        value = values[name]
        if not _number(value) or not (isinstance(value, int) or value.is_integer()) or value > 5:
            add(
                name,
                f"expected an integer score 1..5 (0 or false for a missing one; the reference keeps negative ones), "
                f"got {_shown(value)}",
            )
        else:
            scores[name] = value
    if failed == 1:
        given = [n for n in SCORE_FIELDS if n in values and _number(values[n]) and values[n] != 0]
        if given:
            add(
                "failed",
                f"1.0, yet the row has scores ({', '.join(given)}): they are left out, as the reference "
                "leaves failed rows out",
                "warning",
            )
    elif failed == 0:
        if isinstance(gen, str) and not gen:
            add("failed", "0.0, but gen is empty: the reference script marks a row without a generation failed (1.0)")
        for name, value in scores.items():
            if value == 0:
                add(
                    name,
                    "0, the reference's mark of a missing or unusable score: left out of its means and of the "
                    "strict score",
                    "warning",
                )
            elif value < 0:
                add(
                    name,
                    f"{_shown(value)}, below 1: the reference averages it into its {name} line and leaves it out of "
                    "the total; the strict score leaves it out",
                    "warning",
                )
        valid = [v for v in scores.values() if v > 0]
        if len(scores) == len(DIMENSIONS) and not valid:
            add(
                "failed",
                "0.0, but no dimension score is 1..5: the reference counts the row with a total of 0 (left "
                "out of its means); it has no strict score",
                "warning",
            )
        complete = len(scores) == len(DIMENSIONS)
        if total is not None and valid and complete and abs(total - fmean(valid)) > TOTAL_TOLERANCE:
            add(
                "total_score",
                f"{_shown(total)} is not {fmean(valid):g}, the mean of the dimension scores: the dimensions are used",
                "warning",
            )
    return problems


def _data_problems(path: Path, label: str, reading: _Reading) -> tuple[LoadedData | None, list[Problem]]:
    """The data loader's reading of the benchmark fields, its messages naming the file as `label`. Lines it
    would fail on (already reported) are blanked in a copy it reads instead; nothing is imported then."""
    if reading.unreadable:
        with tempfile.TemporaryDirectory(prefix="awbench-import-") as tmp:
            copy = Path(tmp) / path.name  # the same name: the loader checks a `{domain}_test.jsonl` name
            lines = reading.data.split(b"\n")
            copy.write_bytes(b"\n".join(b"" if i in reading.unreadable else raw for i, raw in enumerate(lines, 1)))
            _, problems = read_source(str(copy))
            problems = [p for p in problems if not (p.line is None and p.message == "no records")]
            return None, _relabelled(problems, str(copy), label)
    loaded = load_samples(DataSettings(source=str(path.resolve()), skip_invalid=True))
    return loaded, _relabelled(loaded.problems, str(Path(loaded.source)), label)


def _relabelled(problems: list[Problem], old: str, new: str) -> list[Problem]:
    return [replace(p, path=new) if p.path == old else p for p in problems]


# --- Import: the run ---------------------------------------------------------------------------------------


@dataclass
class Imported:
    store: RunStore
    predictions: int
    judgments: int
    judge_id: str | None
    without_generation: int  # rows with gen "" (failed 1.0 in a judged file)
    judge_failed: int  # judged rows with failed 1.0 and a generation
    scores: ScoresFile | None  # the imported evaluation's, when the file is a judged.jsonl
    warnings: list[Problem]
    notes: list[str]


def imported_judgment(sample: Sample, fields: dict[str, Any]) -> JudgmentRecord | None:
    """A checked judged row as a judgment; None when the reference script never judged it (no generation)."""
    if not fields.get("gen"):
        return None
    common = {"key": sample.key, "domain": sample.domain, "judge": "llm", "cache_key": IMPORTED_PROMPT_SET}
    if fields["failed"] != 0:
        failed = VerdictRecord(
            status="unparsed",
            error=fields.get("error_message") or JUDGE_FAILED,
            reference=ReferenceReading(success=False),
        )
        return JudgmentRecord(**common, status="failed", error=failed.error, verdicts=[failed])
    given = {d: fields[d] for d in DIMENSIONS}  # as the file has them: eval.py's arithmetic takes them so
    reference = ReferenceReading(success=True, scores=given, total_score=fields.get("total_score", 0), attempt=1)
    scores = {d: int(v) for d, v in given.items() if v > 0}  # the strict reading: scores on the rubric's scale only
    status = "complete" if len(scores) == len(DIMENSIONS) else "partial" if scores else "unparsed"
    verdict = VerdictRecord(
        status=status,
        scores=scores,
        strengths=list(fields.get("strengths", [])),
        weaknesses=list(fields.get("weaknesses", [])),
        raw=fields.get("judge_raw_output"),
        reference=reference,
    )
    if not scores:
        return JudgmentRecord(**common, status="failed", error="no dimension score is 1..5", verdicts=[verdict])
    return JudgmentRecord(
        **common,
        status="ok" if verdict.status == "complete" else "partial",
        score=to_100(fmean(scores.values())),
        dimensions={d: float(v) for d, v in scores.items()},
        verdicts=[verdict],
    )


def _generation(sample: Sample, fields: dict[str, Any]) -> Generation:
    """A row's generation as a backend would have returned it; an empty one keeps the reason the file gives."""
    note = None if fields["gen"] else fields.get("error_message") or NO_GENERATION
    return Generation(key=sample.key, text=fields["gen"], finish_reason="stop", note=note)


def _check_target(target: Path, overwrite: bool) -> None:
    """Refused before anything is written: a link in the way (`RunStore.refuse_link`), a file, a run without
    --overwrite, a directory that is not a run (never removed, even with --overwrite)."""
    RunStore(target).refuse_link()
    if not target.exists():
        return
    if not target.is_dir():
        raise StoreError(f"{target} exists and is not a directory", key="not_a_run")
    if (target / "run.json").exists():
        if not overwrite:
            raise StoreError(f"run {target} exists already; use --overwrite to replace it", key="run_exists")
        return
    if any(target.iterdir()):
        raise StoreError(
            f"{target} exists and is not an awbench run (it has no run.json); choose another --run-name, or remove it",
            key="not_a_run",
        )


@contextmanager
def _staging(output: Path, run_name: str) -> Iterator[Path]:
    """A hidden directory beside the run's place, removed on any error (with --output, if made for it)."""
    made_output = not output.exists()
    output.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=output, prefix=f".{run_name}.importing-"))
    try:
        os.chmod(staging, DIR_MODE)
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if made_output:
            try:
                output.rmdir()
            except OSError:
                pass  # something else is in it now
        raise


def _move_into_place(staging: Path, target: Path, overwrite: bool) -> None:
    """Rename the complete run into place; a run there (with --overwrite) is moved aside under its lock,
    then removed, and put back if the rename fails."""
    with ExitStack() as stack:
        aside = None
        if overwrite and (target / "run.json").exists():
            stack.enter_context(RunStore(target).locked())
            aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.replaced-"))
            os.rename(target, aside)  # onto the empty directory mkdtemp made
        try:
            os.rename(staging, target)
        except OSError as error:
            if aside is not None:
                os.rename(aside, target)  # the replaced run, back as it was
            elif target.exists():
                raise StoreError(
                    f"run {target} exists already (made while importing); use --overwrite to replace it"
                ) from None
            raise StoreError(f"cannot rename {staging} to {target}: {error.strerror or error}") from None
    fsync_dir(target.parent)
    if aside is not None:
        shutil.rmtree(aside, ignore_errors=True)


def write_run(
    manifest: RunManifest,
    predictions: list[PredictionRecord],
    evaluation: tuple[JudgeInfo, list[JudgmentRecord]] | None,
    overwrite: bool,
) -> RunStore:
    """A run made from another tool's records (with one evaluation, or none), built in a hidden directory
    beside its place and renamed into place only when complete: a failed import leaves nothing behind."""
    target = manifest.config.run_dir
    _check_target(target, overwrite)
    with _staging(manifest.config.output, manifest.config.run_name) as staging:
        store = RunStore(staging)
        with store.predictions.appender() as append:
            for prediction in predictions:
                append(prediction)
        if evaluation is not None:
            info, judgments = evaluation
            stored = store.evaluation(info.id)
            stored.ensure(info)
            with stored.judgments.appender() as append:
                for judgment in judgments:
                    append(judgment)
        store.write_manifest(manifest)  # last: a directory without run.json is no run to anything that looks
        _move_into_place(staging, target, overwrite)
    return RunStore(target)


def import_reference(
    path: Path, run_name: str, output: Path, model: str | None, judge_model: str | None, overwrite: bool = False
) -> Imported:
    """Make a run from a reference `predictions.jsonl` or `judged.jsonl`. Every row is checked first; any
    error raises DataError listing every problem (`problems`), with nothing written."""
    run_name_option(run_name)
    label = str(path)
    reading = _read(path, label)
    loaded, data_problems = _data_problems(path, label, reading)
    conflicts = conflicting_rows(loaded.samples, label) if loaded is not None else []
    problems = sorted(data_problems + conflicts + reading.problems, key=lambda p: p.line or 0)
    errors = [p for p in problems if p.severity == "error"]
    if errors or loaded is None:
        raise DataError(
            f"{label}: {len(errors)} error(s) in the file; nothing was imported: fix them, then import again",
            problems=problems,
        )
    rows = {row.line: row.fields for row in reading.rows.values()}
    lines = [int(s.origin.rsplit(":", 1)[1]) for s in loaded.samples]
    taken_once = {p.line for p in problems if p.line is not None and p.line not in lines}  # repeats, warned of
    if set(lines) | taken_once != set(rows):
        raise DataError(f"{label} changed while it was read; nothing was imported: import it again")
    data = DataSettings(source=str(path.resolve()))

    judged = reading.judged_at is not None
    notes: list[str] = []
    predictions = [prediction_record(s, _generation(s, rows[n])) for s, n in zip(loaded.samples, lines)]
    for prediction, n in zip(predictions, lines):
        if judged and prediction.failed and rows[n]["gen"] and rows[n]["failed"] == 0:
            problems.append(
                Problem(
                    label,
                    n,
                    "gen",
                    "holds no prediction once its thinking is removed: awbench "
                    "counts it as a failed generation, where the reference scored it",
                    "warning",
                )
            )
    problems.sort(key=lambda p: p.line or 0)
    judgments = [imported_judgment(s, rows[n]) for s, n in zip(loaded.samples, lines)] if judged else []
    if judged and not judge_model:
        notes.append(
            f"the judge that scored {label} is not known: recorded as {IMPORTED_PROMPT_SET!r}; give it with "
            "--judge-model"
        )
    if judge_model and not judged:
        notes.append(
            f"--judge-model {judge_model} is not used: {label} has no scores (a predictions.jsonl); judge the "
            "run with `awbench judge`"
        )
    judge_settings = (
        JudgeSettings(kind="llm", model=judge_model or IMPORTED_PROMPT_SET, prompts=IMPORTED_PROMPT_SET)
        if judged
        else None
    )
    config = RunConfig(
        run_name=run_name,
        output=output,
        data=data,
        # The rows do not name the model; the file's name ("predictions", "judged") would name every import alike.
        model=ModelSettings(model=model or run_name, backend="imported"),
        judge=judge_settings,
        # The reference leaves failed rows out of its means (awbench's default counts a failed generation as 0).
        scoring=ScoringSettings(failure_policy="exclude") if judged else ScoringSettings(),
    )
    judge_id = llm_judge_id(judge_settings, IMPORTED_PROMPT_SET, "") if judge_settings else None
    described = {
        "protocol": "imported",
        "prompt_set": IMPORTED_PROMPT_SET,
        "prompt_sha256": "",
        "source": str(path.resolve()),
        "source_sha256": reading.sha256,
    }
    manifest = RunManifest(
        config=config,
        data_source=loaded.source,
        data_fingerprint=loaded.fingerprint,
        samples=len(loaded.samples),
        primary_judge=judge_id,
        primary_described=described if judged else {},
        **environment_facts(),
    )
    evaluation = (
        (
            JudgeInfo(id=judge_id, kind="llm", settings=judge_settings, described=described),
            [j for j in judgments if j is not None],
        )
        if judge_settings is not None and judge_id is not None  # a judged file: its evaluation
        else None
    )
    store = write_run(manifest, predictions, evaluation, overwrite)
    scores = score_run(store, loaded.samples).get(judge_id or "") if judged else None
    return Imported(
        store=store,
        predictions=len(predictions),
        judgments=sum(j is not None for j in judgments),
        judge_id=judge_id,
        without_generation=sum(not rows[n]["gen"] for n in lines),
        judge_failed=sum(bool(rows[n]["gen"]) and rows[n]["failed"] != 0 for n in lines) if judged else 0,
        scores=scores,
        warnings=[p for p in problems if p.severity == "warning"],
        notes=notes,
    )

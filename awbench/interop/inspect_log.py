"""`awbench import LOG`: an inspect_ai log of the task `awbench/agentworldbench` (`.eval` or `.json`) as a run.

The log holds what the run needs: the task's data selection and judge settings (the task's metadata) and, in
each sample's Score, awbench's own prediction and judgment records (`awbench.interop.inspect_task`). They are
checked as awbench reads its own files, against the data reloaded from the same source (the same fingerprint);
a sample inspect could not run (its error in the log) is a failed generation, as in an awbench run. Any
problem imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig, ScoringSettings
from awbench.data.dataset import load_samples
from awbench.data.json_lines import value_problems
from awbench.data.problems import DataError, Problem
from awbench.files import open_input
from awbench.interop.reference import refuse_awbench_json, write_run
from awbench.records import Generation, JudgmentRecord, PredictionRecord, Sample
from awbench.run.evaluations import score_run
from awbench.run.scoring import FailurePolicy, ScoresFile
from awbench.run.store import JudgeId, JudgeInfo, RunManifest, environment_facts, run_name_option
from awbench.world_model.predictions import prediction_record

TASK_NAME = "agentworldbench"  # awbench.interop.inspect_task registers it under this name
METADATA_KEY = "awbench"  # the task's metadata: what the import needs to rebuild the run
INSPECT_LOG_SUFFIXES = (".eval", ".json")  # inspect's two log formats; the reference script writes .jsonl


class TaskMetadata(BaseModel):
    """What the task wrote into the log's metadata (`awbench.interop.inspect_task.agentworldbench`)."""

    awbench_version: str
    data: DataSettings
    data_source: str
    data_fingerprint: str
    judge: JudgeSettings
    judge_inspect_model: str | None
    judge_id: JudgeId  # a folder of the run: checked as every judge id awbench reads
    judge_described: dict[str, Any]
    failure_policy: FailurePolicy


@dataclass
class InspectImport:
    run: Path
    predictions: int
    judgments: int
    failed_in_inspect: int  # samples inspect could not run: failed generations
    scores: ScoresFile | None
    notes: list[str]


def read_log(path: Path) -> Any:
    """The log, or DataError in one line: a missing file, an awbench run's own JSON file given by mistake (said
    whether or not inspect_ai is installed), or one inspect_ai cannot read."""
    try:
        open_input(path).close()  # a FIFO or a device is refused before inspect_ai opens it
    except FileNotFoundError:
        raise DataError(f"no such file: {path}") from None
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    if path.suffix == ".json":
        refuse_awbench_json(path)
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise DataError(
            f"{path}: reading an inspect_ai log needs inspect_ai: pip install 'awbench[inspect]'", key="missing_extra"
        ) from None
    try:
        return read_eval_log(str(path))
    except Exception as error:  # inspect raises what its readers raise: zip, JSON, validation errors
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise DataError(f"{path}: not an inspect_ai log that can be read ({reason})") from None


def task_metadata(path: Path, log: Any) -> TaskMetadata:
    task = log.eval.task
    metadata = (log.eval.metadata or {}).get(METADATA_KEY)
    if task.rsplit("/", 1)[-1] != TASK_NAME or metadata is None:
        raise DataError(f"{path}: a log of the inspect task {task!r}, not of awbench/{TASK_NAME}")
    try:
        return TaskMetadata.model_validate(metadata)
    except ValidationError as error:
        raise DataError(f"{path}: the task's metadata ({METADATA_KEY}) cannot be read: {_first(error)}") from None


def _first(error: ValidationError) -> str:
    first = error.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


def sample_records(
    path: Path, log_sample: Any, sample: Sample
) -> tuple[PredictionRecord | None, JudgmentRecord | None, list[Problem]]:
    """One log sample's records; a sample inspect could not run (no score) is a failed generation."""
    where = f"sample {log_sample.id}"
    scores = list((log_sample.scores or {}).values())
    if not scores:
        reason = log_sample.error.message if log_sample.error else "no score in the log"
        generation = Generation(key=sample.key, error=f"inspect_ai: {reason.splitlines()[0][:500]}")
        return prediction_record(sample, generation), None, []
    metadata = scores[0].metadata or {}
    problems = []
    records: dict[str, Any] = {}
    for name, model in (("prediction", PredictionRecord), ("judgment", JudgmentRecord)):
        value = metadata.get(name)
        if value is None and name == "judgment":
            records[name] = None
            continue
        if isinstance(value, dict) and (found := value_problems(value.items(), str(path), None, finite=True)):
            problems += [Problem(str(path), None, f"{where}: {name}.{p.field}", p.message) for p in found]
            continue
        try:
            records[name] = model.model_validate(value, strict=True)  # a number is a number, never "80"
        except ValidationError as error:
            for item in error.errors():
                field = ".".join([name, *(str(p) for p in item["loc"])])
                problems.append(Problem(str(path), None, f"{where}: {field}", item["msg"]))
    prediction, judgment = records.get("prediction"), records.get("judgment")
    if judgment is not None:
        problems += [Problem(str(path), None, f"{where}: judgment.{f}", m) for f, m in off_scale(judgment)]
    for record in (prediction, judgment):
        if record is not None and (record.key, record.domain) != (sample.key, sample.domain):
            problems.append(Problem(str(path), None, f"{where}: key", f"{record.key!r} is not this sample's key"))
    if prediction is not None and prediction.sample_hash != sample.hash:
        problems.append(
            Problem(str(path), None, f"{where}: prediction.sample_hash", "is not the hash of the data's sample")
        )
    return prediction, judgment, problems


def off_scale(judgment: JudgmentRecord) -> list[tuple[str, str]]:
    """(field, message) for each number of `judgment` off awbench's scales, which the task's records are on: the
    rubric's 1..5 of a verdict's scores, the rule judge's 0..1 (the judgment's score, dimensions and cost the
    record itself bounds). Such a record was not written by awbench, and its scores would be averaged as given."""
    numbers: list[tuple[str, float | None, float, float]] = []
    for i, verdict in enumerate(judgment.verdicts):
        numbers += [(f"verdicts.{i}.scores.{d}", v, 1, 5) for d, v in verdict.scores.items()]
    if judgment.rule is not None:
        numbers.append(("rule.score", judgment.rule.score, 0, 1))
        numbers += [(f"rule.parts.{part}", v, 0, 1) for part, v in judgment.rule.parts.items()]
    return [
        (name, f"{value:g} is off awbench's scale, {low:g} to {high:g}")
        for name, value, low, high in numbers
        if value is not None and not low <= value <= high
    ]


def import_inspect_log(
    path: Path, run_name: str, output: Path, model: str | None = None, overwrite: bool = False
) -> InspectImport:
    """Make a run from an inspect log of awbench/agentworldbench. Raises DataError listing every problem,
    with nothing written."""
    run_name_option(run_name)
    log = read_log(path)
    meta = task_metadata(path, log)
    if log.eval.config.epochs not in (None, 1):
        raise DataError(f"{path}: a log of {log.eval.config.epochs} epochs; awbench imports one epoch per sample")
    if not log.samples:
        raise DataError(f"{path}: the log holds no samples (was it written with --no-log-samples?)")
    loaded = load_samples(meta.data)
    if loaded.fingerprint != meta.data_fingerprint:
        raise DataError(
            f"{path}: the data at {loaded.source} is not what the log was made with "
            f"(fingerprint {meta.data_fingerprint[:12]}, now {loaded.fingerprint[:12]})"
        )
    by_key = {s.key: s for s in loaded.samples}
    problems: list[Problem] = []
    predictions: list[PredictionRecord] = []
    judgments: list[JudgmentRecord] = []
    failed_in_inspect = 0
    notes = []
    first: dict[str, tuple[int, Any]] = {}  # sample key -> where the log first has it, and its records
    for number, log_sample in enumerate(log.samples, start=1):
        sample = by_key.get(str(log_sample.id))
        if sample is None:
            problems.append(Problem(str(path), None, f"sample {log_sample.id}", "is no sample of the task's data"))
            continue
        prediction, judgment, found = sample_records(path, log_sample, sample)
        problems += found
        if found or prediction is None:
            continue
        earlier, records = first.setdefault(sample.key, (number, (prediction, judgment)))
        if earlier != number:  # the same sample again: alike, it is one; else which to take is not known
            twice = f"sample {log_sample.id} is in the log twice (its samples {earlier} and {number})"
            if records == (prediction, judgment):
                notes.append(f"warning: {path}: {twice}, alike: imported once")
            else:
                problems.append(Problem(str(path), None, twice, "with other records: which to import is not known"))
            continue
        predictions.append(prediction)
        judgments += [judgment] if judgment is not None else []
        failed_in_inspect += not log_sample.scores
    if problems:
        raise DataError(f"{path}: {len(problems)} error(s) in the log; nothing was imported", problems=problems)

    # A finished eval may hold part of the task's selection on purpose (inspect's --limit, --sample-id): the run
    # is what it holds. One that stopped (error, cancelled) keeps the whole selection: what it did not reach is
    # pending, and the run incomplete.
    data = meta.data
    missing = len(loaded.samples) - len(predictions)
    if missing and log.status == "success":
        # the keys alone: a limit or a random sample would be drawn again from them
        data = data.model_copy(update={"ids": [p.key for p in predictions], "limit": None, "sample": None})
        loaded = load_samples(data)
    elif missing:
        notes.append(
            f"the eval ended with status {log.status!r}: {missing} samples of the task's selection are not in the "
            "log, so the run is incomplete"
        )
    judge = meta.judge
    config = RunConfig(
        run_name=run_name,
        output=output,
        data=data,
        model=ModelSettings(model=model or log.eval.model, backend="imported"),
        judge=judge,
        scoring=ScoringSettings(failure_policy=meta.failure_policy),
    )
    judge_id = meta.judge_id
    described = {**meta.judge_described, "source": str(path.resolve()), "inspect_task": log.eval.task}
    facts = environment_facts()
    facts["packages"] |= {name: version for name, version in log.eval.packages.items() if name == "inspect_ai"}
    manifest = RunManifest(
        config=config,
        data_source=loaded.source,
        data_fingerprint=loaded.fingerprint,
        samples=len(loaded.samples),
        primary_judge=judge_id,
        primary_described=described,
        **facts,
    )
    info = JudgeInfo(id=judge_id, kind="rules" if judge.kind == "rules" else "llm", settings=judge, described=described)
    store = write_run(manifest, predictions, (info, judgments), overwrite)
    scores = score_run(store, loaded.samples).get(judge_id)
    return InspectImport(store.path, len(predictions), len(judgments), failed_in_inspect, scores, notes)

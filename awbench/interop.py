"""Files of the reference evaluation script (`eval.py` of the Qwen-AgentWorld release), both ways.

Its `predictions.jsonl` holds each benchmark record plus `gen` (the raw generation, "" when it failed);
its `judged.jsonl` adds `total_score` (the 1..5 mean), the five dimension scores, `failed` (0.0 or 1.0),
`strengths`, `weaknesses`, `extracted_output`, `judge_raw_output` and `error_message`.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

from pydantic import BaseModel

from awbench.config import DataSettings, JudgeSettings, ModelSettings, RunConfig
from awbench.data_problems import DataError
from awbench.dataset import load_samples
from awbench.domains import DIMENSIONS
from awbench.predictions import prediction_record
from awbench.records import Generation, JudgmentRecord, PredictionRecord, Sample, VerdictRecord
from awbench.scoring import to_100
from awbench.evaluations import resolve_judge
from awbench.judging import llm_judge_id
from awbench.store import JudgeInfo, RunManifest, RunStore, StoreError, environment_facts, write_atomic

IMPORTED_PROMPT_SET = "imported"


def official_prediction(sample: Sample, prediction: PredictionRecord | None) -> dict[str, Any]:
    gen = "" if prediction is None or prediction.failed else (prediction.raw or prediction.prediction)
    return {**sample.record.model_dump(mode="json"), "gen": gen}


def official_judged(sample: Sample, prediction: PredictionRecord | None, judgment: JudgmentRecord | None) -> dict[str, Any]:
    row = official_prediction(sample, prediction)
    extracted = prediction.prediction if prediction else ""
    if judgment is None or judgment.score is None:
        reason = "No model generation" if not row["gen"] else (judgment.error if judgment else None) or "Judge scoring failed"
        return {**row, "total_score": 0, "failed": 1.0, "error_message": reason, "extracted_output": extracted}
    verdict = judgment.verdicts[-1] if judgment.verdicts else None
    return {
        **row,
        "total_score": fmean(judgment.dimensions.values()),
        **{d: judgment.dimensions.get(d, 0) for d in DIMENSIONS},
        "failed": 0.0,
        "strengths": verdict.strengths if verdict else [],
        "weaknesses": verdict.weaknesses if verdict else [],
        "extracted_output": extracted,
        "judge_raw_output": verdict.raw if verdict else "",
    }


class Export(BaseModel):
    written: list[Path]
    notes: list[str]  # what was not written, and why


def export_official(store: RunStore, samples: list[Sample], directory: Path, judge: str | None = None) -> Export:
    """predictions.jsonl always; judged.jsonl from an LLM evaluation (the named one, else the primary, else the
    first), since the reference format holds five rubric scores, which the rule judge does not give. Runs with
    K > 1 generations export their first generation, the only one the format has room for."""
    predictions = store.predictions.load()
    evaluations = [e for e in store.evaluations() if e.read_info().kind == "llm"]
    chosen = resolve_judge(store, judge) if judge is not None else (evaluations[0] if evaluations else None)
    notes = []
    if chosen is not None and chosen.read_info().kind != "llm":
        raise StoreError(f"judge {chosen.id} is the rule judge: judged.jsonl holds the five rubric scores of an LLM judge")
    directory.mkdir(parents=True, exist_ok=True)
    pred_path, judged_path = directory / "predictions.jsonl", directory / "judged.jsonl"
    write_atomic(pred_path, "".join(_line(official_prediction(s, predictions.get((s.key, 0)))) for s in samples))
    written = [pred_path]
    if chosen is None:
        notes.append(f"judged.jsonl not written: run {store.name} has no LLM-judge scores, and the reference format "
                     "holds five rubric scores per sample (rule scores have none)")
    else:
        judgments = chosen.judgments.load()
        write_atomic(judged_path, "".join(
            _line(official_judged(s, predictions.get((s.key, 0)), judgments.get((s.key, 0)))) for s in samples
        ))
        written.append(judged_path)
    if store.read_manifest().config.model.generations > 1:
        notes.append("only the first of each sample's generations was exported: the reference format holds one")
    return Export(written=written, notes=notes)


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """The extra fields of each row of a reference file, in the file's order (already validated by the loader)."""
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").split("\n") if line.strip()]


def imported_judgment(sample: Sample, row: dict[str, Any]) -> JudgmentRecord | None:
    """A judged row as a judgment; None when the reference script never judged it (no generation)."""
    if not row.get("gen"):
        return None
    common = {"key": sample.key, "domain": sample.domain, "judge": "llm", "cache_key": IMPORTED_PROMPT_SET}
    if float(row.get("failed", 1.0)) != 0.0:
        return JudgmentRecord(**common, status="failed", error=row.get("error_message") or "judge scoring failed")
    scores = {d: int(row[d]) for d in DIMENSIONS if isinstance(row.get(d), (int, float)) and 1 <= row[d] <= 5}
    verdict = VerdictRecord(
        status="complete" if len(scores) == len(DIMENSIONS) else "partial", scores=scores,
        strengths=list(row.get("strengths") or []), weaknesses=list(row.get("weaknesses") or []),
        raw=row.get("judge_raw_output"),
    )
    return JudgmentRecord(
        **common, status="ok" if verdict.status == "complete" else "partial",
        score=to_100(fmean(scores.values())) if scores else None,
        dimensions={d: float(v) for d, v in scores.items()}, verdicts=[verdict],
    )


def import_official(path: Path, run_name: str, output: Path, model: str | None, judge_model: str | None,
                    overwrite: bool = False) -> tuple[RunStore, int, int]:
    """Make a run from a reference `predictions.jsonl` or `judged.jsonl`. Returns (store, predictions, judgments)."""
    data_settings = DataSettings(source=str(path.resolve()))
    loaded = load_samples(data_settings)
    rows = _read_rows(path)
    if len(rows) != len(loaded.samples) or any("gen" not in row for row in rows):
        raise DataError(f"{path}: not a reference predictions/judged file: every line needs a 'gen' field")
    judged = any("failed" in row or "total_score" in row for row in rows)
    judge_settings = JudgeSettings(kind="llm", model=judge_model or IMPORTED_PROMPT_SET, prompts=IMPORTED_PROMPT_SET) if judged else None
    config = RunConfig(
        run_name=run_name, output=output, data=data_settings,
        model=ModelSettings(model=model or path.stem, backend="imported"), judge=judge_settings,
    )
    store = RunStore(config.run_dir)
    if store.exists() and not overwrite:
        raise DataError(f"run {store.path} exists already; use --overwrite to replace it")
    judge_id = llm_judge_id(judge_settings, IMPORTED_PROMPT_SET, "") if judge_settings else None
    manifest = RunManifest(
        config=config, data_source=loaded.source, data_fingerprint=loaded.fingerprint, samples=len(loaded.samples),
        primary_judge=judge_id, **environment_facts(),
    )
    store.create(manifest, overwrite=overwrite)
    judgments = 0
    with store.predictions.appender() as append:
        for sample, row in zip(loaded.samples, rows):
            append(prediction_record(sample, Generation(key=sample.key, text=row["gen"], finish_reason="stop")))
    if judge_settings is not None and judge_id is not None:
        evaluation = store.evaluation(judge_id)
        evaluation.ensure(JudgeInfo(id=judge_id, kind="llm", settings=judge_settings,
                                    described={"protocol": "imported", "prompt_set": IMPORTED_PROMPT_SET, "prompt_sha256": ""}))
        with evaluation.judgments.appender() as append:
            for sample, row in zip(loaded.samples, rows):
                judgment = imported_judgment(sample, row)
                if judgment is not None:
                    append(judgment)
                    judgments += 1
    return store, len(rows), judgments

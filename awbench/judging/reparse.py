"""`awbench judge RUN --reparse`: apply the current verdict parser to the saved raw judge texts, no API call."""

from __future__ import annotations

from awbench.judging.llm import combine, create, verdict_record
from awbench.pipeline import PipelineError, judge_requests, run_samples
from awbench.records import VerdictRecord
from awbench.store import RunStore


def reparsed(verdict: VerdictRecord) -> VerdictRecord:
    finish_reason = "length" if "truncated" in verdict.flags else None
    fresh = verdict_record(verdict.raw, verdict.reasoning, finish_reason, verdict.seed)
    return fresh.model_copy(update={"attempts": verdict.attempts, "usage": verdict.usage})


def reparse_judgments(store: RunStore) -> int:
    """Rewrites every LLM judgment whose parse changes (its cache key too, since it covers the parser
    version), and returns how many changed. Verdicts that failed in transport have no text to re-parse."""
    settings = store.read_manifest().config.judge
    if settings is None or not settings.uses_llm:
        raise PipelineError(f"run {store.name} has no LLM judgments to re-parse")
    judge = create(settings)
    requests = {r.key: r for r in judge_requests(run_samples(store), store.predictions.load())}
    changed = 0
    for (key, kind), record in store.judgments.load().items():
        if kind != "llm" or key not in requests or not any(v.raw for v in record.verdicts):
            continue
        verdicts = [reparsed(v) if v.raw else v for v in record.verdicts]
        updated = combine(key, record.domain, judge.cache_key(requests[key]), verdicts, record.cost_usd)
        if updated != record:
            store.judgments.append(updated)
            changed += 1
    return changed

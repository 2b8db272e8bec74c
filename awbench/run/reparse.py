"""`awbench judge RUN --reparse`: apply the current verdict parser to the saved raw judge texts, no API call."""

from __future__ import annotations

from dataclasses import replace

from awbench.judging import llm_identity
from awbench.judging.llm.direct import verdict_cache_key
from awbench.judging.llm.prompts import PromptError, PromptSet, load_prompt_set, protocol_request, shown_prediction
from awbench.judging.llm.verdict_records import combine, verdict_record
from awbench.records import VerdictRecord
from awbench.run.evaluations import resolve_judge
from awbench.run.store import JudgeInfo, RunStore, StoreError


def reparsed(verdict: VerdictRecord, prediction: str) -> VerdictRecord:
    """`prediction` is the text the judge was shown (`shown_prediction`). The reference's reading, made over
    the asks as they came, is kept as recorded."""
    finish_reason = "length" if verdict.status == "truncated" or "truncated" in verdict.flags else None
    fresh = verdict_record(verdict.raw, verdict.reasoning, finish_reason, verdict.seed, prediction)
    return fresh.model_copy(
        update={"attempts": verdict.attempts, "usage": verdict.usage, "reference": verdict.reference}
    )


def reparse_judgments(store: RunStore, judge: str | None = None) -> int:
    """Rewrites every LLM judgment of the chosen evaluation whose parse changes (its cache key too, since it
    covers the parser version), and returns how many changed. Verdicts that failed in transport have no text
    to re-parse."""
    from awbench.run.pipeline import run_samples

    evaluation = resolve_judge(store, judge)
    info = evaluation.read_info()
    if info.kind != "llm":
        raise StoreError(f"judge {evaluation.id} of run {store.name} is the rule judge: it has no verdicts to re-parse")
    identity = llm_identity(info.settings, str(info.described.get("prompt_sha256", "")))
    prompt_set = recorded_prompt_set(info, evaluation.id)
    samples = {s.key: s for s in run_samples(store)}
    predictions = store.predictions.load()
    changed = 0
    with evaluation.judgments.appender() as append:
        for (key, generation), record in evaluation.judgments.load().items():
            prediction = predictions.get((key, generation))
            if key not in samples or prediction is None or not any(v.raw for v in record.verdicts):
                continue
            # What the judge was asked about, under its protocol, and then shown of it.
            asked = protocol_request(prompt_set, samples[key], prediction)
            if asked is None:
                continue
            request = replace(asked, flags=tuple(record.flags))
            shown = shown_prediction(prompt_set, request)
            verdicts = [reparsed(v, shown) if v.raw else v for v in record.verdicts]
            updated = combine(request, verdict_cache_key(identity, request), verdicts, record.cost_usd)
            if updated != record:
                append(updated)
                changed += 1
    return changed


def recorded_prompt_set(info: JudgeInfo, judge_id: str) -> PromptSet:
    """What decides how the judge's answers read, as judge.json records it. Under awbench's protocol that is the
    protocol alone (the prompt texts are not needed to tell what the judge was shown); under the reference
    protocol it is the checkout's code, which must still be the one the evaluation was judged with."""
    if info.described.get("protocol") != "reference":
        return PromptSet(name=str(info.described.get("prompt_set", "")), system={}, user_template="")
    source = str(info.described.get("prompt_source") or "")
    try:
        prompt_set = load_prompt_set(source) if source else None
    except PromptError as error:
        raise StoreError(
            f"judge {judge_id} was judged under the reference protocol: re-parsing needs its checkout ({error})"
        ) from None
    if prompt_set is None or prompt_set.sha256 != info.described.get("prompt_sha256"):
        raise StoreError(
            f"judge {judge_id} was judged under the reference protocol with the checkout {source or '(not recorded)'} "
            "as it was then: re-parsing needs that checkout's prompts and code unchanged"
        )
    return prompt_set

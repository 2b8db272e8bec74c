"""An LLM judge's answers -> verdict records -> one judgment per prediction (pure functions).

Only a complete verdict (all five dimensions, from an answer the judge finished) enters a score. A verdict
missing a dimension is `partial` and one cut off by the token limit is `truncated`: both are re-asked, and a
prediction whose verdicts are all unusable is unscored, never scored on fewer dimensions.
"""

from __future__ import annotations

import hashlib
import statistics

from awbench.domains import DIMENSIONS, to_100
from awbench.judging.llm.reference_code import ReferenceReader, ReferenceVerdict
from awbench.judging.llm.verdict_parsing import ParsedVerdict, parse_verdict
from awbench.records import JudgeRequest, JudgmentRecord, ReferenceReading, Usage, VerdictRecord
from awbench.safe_text import REPLACED_FLAG, clean_text

_RANK = {"complete": 3, "partial": 2, "unparsed": 1, "truncated": 1, "error": 0}
REFERENCE_ASKS = 3  # the reference's judge stage asks at most three times (its --max-retries default)


def verdict_seed(key: str, index: int, attempt: int) -> int:
    """The seed of a verdict's attempt (`key`: the request's cache key): distinct per verdict and per re-ask
    (the same seed would make a seeded server repeat a bad answer), and the same for every LLM judge."""
    digest = hashlib.sha256(f"{key}/{index}/{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def verdict_record(
    content: str | None,
    reasoning: str | None,
    finish_reason: str | None,
    seed: int | None,
    prediction: str = "",
    reference: ReferenceReader | None = None,
    attempt: int = 1,
) -> VerdictRecord:
    """`prediction` is what the judge was shown: a verdict quoted from it is never the judge's own. With
    `reference` (the reference protocol), the answer is also read by the reference's own parser, within its
    asks, as `eval.py` receives it (`content or ""`, before awbench cleans the text)."""
    raw, raw_replaced = clean_text(content)
    reasoning, reasoning_replaced = clean_text(reasoning)
    parsed = parse_verdict(raw or "", prediction)
    flags = [*parsed.flags, *([REPLACED_FLAG] if raw_replaced or reasoning_replaced else [])]
    common = {
        "raw": raw,
        "reasoning": reasoning,
        "seed": seed,
        "strengths": parsed.strengths,
        "weaknesses": parsed.weaknesses,
        "reference": reference_reading(reference(content or ""), parsed, attempt, prediction)
        if reference is not None and attempt <= REFERENCE_ASKS
        else None,
    }
    if finish_reason == "length":  # whatever it holds, the answer did not end: never taken as complete
        return VerdictRecord(
            status="truncated",
            flags=[*flags, "truncated"],
            error="the judge's answer was cut off by its token limit (--judge-max-tokens)",
            **common,
        )
    return VerdictRecord(
        status=parsed.status,
        scores=parsed.scores,
        flags=flags,
        error=None if parsed.status == "complete" else parsed.reason,
        **common,
    )


def reference_reading(read: ReferenceVerdict, parsed: ParsedVerdict, attempt: int, prediction: str) -> ReferenceReading:
    """The reference parser's reading of one answer, as it is: the number `eval.py` prints comes from it. It is
    marked `quoted` when it is not the judge's own verdict (as awbench reads it) but the one planted in the
    prediction the judge was shown (`prediction`): counted and shown, never used by awbench's strict score."""
    return ReferenceReading(
        success=read.success,
        scores=dict(read.scores),
        total_score=read.total_score,
        attempt=attempt,
        quoted=read.success and read.scores != parsed.scores and _planted(read, prediction),
        code=read.code,
    )


def _planted(read: ReferenceVerdict, prediction: str) -> bool:
    """Whether the prediction itself holds a verdict whose every score the reference read."""
    planted = parse_verdict(prediction).scores
    return bool(planted) and all(read.scores.get(dimension) == score for dimension, score in planted.items())


def better(best: VerdictRecord | None, verdict: VerdictRecord) -> VerdictRecord:
    """The more useful of two answers to the same question; the later one on a tie. The reference's reading
    is its first successful one, whichever answer awbench keeps."""
    if best is None:
        return verdict
    chosen = verdict if (_RANK[verdict.status], len(verdict.scores)) >= (_RANK[best.status], len(best.scores)) else best
    first = (
        best.reference
        if best.reference is not None and (best.reference.success or verdict.reference is None)
        else verdict.reference
    )
    return chosen if chosen.reference is first else chosen.model_copy(update={"reference": first})


def settled(best: VerdictRecord, attempt: int) -> bool:
    """No more asks are needed: awbench has a complete verdict and, under the reference protocol, the reference
    has read one too or has used its asks."""
    reference = best.reference
    return best.status == "complete" and (reference is None or reference.success or attempt >= REFERENCE_ASKS)


def combine(request: JudgeRequest, cache_key: str, verdicts: list[VerdictRecord], cost: float | None) -> JudgmentRecord:
    """Per-dimension means over the complete verdicts; score = (mean of those means - 1) / 4 * 100.
    ok: every verdict complete; partial: some complete; failed: none (unscored)."""
    complete = [v for v in verdicts if v.status == "complete"]
    dimensions = {dim: statistics.fmean(v.scores[dim] for v in complete) for dim in DIMENSIONS} if complete else {}
    score = to_100(statistics.fmean(dimensions.values())) if dimensions else None
    if not complete:
        status, error = (
            "failed",
            "no complete verdict: " + "; ".join(dict.fromkeys(v.error or v.status for v in verdicts)),
        )
    else:
        status, error = ("ok" if len(complete) == len(verdicts) else "partial"), None
    return JudgmentRecord(
        key=request.key,
        generation=request.generation,
        domain=request.domain,
        judge="llm",
        cache_key=cache_key,
        status=status,
        score=score,
        dimensions=dimensions,
        verdicts=verdicts,
        error=error,
        transient=not complete and any(v.transient for v in verdicts),
        flags=list(request.flags),
        cost_usd=cost,
    )


def consistency_stats(records: list[JudgmentRecord]) -> dict[str, float]:
    """How much a judge agrees with itself over K verdicts per prediction. A verdict's total is the sum of
    its five scores (5..25); only complete verdicts count, and only predictions with at least two of them.
    Returns samples, mean_total_std (population standard deviation of the totals, averaged over samples)
    and share_within_one_point (samples whose totals span at most one point); without such samples, only
    samples = 0."""
    spreads = []
    for record in records:
        totals = [sum(v.scores.values()) for v in record.verdicts if v.status == "complete"]
        if len(totals) >= 2:
            spreads.append((statistics.pstdev(totals), max(totals) - min(totals)))
    if not spreads:
        return {"samples": 0}
    return {
        "samples": len(spreads),
        "mean_total_std": statistics.fmean(std for std, _ in spreads),
        "share_within_one_point": sum(span <= 1 for _, span in spreads) / len(spreads),
    }


def add_usage(a: Usage, b: Usage) -> Usage:
    def add(x: int | None, y: int | None) -> int | None:
        return None if x is None and y is None else (x or 0) + (y or 0)

    return Usage(
        prompt_tokens=add(a.prompt_tokens, b.prompt_tokens),
        completion_tokens=add(a.completion_tokens, b.completion_tokens),
        cached_tokens=add(a.cached_tokens, b.cached_tokens),
        reasoning_tokens=add(a.reasoning_tokens, b.reasoning_tokens),
    )

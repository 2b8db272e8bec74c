"""The numbers the reference `eval.py` prints for a run's generations and judge answers (pure functions).

The reference's `aggregate_scores`: per domain, the rows its judge stage read successfully are valid; each
rubric dimension and `total_score` is averaged over the valid rows where it is not 0 (negative scores are
averaged in), and the mean is put on 0..100 as (x - 1) / 4 * 100, so a domain whose valid rows all have a 0
total prints -25.00; its "Overall" is that mean over every valid row's non-zero total, whatever its domain.
A row is one sample's first generation, read from its judgment's first verdict (`ReferenceReading`).

Beside it stays awbench's strict score; `differences` says, per reason, how many samples the two read
differently, so that a gap between them is explained sample by sample.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean

from pydantic import BaseModel, Field

from awbench.domains import DIMENSIONS, DOMAINS, to_100
from awbench.records import JudgmentRecord, PredictionRecord, ReferenceReading

GenKey = tuple[str, int]

NO_GENERATION_JUDGED = "{status} generations judged by the reference"
FAILED_LEFT_OUT = "failed generations scored 0 by awbench, left out by the reference"
QUOTED = "verdicts quoted from the prediction (awbench's reading used)"
ZERO = "dimensions read as 0 by the reference (missing or unusable)"
NEGATIVE = "negative scores kept by the reference"
REASKED = "answers awbench asked again and the reference did not"
READ_DIFFERENTLY = "scores read differently"
REFERENCE_ONLY = "answers only the reference could read"
STRICT_ONLY = "answers only awbench could read"
AVERAGED = "several verdicts averaged by awbench"


class ReferenceDomain(BaseModel):
    score: float | None  # eval.py's total_score line; None where it prints "No valid results."
    n: int  # samples
    valid: int  # rows the reference counts
    dimensions: dict[str, float] = Field(default_factory=dict)  # eval.py's per-dimension lines, 0..100


class ReferenceScores(BaseModel):
    """What eval.py prints for the same generations and answers, and how it differs from the strict score."""

    overall: float | None  # the macro mean of the domain scores: the published leaderboard's Overall
    overall_printed: float | None  # eval.py's own "Overall:" line, the mean over every valid row
    domains: dict[str, ReferenceDomain]
    differing: int = 0  # samples the two readings count differently
    differences: dict[str, int] = Field(default_factory=dict)  # reason -> samples
    quoted: int = 0  # samples whose verdict awbench would not take from the prediction: the one departure

    def differences_note(self) -> str | None:
        """E.g. `9 samples differ: 5 empty generations judged by the reference, 3 dimensions read as 0 ...`."""
        if not self.differing:
            return None
        reasons = ", ".join(f"{n} {reason}" for reason, n in self.differences.items())
        return f"{self.differing} samples differ from the strict score: {reasons}"


def reading(judgment: JudgmentRecord | None) -> ReferenceReading | None:
    """The reference's reading of a sample: its first verdict's (the reference asks for one)."""
    if judgment is None or not judgment.verdicts:
        return None
    return judgment.verdicts[0].reference


def reference_scores(
    keys: Iterable[tuple[str, str]],
    predictions: Mapping[GenKey, PredictionRecord],
    judgments: Mapping[GenKey, JudgmentRecord],
    policy: str = "minimum",
) -> ReferenceScores:
    rows: dict[str, list[ReferenceReading | None]] = defaultdict(list)
    differences: Counter[str] = Counter()
    for key, domain in keys:
        judgment = judgments.get((key, 0))
        row = reading(judgment)
        rows[domain].append(row if row is not None and row.success else None)
        reason = difference(predictions.get((key, 0)), judgment, row, policy)
        if reason:
            differences[reason] += 1
    domains = {domain: _domain(rows[domain]) for domain in sorted(rows, key=_order)}
    printed = [
        r.total_score for domain_rows in rows.values() for r in domain_rows if r is not None and r.total_score != 0
    ]
    scored = [d.score for d in domains.values() if d.score is not None]
    return ReferenceScores(
        overall=fmean(scored) if scored else None,
        overall_printed=to_100(fmean(printed)) if printed else None,
        domains=domains,
        differing=sum(differences.values()),
        differences=dict(differences.most_common()),
        quoted=differences[QUOTED],
    )


def _domain(rows: list[ReferenceReading | None]) -> ReferenceDomain:
    valid = [r for r in rows if r is not None]
    if not valid:
        return ReferenceDomain(score=None, n=len(rows), valid=0)
    dimensions = {dim: _printed([r.scores.get(dim, 0) for r in valid]) for dim in DIMENSIONS}
    return ReferenceDomain(
        score=_printed([r.total_score for r in valid]), n=len(rows), valid=len(valid), dimensions=dimensions
    )


def _printed(values: list[float]) -> float:
    """eval.py's line for one column: the mean of its non-zero values (0.0 when there is none), on 0..100."""
    counted = [v for v in values if v != 0]
    return to_100(fmean(counted) if counted else 0.0)


def difference(
    prediction: PredictionRecord | None, judgment: JudgmentRecord | None, row: ReferenceReading | None, policy: str
) -> str | None:
    """Why the reference counts this sample differently from awbench's strict score; None when it does not."""
    referenced = row is not None and row.success
    if prediction is not None and prediction.failed:
        if referenced:
            return NO_GENERATION_JUDGED.format(status=prediction.status)
        return FAILED_LEFT_OUT if policy == "minimum" else None
    strict = judgment is not None and judgment.score is not None
    if not (referenced or strict):
        return None
    if not strict:
        return REFERENCE_ONLY
    if not referenced:
        return STRICT_ONLY
    assert judgment is not None and judgment.score is not None and row is not None
    if row.quoted:
        return QUOTED
    if abs(to_100(row.total_score) - judgment.score) < 1e-9:
        return None
    if any(v == 0 for v in row.scores.values()):
        return ZERO
    if any(v < 0 for v in row.scores.values()):
        return NEGATIVE
    if len(judgment.verdicts) > 1:
        return AVERAGED
    if row.attempt is not None and row.attempt < judgment.verdicts[0].attempts:
        return REASKED
    return READ_DIFFERENTLY


def _order(domain: str) -> tuple[int, str]:
    return (DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain)

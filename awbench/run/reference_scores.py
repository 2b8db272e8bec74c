"""The numbers the reference `eval.py` prints for a run's generations and judge answers (pure functions).

Its `aggregate_scores`, in its own order of operations: per subtask (the task after its last slash, as written:
`agentworld/SWE` is a group of its own), the rows its judge stage read successfully are valid; each rubric
dimension and `total_score` is averaged with `statistics.mean` (exact) over the valid rows where it is not 0
(negative scores are averaged in, `false` is 0), and only then put on 0..100 as (x - 1) / 4 * 100, so a
domain whose valid rows all have a 0 total prints -25.00; its "Overall" is that mean over every valid row's
non-zero total, whatever its domain. A row is one sample's first generation, read from its judgment's first
verdict (`ReferenceReading`). `printout` gives the text `eval.py` prints, digit for digit: the reference keeps
negative scores of any size, so a dimension's line may be a number of hundreds of digits, `-inf` (the scaling
overflows a float), or none at all where the mean itself is beyond a float (eval.py raises OverflowError
there, and prints nothing after it).

Beside it stays awbench's strict score; `differences` says, per reason, how many samples the two read
differently, so that a gap between them is explained sample by sample.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from statistics import mean
from typing import Annotated

from pydantic import AllowInfNan, BaseModel, Field, PlainSerializer

from awbench.domains import DIMENSIONS, DOMAIN_LABELS, DOMAINS, macro_overall
from awbench.records import FINITE_NUMBERS, JudgmentRecord, PredictionRecord, ReferenceReading

GenKey = tuple[str, int]

NO_GENERATION_JUDGED = "{status} generations judged by the reference"
FAILED_LEFT_OUT = "failed generations scored 0 by awbench, left out by the reference"
QUOTED = "verdicts the reference read where awbench found one quoted from the prediction"
ZERO = "dimensions read as 0 by the reference (missing or unusable)"
NEGATIVE = "negative scores kept by the reference"
REASKED = "answers awbench asked again and the reference did not"
READ_DIFFERENTLY = "scores read differently"
REFERENCE_ONLY = "answers only the reference could read"
STRICT_ONLY = "answers only awbench could read"
AVERAGED = "several verdicts averaged by awbench"
RULE = "=" * 70


def _json_number(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


# A dimension line of eval.py's: any float, -inf, inf and nan included (JSON has none of those: scores.json holds
# them as the text eval.py prints, "-inf").
PrintedNumber = Annotated[float, AllowInfNan(True), PlainSerializer(_json_number, when_used="json")]


class ReferenceDomain(BaseModel):
    model_config = FINITE_NUMBERS  # as scores.json's other numbers (negatives are the reference's own)

    score: float | None  # eval.py's total_score line; None where it prints "No valid results."
    n: int  # samples
    valid: int  # rows the reference counts
    dimensions: dict[str, PrintedNumber] = Field(default_factory=dict)  # eval.py's per-dimension lines
    # Columns whose mean is beyond a float, where eval.py raises OverflowError: it prints nothing from there on.
    overflows: list[str] = Field(default_factory=list)


class ReferenceScores(BaseModel):
    """What eval.py prints for the same generations and answers, and how it differs from the strict score."""

    model_config = FINITE_NUMBERS

    overall: float | None  # the macro mean of the domain scores: the published leaderboard's Overall (all seven)
    overall_printed: float | None  # eval.py's own "Overall:" line, the mean over every valid row's non-zero total
    domains: dict[str, ReferenceDomain]
    totals: int = 0  # eval.py's "Valid:" count: the valid rows with a non-zero total, every domain together
    differing: int = 0  # samples the two readings count differently
    differences: dict[str, int] = Field(default_factory=dict)  # reason -> samples
    quoted: int = 0  # readings that may have taken a verdict quoted from the prediction
    # Readings made by awbench's restatement of the reference's parser (runs judged before awbench ran the
    # checkout's own code): the numbers are then approximate.
    approximate: int = 0
    # Data rows alike in every field to an earlier one: awbench takes them once, eval.py counts each.
    repeated: int = 0

    def differences_note(self) -> str | None:
        """E.g. `9 samples differ: 5 empty generations judged by the reference, 3 dimensions read as 0 ...`."""
        if not self.differing:
            return None
        reasons = ", ".join(f"{n} {reason}" for reason, n in self.differences.items())
        return f"{self.differing} samples differ from the strict score: {reasons}"

    def approximate_note(self) -> str | None:
        if not self.approximate:
            return None
        return (
            f"approximate: {self.approximate} samples were read by awbench's restatement of the reference's parser "
            "(judged before awbench ran the checkout's own code); `awbench judge RUN --judge-prompts CHECKOUT "
            "--reparse` reads them again with the checkout's"
        )

    def repeated_note(self) -> str | None:
        if not self.repeated:
            return None
        return (
            f"{self.repeated} data rows repeat an earlier row in every field: awbench evaluates each such sample "
            "once, eval.py counts every row, so its numbers for these data differ from the reference numbers here"
        )

    def subtasks_note(self) -> str | None:
        """The groups eval.py makes of tasks spelled otherwise than a domain (`agentworld/SWE`), printed apart
        from its domain lines."""
        odd = {name: row.n for name, row in self.domains.items() if name not in DOMAINS}
        if not odd:
            return None
        groups = ", ".join(f"{name!r} ({n})" for name, n in odd.items())
        return (
            f"eval.py groups {sum(odd.values())} samples under their task's own spelling, apart from their "
            f"domain's line: {groups}"
        )

    def stop(self) -> tuple[str, str] | None:
        """(subtask, column) where eval.py raises OverflowError, in its printing order; None when it prints all."""
        for domain in sorted(self.domains):
            row = self.domains[domain]
            if row.overflows:
                return domain, row.overflows[0]
        return None

    def stopped_note(self) -> str | None:
        stop = self.stop()
        if stop is None:
            return None
        domain, column = stop
        return (
            f"eval.py stops at {DOMAIN_LABELS.get(domain, domain.capitalize())}'s {column}: the mean of its scores is "
            "beyond a float (OverflowError); the lines before it are all it prints"
        )

    def notes(self) -> list[str]:
        """What to know beside the numbers, each once."""
        found = [
            self.stopped_note(),
            self.approximate_note(),
            self.repeated_note(),
            self.subtasks_note(),
            self.differences_note(),
        ]
        return [note for note in found if note]

    def printout(self) -> str:
        """What eval.py's `aggregate_scores` prints for these rows (its subtasks in its sorted order); up to where
        it raises OverflowError, if it does."""
        lines = ["", RULE, "AgentWorldBench Evaluation Results", RULE]
        for domain in sorted(self.domains):
            row = self.domains[domain]
            label = DOMAIN_LABELS.get(domain, domain.capitalize())
            lines += ["", f"--- {label} ({row.valid}/{row.n} valid, {row.n - row.valid} failed) ---"]
            if row.score is None:
                lines.append("  No valid results.")
                continue
            for name in [*DIMENSIONS, "total_score"]:
                if name in row.overflows:
                    return "\n".join(lines) + "\n"
                value = row.score if name == "total_score" else row.dimensions[name]
                lines.append(f"  {name:>15s}: {value:.2f}")
        if self.overall_printed is not None:
            samples = sum(row.n for row in self.domains.values())
            lines += ["", RULE, f"Overall: {self.overall_printed:.2f}"]
            lines += [f"Total samples: {samples}, Valid: {self.totals}, Failed: {samples - self.totals}", RULE]
        return "\n".join(lines) + "\n"


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
    read_by_code: bool = True,
    repeated: int = 0,
) -> ReferenceScores:
    """`keys`: (sample key, subtask as eval.py groups it). `read_by_code`: the readings were made by the
    checkout's code (a reference-protocol run), so one made before awbench ran it is approximate; an imported
    file's readings are its own rows, exact. `repeated`: data rows awbench took once that eval.py counts again."""
    rows: dict[str, list[ReferenceReading | None]] = defaultdict(list)
    differences: Counter[str] = Counter()
    approximate = 0
    for key, domain in keys:
        judgment = judgments.get((key, 0))
        row = reading(judgment)
        rows[domain].append(row if row is not None and row.success else None)
        approximate += read_by_code and row is not None and row.code is None
        reason = difference(predictions.get((key, 0)), judgment, row, policy)
        if reason:
            differences[reason] += 1
    domains = {domain: _domain(rows[domain]) for domain in sorted(rows, key=_order)}
    totals = [
        r.total_score for domain_rows in rows.values() for r in domain_rows if r is not None and r.total_score != 0
    ]
    return ReferenceScores(
        overall=macro_overall({d: r.score for d, r in domains.items()}),
        overall_printed=_normalized(mean(totals)) if totals else None,
        domains=domains,
        totals=len(totals),
        differing=sum(differences.values()),
        differences=dict(differences.most_common()),
        quoted=differences[QUOTED],
        approximate=approximate,
        repeated=repeated,
    )


def _domain(rows: list[ReferenceReading | None]) -> ReferenceDomain:
    valid = [r for r in rows if r is not None]
    if not valid:
        return ReferenceDomain(score=None, n=len(rows), valid=0)
    columns = {dim: _printed([r.scores.get(dim, 0) for r in valid]) for dim in DIMENSIONS}
    score = _printed([r.total_score for r in valid])  # each total is 0 or 1..5: never beyond a float
    assert score is not None
    return ReferenceDomain(
        score=score,
        n=len(rows),
        valid=len(valid),
        dimensions={dim: value for dim, value in columns.items() if value is not None},
        overflows=[dim for dim, value in columns.items() if value is None],
    )


def _printed(values: list[int | float]) -> float | None:
    """eval.py's line for one column: the exact mean of its non-zero values (0.0 when there is none), then
    normalised, with its overflows (-inf); None where eval.py raises OverflowError (a mean beyond a float)."""
    counted = [v for v in values if v != 0]
    try:
        return _normalized(mean(counted) if counted else 0.0)
    except OverflowError:
        return None


def _normalized(raw: float) -> float:
    """eval.py's `normalize`, in its order of operations (not `domains.to_100`, whose float literals and
    order are awbench's own)."""
    return (raw - 1) / 4 * 100


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
    if abs(_normalized(row.total_score) - judgment.score) < 1e-9:
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

"""Why samples failed or went unscored, grouped by reason with a count and one example each: what the
end-of-run summary says instead of a bare count."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

from awbench.records import JudgmentRecord, PredictionRecord

_NUMBERS = re.compile(r"\d+")
MAX_REASON_CHARS = 100


class FailureGroup(BaseModel):
    stage: str  # "generation" or "judge"
    status: str  # the generation's status, or "unscored"
    reason: str
    count: int
    example_key: str
    example: str  # one full message
    transient: bool  # retried by running the same command again


def failure_groups(predictions: Iterable[PredictionRecord], judgments: Iterable[JudgmentRecord]) -> list[FailureGroup]:
    groups: dict[tuple[str, str, str], FailureGroup] = {}

    def add(stage: str, status: str, message: str, key: str, transient: bool) -> None:
        reason = reason_of(message)
        group = groups.get((stage, status, reason))
        if group is None:
            groups[(stage, status, reason)] = FailureGroup(
                stage=stage,
                status=status,
                reason=reason,
                count=1,
                example_key=key,
                example=message,
                transient=transient,
            )
        else:
            group.count += 1

    failed = set()
    for p in predictions:
        if p.failed:
            failed.add((p.key, p.generation))
            add("generation", p.status, p.error or p.status, p.key, p.transient)
    for j in judgments:
        if j.score is None and (j.key, j.generation) not in failed:
            add("judge", "unscored", j.error or "the judge gave no usable verdict", j.key, j.transient)
    return sorted(groups.values(), key=lambda g: (-g.count, g.stage, g.reason))


def reason_of(message: str) -> str:
    """What failures of one kind share: an error's class or HTTP status ("HTTP 503", "APIConnectionError"),
    else the message with its numbers blurred."""
    head, sep, _ = message.partition(": ")
    if sep and (head.startswith("HTTP ") or re.fullmatch(r"[A-Z]\w*(?:Error|Exception|Timeout|Response)", head)):
        return head
    return _NUMBERS.sub("N", message)[:MAX_REASON_CHARS]


def describe(groups: list[FailureGroup]) -> list[str]:
    """One line per reason: '13 empty predictions: first turn: no previous observation to repeat (e.g. mcp/1/1)'."""
    lines = []
    for g in groups:
        what = "unscored by the judge" if g.stage == "judge" else f"{g.status} predictions"
        again = "; retried when you run the same command again" if g.transient else ""
        example = g.example_key if g.example == g.reason else f"{g.example_key}: {g.example[:200]}"
        lines.append(f"{g.count} {what}: {g.reason} (e.g. {example}){again}")
    return lines

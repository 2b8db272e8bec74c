"""Why samples failed or went unscored, grouped by reason with a count and one example each: what the
end-of-run summary says instead of a bare count. Failures group by their error's class or HTTP status, else by
their message with its numbers blurred; the summary prints the server's own words (one line, cut at a whole
word, keys masked), never the blurred key. A group whose failures all got the same error, or whose every
failure got one error on each of its attempts, is likely to fail alike again: the summary says so, and what to
change, instead of promising that a rerun helps."""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel

from awbench.records import JudgmentRecord, PredictionRecord
from awbench.redact import redact
from awbench.safe_text import numbers_masked, one_line

MAX_MESSAGE_CHARS = 200


class FailureGroup(BaseModel):
    stage: str  # "generation" or "judge"
    status: str  # the generation's status, or "unscored"
    reason: str
    count: int
    example_key: str
    example: str  # one full message
    transient: bool  # retried by running the same command again
    same_error: bool = False  # two or more failures, all with one message (numbers aside)
    attempts_alike: int | None = None  # each failure's attempts (two or more) all got one error: the fewest


def failure_groups(predictions: Iterable[PredictionRecord], judgments: Iterable[JudgmentRecord]) -> list[FailureGroup]:
    groups: dict[tuple[str, str, str], FailureGroup] = {}

    def add(stage: str, status: str, message: str, key: str, transient: bool, alike: int | None) -> None:
        alike = alike if alike is not None and alike >= 2 else None
        kind = error_kind(message)
        grouped_by = kind or numbers_masked(message)
        group = groups.get((stage, status, grouped_by))
        if group is None:
            groups[(stage, status, grouped_by)] = FailureGroup(
                stage=stage,
                status=status,
                reason=kind or readable(message),
                count=1,
                example_key=key,
                example=message,
                transient=transient,
                attempts_alike=alike,
            )
        else:
            group.attempts_alike = min(group.attempts_alike, alike) if group.attempts_alike and alike else None
            group.same_error = (group.count == 1 or group.same_error) and numbers_masked(message) == numbers_masked(
                group.example
            )
            group.count += 1

    failed = set()
    for p in predictions:
        if p.failed:
            failed.add((p.key, p.generation))
            add("generation", p.status, p.error or p.status, p.key, p.transient, p.same_error_attempts)
    for j in judgments:
        if j.score is None and (j.key, j.generation) not in failed:
            alike = min((v.same_error_attempts or 0 for v in j.verdicts), default=None)  # of every verdict
            add("judge", "unscored", j.error or "the judge gave no usable verdict", j.key, j.transient, alike)
    return sorted(groups.values(), key=lambda g: (-g.count, g.stage, g.reason))


def error_kind(message: str) -> str | None:
    """An error's class or HTTP status ("HTTP 503", "RequestTimeout"), when the message starts with one:
    failures of one kind group together whatever the rest of their messages says."""
    head, sep, _ = message.partition(": ")
    if sep and (head.startswith("HTTP ") or re.fullmatch(r"[A-Z]\w*(?:Error|Exception|Timeout|Response)", head)):
        return head
    return None


def readable(message: str) -> str:
    """A message as the summary prints it: keys masked first (no part of one survives the cut), one line,
    cut at a whole word."""
    return one_line(redact(message), MAX_MESSAGE_CHARS)


def describe(groups: list[FailureGroup]) -> list[str]:
    """One line per reason: '13 empty predictions: first turn: no previous observation to repeat (e.g. mcp/1/1)'."""
    lines = []
    for g in groups:
        what = "unscored by the judge" if g.stage == "judge" else f"{g.status} predictions"
        example = readable(g.example)
        shown = g.example_key if example == g.reason else f"{g.example_key}: {example}"
        lines.append(f"{g.count} {what}: {g.reason} (e.g. {shown}){outlook(g)}")
    return lines


# Statuses whose repeated message says something about the setup (an empty answer may be by design: a
# baseline's first turn; an overlength prompt says so itself).
_SETUP_STATUSES = frozenset({"error", "truncated", "unscored"})


def outlook(group: FailureGroup) -> str:
    """What running again will do: a transient failure is retried, but one that every failure of the group got
    alike, or every attempt of each failure, is likely to recur until something changes, which it names."""
    if (group.same_error or group.attempts_alike) and group.status in _SETUP_STATUSES:
        if group.same_error:
            alike = f"all {group.count} got"
        elif group.count == 1:
            alike = f"all {group.attempts_alike} attempts got"
        else:
            alike = "every attempt of each got"
        fix = remedy(group.stage, group.status, group.example)
        then = "before running the same command again" if group.transient else "then run again with --retry-failed"
        return f"; {alike} the same error, so it is likely to recur: {fix}, {then}"
    return "; retried when you run the same command again" if group.transient else ""


# (what the message says, what to change for the candidate, and for the judge), first match wins.
_REMEDIES = (
    (
        r"response_format|json_schema|grammar",
        "take response_format out of --extra-body",
        "ask for verdicts without a JSON schema (--no-judge-structured)",
    ),
    (
        r"system role|roles must alternate|chat template",
        "serve the model with a chat template that takes a system message and alternating roles",
        "serve the judge model with a chat template that takes a system message and alternating roles",
    ),
    (
        r"validation error|invalid|not supported|unsupported",
        "change what the requests carry (--extra-body, --stop, the sampling options)",
        "change what the judge's requests carry (--judge-extra-body, --judge-stop, --no-judge-structured)",
    ),
    (r"\bHTTP 429\b", "pace the requests (--tpm, --rpm)", "pace the judge's requests (--judge-tpm, --judge-rpm)"),
    (
        r"\bRequestTimeout\b",
        "give a longer --request-timeout or a lower --concurrency",
        "give a longer --judge-request-timeout or a lower --judge-concurrency",
    ),
    (
        r"\bConnectionFailed\b",
        "check that the server at --base-url is up",
        "check that the server at --judge-base-url is up",
    ),
    (r"\btruncated\b", "", "give a larger --judge-max-tokens, or --judge-stop"),
    (r"\bunparsed\b|no JSON", "", "use a judge model that answers in the verdict's format, or --judge-structured"),
)


def remedy(stage: str, status: str, message: str) -> str:
    """What to change so that a failure which recurs stops recurring, from what its message says."""
    if stage == "generation" and status == "truncated":
        return "a base model runs on to the token limit: give --stop (e.g. --stop '### Turn') or a larger --max-tokens"
    judge = stage == "judge"
    for pattern, for_candidate, for_judge in _REMEDIES:
        fix = for_judge if judge else for_candidate
        if fix and re.search(pattern, message, re.I):
            return fix
    return "find out why in the server's log"

"""Why samples failed or went unscored, grouped by reason with a count and one example each: what the
end-of-run summary says instead of a bare count. Failures group by their error's class or HTTP status, else by
their message with its numbers blurred; the summary prints the server's own words (one line, cut at a whole
word, keys masked), never the blurred key. A group whose failures all got the same error, or whose every
failure got one error on each of its attempts, is likely to fail alike again: the summary says so, and what to
change, instead of promising that a rerun helps."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pydantic import BaseModel

from awbench.config import RunConfig
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


@dataclass(frozen=True)
class Setup:
    """What a run was given, so that advice fits it: no server's log for a model that runs in this process, no
    `--stop` for a run that gave one, no rerun for an imported run."""

    backend: str = "openai"  # the candidate's
    stop: tuple[str, ...] = ()
    judge_backend: str = "openai"
    judge_structured: bool = False

    @classmethod
    def of(cls, config: RunConfig) -> Setup:
        judge = config.judge
        return cls(
            backend=config.model.backend,
            stop=tuple(config.model.stop),
            judge_backend=judge.backend if judge else "openai",
            judge_structured=judge.structured if judge else False,
        )

    @property
    def imported(self) -> bool:
        """Predictions made elsewhere (the reference script, inspect_ai): nothing here makes them again."""
        return self.backend == "imported"


def describe(groups: list[FailureGroup], setup: Setup) -> list[str]:
    """One line per reason: '13 empty predictions: first turn: no previous observation to repeat (e.g. mcp/1/1)'."""
    lines = []
    for g in groups:
        what = "unscored by the judge" if g.stage == "judge" else f"{g.status} predictions"
        example = readable(g.example)
        shown = g.example_key if example == g.reason else f"{g.example_key}: {example}"
        lines.append(f"{g.count} {what}: {g.reason} (e.g. {shown}){outlook(g, setup)}")
    return lines


# Statuses whose repeated message says something about the setup (an empty answer may be by design: a
# baseline's first turn; an overlength prompt says so itself).
_SETUP_STATUSES = frozenset({"error", "truncated", "unscored"})


def outlook(group: FailureGroup, setup: Setup) -> str:
    """What running again will do: a transient failure is retried, but one that every failure of the group got
    alike, or every attempt of each failure, is likely to recur until something changes, which it names. An
    imported run is not run again here: nothing is promised."""
    if setup.imported and group.stage == "generation":
        return ""
    if (group.same_error or group.attempts_alike) and group.status in _SETUP_STATUSES:
        if group.same_error:
            alike = f"all {group.count} got"
        elif group.count == 1:
            alike = f"all {group.attempts_alike} attempts got"
        else:
            alike = "every attempt of each got"
        fix = remedy(group.stage, group.status, group.example, setup)
        then = "before running the same command again" if group.transient else "then run again with --retry-failed"
        return f"; {alike} the same error, so it is likely to recur: {fix}, {then}"
    return "; retried when you run the same command again" if group.transient else ""


# What a llama.cpp server takes instead of a json_schema response format (docs/backends.md, "A small judge").
LLAMA_CPP_SCHEMA = (
    "json_object with the verdict's schema in --judge-extra-body, as a llama.cpp server takes it (docs/backends.md)"
)

# (what the message says, what to change for the candidate, and for the judge), first match wins; a judge's
# structured verdicts and a candidate's --stop are `remedy`'s, which knows whether they were given.
_REMEDIES = (
    (
        r"maximum context length|context length|context window|prompt is too long",
        "",
        "the judge's prompt is longer than its context window: serve the judge with a longer one (llama.cpp -c, "
        "vLLM --max-model-len), or use a judge model with a longer one",
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
    (r"\btruncated\b|cut off by its token limit", "", "give a larger --judge-max-tokens, or --judge-stop"),
)


def remedy(stage: str, status: str, message: str, setup: Setup) -> str:
    """What to change so that a failure which recurs stops recurring, from what its message says and what the
    run was given."""
    judge = stage == "judge"
    if not judge and status == "truncated":
        if setup.stop:
            given = " ".join(f"--stop {stop!r}" for stop in setup.stop)
            return f"the answers ran to the token limit ({given} given): give a larger --max-tokens"
        return "a base model runs on to the token limit: give --stop (e.g. --stop '### Turn') or a larger --max-tokens"
    if re.search(r"response_format|json_schema|grammar", message, re.I):
        if not judge:
            return "take response_format out of --extra-body"
        if setup.judge_structured:
            return f"the server takes no json_schema response format: leave out --judge-structured, and give it {LLAMA_CPP_SCHEMA}"
        return "take response_format out of --judge-extra-body"
    for pattern, for_candidate, for_judge in _REMEDIES:
        fix = for_judge if judge else for_candidate
        if fix and re.search(pattern, message, re.I):
            return fix
    if judge and re.search(r"\bunparsed\b|no JSON", message, re.I):
        if setup.judge_structured:
            return "use a judge model that answers in the verdict's format"
        return (
            "use a judge model that answers in the verdict's format, or ask for its JSON schema: "
            f"--judge-structured, or {LLAMA_CPP_SCHEMA}"
        )
    return f"find out why in {_log(setup.judge_backend if judge else setup.backend)}"


def _log(backend: str) -> str:
    """Where the cause of an error nobody here can name is written."""
    if backend == "python":
        return "the world model's code: the example is what it raised"
    if backend == "vllm":
        return "vLLM's output above"
    return "the server's log"

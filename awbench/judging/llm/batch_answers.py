"""What the rubric judge keeps of its batches (`awbench.judging.llm.batch_judge`): `batch_answers.jsonl`, each
attempt's answer as it is read from an ended batch (appended before the batch is marked collected), and the
reading itself: a result line -> one answer per attempt, and each verdict's attempts -> its outcome, stopping as
the direct judge stops (`LLMJudge.ask`)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from awbench.files import JsonlTable
from awbench.judging.batch.runner import NotRun, outcome
from awbench.judging.batch.state import BatchEntry
from awbench.judging.cost import Price, completion_cost, estimate_prompt_tokens
from awbench.judging.llm.prompts import reference_reader, render_messages
from awbench.judging.llm.verdict_records import add_usage, better, settled, verdict_record
from awbench.records import JudgeRequest, Usage, VerdictRecord
from awbench.transport.chat_client import Completion

if TYPE_CHECKING:
    from awbench.judging.llm.direct import LLMJudge

ANSWERS_FILE = "batch_answers.jsonl"
DIRECT_SUFFIX = "|direct"  # a verdict finished by direct re-asks (batch_fallback="direct")
RECORDED_SUFFIX = "|recorded"  # a request whose judgment was recorded


class BatchAnswer(BaseModel):
    """One attempt's answer, as parsed from a batch's output or error file. `final`: the outcome of re-asks sent
    directly (`batch_fallback="direct"`), with the attempts, usage and cost of the whole verdict."""

    custom_id: str
    batch_id: str | None = None
    verdict: VerdictRecord | None = None  # None: `recorded`
    cost_usd: float = 0.0
    final: bool = False
    # The request's judgment was recorded: the answers above this line are spent. When the same request is
    # offered again (a judgment that failed transiently), its verdicts start afresh, as the direct judge's do.
    recorded: bool = False

    def answered(self) -> VerdictRecord:
        """The verdict of an answer, which every answer but a `recorded` marker has."""
        assert self.verdict is not None, self.custom_id
        return self.verdict


def custom_id(cache_key: str, key: str, generation: int, index: int, attempt: int) -> str:
    return f"{key}|{generation}|{index}|{attempt}|{cache_key[:16]}"


def parse_custom_id(text: str) -> tuple[str, int, int, int, str] | None:
    """(sample key, generation, verdict index, attempt, cache key prefix); None for what is not ours."""
    parts = text.rsplit("|", 4)
    if len(parts) != 5:
        return None
    key, generation, index, attempt, prefix = parts
    try:
        return key, int(generation), int(index), int(attempt), prefix
    except ValueError:
        return None


class AnswerFile:
    """batch_answers.jsonl in the evaluation's directory."""

    def __init__(self, directory: Path) -> None:
        self._table = JsonlTable(directory / ANSWERS_FILE, BatchAnswer, lambda a: a.custom_id)

    def read(self) -> list[BatchAnswer]:
        """Every line in order (a torn last line, from a crash mid-write, left out)."""
        return list(self._table.records())

    def appender(self) -> AbstractContextManager[Callable[[BatchAnswer], None]]:
        """`append(answer)` (`JsonlTable.appender`)."""
        return self._table.appender()


@dataclass
class VerdictAttempts:
    """One verdict of one request: its attempts answered and in flight."""

    index: int
    answers: dict[int, BatchAnswer] = field(default_factory=dict)  # attempt -> answer
    in_flight: set[int] = field(default_factory=set)
    final_answer: BatchAnswer | None = None

    def attempts(self) -> int:
        return max([*self.answers, *self.in_flight, 0])

    def best(self) -> VerdictRecord | None:
        best = None
        for attempt in sorted(self.answers):
            best = better(best, self.answers[attempt].answered())
        return best

    def done(self, budget: int) -> bool:
        """As the direct judge stops: a complete answer, an error that retrying cannot fix, or no budget left."""
        if self.final_answer is not None:
            return True
        if self.in_flight:
            return False
        verdicts = [a.answered() for a in self.answers.values()]
        best = self.best()
        if (best is not None and settled(best, self.attempts())) or any(
            v.status == "error" and not v.transient for v in verdicts
        ):
            return True
        return self.attempts() >= budget

    def usage(self) -> Usage:
        usage = Usage()
        for answer in self.answers.values():
            usage = add_usage(usage, answer.answered().usage)
        return usage

    def cost(self) -> float:
        return sum(a.cost_usd for a in self.answers.values())

    def outcome(self) -> tuple[VerdictRecord, float]:
        if self.final_answer is not None:
            return self.final_answer.answered(), self.final_answer.cost_usd
        best = self.best()
        assert best is not None
        return best.model_copy(update={"attempts": self.attempts(), "usage": self.usage()}), self.cost()


@dataclass
class PendingRequest:
    """A request the batch judge was given, with its verdicts' attempts, until its judgment is yielded."""

    request: JudgeRequest
    cache_key: str
    verdicts: list[VerdictAttempts]
    yielded: bool = False
    prompt_tokens: int | None = None  # estimated, once rendered

    def fresh(self) -> bool:
        return not any(v.answers or v.in_flight or v.final_answer for v in self.verdicts)


def read_answer(
    direct: LLMJudge,
    price: Price | None,
    cid: str,
    entry: BatchEntry,
    status: str,
    line: dict[str, Any] | None,
    item: PendingRequest,
    index: int,
    attempt: int,
) -> BatchAnswer:
    """One attempt's answer from its result line (None: the batch ended `status` without running it), read as
    the direct judge reads a completion; priced at the batch `price`. Raises FatalAPIError for 400/401/403/404."""
    seed = direct.seed(item.cache_key, index, attempt)
    result = outcome(line, entry, status)
    cost = 0.0
    if isinstance(result, Completion):
        verdict = verdict_record(
            result.content,
            result.reasoning,
            result.finish_reason,
            seed,
            direct.shown(item.request),
            reference_reader(direct.prompt_set, item.request),
            attempt,
        ).model_copy(update={"usage": result.usage})
        if price:
            cost = completion_cost(price, result, prompt_tokens(direct, item))
    elif isinstance(result, NotRun):
        verdict = VerdictRecord(status="error", error=str(result), transient=True, seed=seed)
    else:
        verdict = direct.failed_call(result, seed)
    return BatchAnswer(
        custom_id=cid, batch_id=entry.batch_id, verdict=verdict.model_copy(update={"attempts": 1}), cost_usd=cost
    )


def prompt_tokens(direct: LLMJudge, item: PendingRequest) -> int:
    if item.prompt_tokens is None:
        item.prompt_tokens = estimate_prompt_tokens(render_messages(direct.prompt_set, item.request))
    return item.prompt_tokens

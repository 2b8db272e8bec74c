"""Collecting the batch judge's answers: a finished batch's output and error lines -> one answer per attempt,
and each verdict's attempts -> its outcome, stopping as the direct judge stops (`LLMJudge.ask`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awbench.judging.batch_state import BatchAnswer, BatchEntry
from awbench.judging.cost import Price, call_cost, estimate_prompt_tokens, tokens_for_chars
from awbench.judging.prompts import reference_reader, render_messages
from awbench.judging.verdict_records import add_usage, better, settled, verdict_record
from awbench.records import JudgeRequest, Usage, VerdictRecord
from awbench.redact import redact
from awbench.transport.chat_client import MalformedResponse, StatusError, parse_json, read_completion

if TYPE_CHECKING:
    from awbench.judging.llm import LLMJudge


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


def result_lines(contents: list[bytes]) -> dict[str, dict[str, Any]]:
    """A batch's output and error files -> their lines by custom_id (a line that is not JSON left out)."""
    lines: dict[str, dict[str, Any]] = {}
    for content in contents:
        for raw in content.split(b"\n"):
            if raw.strip():
                try:
                    line = parse_json(raw)
                except MalformedResponse:
                    continue
                if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
                    lines[line["custom_id"]] = line
    return lines


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
    response = line.get("response") if line else None
    error = line.get("error") if line else None
    cost = 0.0
    if isinstance(response, dict) and response.get("status_code") == 200:
        try:
            completion = read_completion(response.get("body"))
        except MalformedResponse as malformed:
            verdict = direct.failed_call(malformed, seed)
        else:
            verdict = verdict_record(
                completion.content,
                completion.reasoning,
                completion.finish_reason,
                seed,
                direct.shown(item.request),
                reference_reader(direct.prompt_set, item.request),
                attempt,
            ).model_copy(update={"usage": completion.usage})
            if price:
                chars = len(completion.content or "") + len(completion.reasoning or "")
                cost = call_cost(price, completion.usage, prompt_tokens(direct, item), tokens_for_chars(chars))
    elif isinstance(response, dict):
        verdict = direct.failed_call(status_error(response), seed)
    else:
        if isinstance(error, dict):
            why = f"{error.get('code') or 'error'}: {error.get('message') or 'no message'}"
        else:
            why = f"no answer: the batch ended {status}" + (f" ({'; '.join(entry.errors)})" if entry.errors else "")
        verdict = VerdictRecord(
            status="error", error=redact(f"batch {entry.batch_id}: {why}")[:500], transient=True, seed=seed
        )
    return BatchAnswer(
        custom_id=cid, batch_id=entry.batch_id, verdict=verdict.model_copy(update={"attempts": 1}), cost_usd=cost
    )


def prompt_tokens(direct: LLMJudge, item: PendingRequest) -> int:
    if item.prompt_tokens is None:
        item.prompt_tokens = estimate_prompt_tokens(render_messages(direct.prompt_set, item.request))
    return item.prompt_tokens


def status_error(response: dict[str, Any]) -> StatusError:
    body = response.get("body")
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = response.get("status_code")
    return StatusError(
        status if isinstance(status, int) else 500,
        str(message or body or f"status {status}"),
        str(code) if code is not None else None,
    )

"""Two-choice questions to an LLM judge ("Response A" or "Response B"?), kept by key in their own JSONL table. The
Turing test (`awbench.run.turing`) and pairwise comparison ask through it. Answers are read by the prompt set's
protocol (`ChoiceReader`): awbench's own by `parsing.read_choice` (the judge's own explicit choice, never
one quoted from the question; a quoted choice from a response flags the answer `steering_suspected`), the
reference's by the checkout's own `extract_choice_answer` (`awbench.judging.llm.reference_code`).

API:

    judge = ChoiceJudge(settings, prompt_set, endpoints)   # JudgeSettings; the PromptSet the messages come from
    judge.id                                              # "{model}-{prompt set name}-{hash}": an evaluation's name
    table = answer_table(directory)                       # JsonlTable[ChoiceAnswer] at directory/answers.jsonl
    questions = [ChoiceQuestion(key=..., messages=[system, user], meta={...})]  # the caller renders the messages
    judge.estimate(questions, table)                      # CostEstimate of what is not answered yet (--dry-run)
    await judge.check()                                   # the endpoint or engine works, before anything is spent
    answers = await judge.ask(questions, table, notes)    # key -> ChoiceAnswer (`choice` "A", "B" or None)
    await judge.aclose()

`ask` sends only what the table does not hold answered for the same question (`ChoiceAnswer.question`: a hash
of the judge's identity, the reader's version and the messages, so a changed prompt or setting asks again),
appends every attempt's outcome to the table as it comes (the last row of a key wins: an interrupted run resumes
with its attempts and cost), and raises BudgetExhausted (resumable) when `settings.max_cost` would be passed.
An answer kept under an earlier reader of the same protocol (`ChoiceReader.earlier`) is read again from its raw
text, not asked again: a new row, asked again only when the new reading finds no choice.

Transport: the judge backends' own, not a second one (`awbench.judging.choice.senders`): the direct judge's
rate-limited client, the Batch API runner, or the in-process engine; seeds by the rubric judge's rule
(`choice_seed`). `--max-cost` covers the spend of every table the judge has read (`kept`). Each question has 1 + max_retries calls, shared by transient errors and re-asks of answers without a choice
(in rounds: every question's next attempt goes out once the round before has come back). `structured`
(a verdict schema) and `samples` > 1 have no meaning here and are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field

from awbench.config import JudgeSettings
from awbench.errors import SettingsError
from awbench.files import JsonlTable
from awbench.judging import BudgetExhausted, Notes, llm_identity, llm_judge_id
from awbench.judging.choice.calls import Call, ChoiceQuestion, Reply
from awbench.judging.choice.parsing import CHOICE_READER, EARLIER_READERS, Choice, ChoiceReading, read_choice
from awbench.judging.choice.senders import call_place, make_sender
from awbench.judging.cost import (
    OUTPUT_TOKENS_PER_VERDICT,
    Budget,
    CacheEstimate,
    CostEstimate,
    Price,
    batch_price,
    estimate_prompt_tokens,
    price_for,
    unpriced_cap,
    usage_cost,
)
from awbench.judging.llm.direct import judge_base_url
from awbench.judging.llm.prompts import PromptSet
from awbench.judging.llm.verdict_records import add_usage
from awbench.prefix_order import prefix_sorted
from awbench.records import FINITE_NUMBERS, Cost, Usage, content_hash
from awbench.safe_text import clean_text
from awbench.transport.endpoints import Endpoints

__all__ = [
    "ANSWERS_FILE",
    "ChoiceAnswer",
    "ChoiceJudge",
    "ChoiceQuestion",
    "ChoiceReader",
    "answer_table",
    "choice_reader",
    "read_reply",
]

ANSWERS_FILE = "answers.jsonl"

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class ChoiceReader:
    """How a protocol's answers are read: `read(raw answer, its question)`; `version` is part of each question's
    hash; answers kept under an `earlier` version are read again with this one instead of being asked again.
    `reads_cut`: an answer cut off by the token limit is read too (the reference reads whatever text came);
    awbench's own reader takes no choice from an answer that did not end."""

    version: str
    read: Callable[[str, ChoiceQuestion], ChoiceReading]
    earlier: tuple[str, ...] = ()
    reads_cut: bool = False


def _own_reading(raw: str, question: ChoiceQuestion) -> ChoiceReading:
    return read_choice(raw, [message["content"] for message in question.messages], question.responses)


# Before issue 35, every protocol's answers were read by a restatement of the reference's choice parser, version
# "reference-choice-1"; since, by earlier versions of awbench's reader: such kept answers are read again, not
# asked again.
AWBENCH_READER = ChoiceReader(CHOICE_READER, _own_reading, earlier=("reference-choice-1", *EARLIER_READERS))
# "reference-code-1" left an answer cut off by the token limit without a choice: such kept answers are read again.
REFERENCE_READER_VERSION = "reference-code-2"


def choice_reader(prompt_set: PromptSet) -> ChoiceReader:
    """awbench's reader, or under the reference protocol one that runs the checkout's `extract_choice_answer`."""
    if prompt_set.protocol != "reference":
        return AWBENCH_READER
    extract = prompt_set.reference_code().read_choice

    def reference_reading(raw: str, question: ChoiceQuestion) -> ChoiceReading:
        choice = extract(raw)
        reason = None if choice else "no choice: the reference's extract_choice_answer found neither A nor B"
        return ChoiceReading(cast("Choice | None", choice), (), reason)

    return ChoiceReader(REFERENCE_READER_VERSION, reference_reading, earlier=("reference-code-1",), reads_cut=True)


class ChoiceAnswer(BaseModel):
    """A question's outcome so far (a row of answers.jsonl; the last of a key wins)."""

    model_config = FINITE_NUMBERS  # a cost of NaN, an infinity or below 0 is refused, naming the file and line

    key: str
    question: str  # hash of the judge's identity, the reader's version and the messages
    choice: Choice | None = None
    raw: str | None = None  # the judge's last answer
    flags: list[str] = Field(default_factory=list)  # the reading's: "steering_suspected"
    finish_reason: str | None = None
    error: str | None = None
    transient: bool = False  # the error may go away when asked again
    attempts: int = 0  # calls made, every round included
    seed: int | None = None  # the last call's
    usage: Usage = Field(default_factory=Usage)
    cost_usd: Cost | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    def settled(self, budget: int) -> bool:
        """Nothing more to ask: a choice, the budget spent, or an error that asking again cannot fix."""
        return self.choice is not None or self.attempts >= budget or (self.error is not None and not self.transient)


def answer_table(directory: Path) -> JsonlTable[ChoiceAnswer, str]:
    return JsonlTable(directory / ANSWERS_FILE, ChoiceAnswer, lambda a: a.key)


def read_reply(
    answer: ChoiceAnswer | None, call: Call, reply: Reply, priced: bool, reader: ChoiceReader
) -> ChoiceAnswer:
    """A question's answer after one reply: read by `reader`; usage and cost added up."""
    usage = add_usage(answer.usage if answer else Usage(), reply.usage)
    cost = ((answer.cost_usd or 0.0) if answer else 0.0) + reply.cost_usd if priced else None
    common: dict[str, Any] = {
        "key": call.question.key,
        "question": call.hash,
        "attempts": reply.attempt,
        "seed": reply.seed,
        "usage": usage,
        "cost_usd": cost,
        "meta": call.question.meta,
    }
    if reply.completion is None:
        return ChoiceAnswer(error=reply.error, transient=reply.transient, **common)
    raw, _ = clean_text(reply.completion.content)
    finish_reason = reply.completion.finish_reason
    return ChoiceAnswer(
        raw=raw, finish_reason=finish_reason, **common, **_reading(reader, call.question, raw, finish_reason)
    )


def _reading(
    reader: ChoiceReader, question: ChoiceQuestion, raw: str | None, finish_reason: str | None
) -> dict[str, Any]:
    """The fields a complete answer's reading sets: its choice, the error without one, and its flags."""
    found = reader.read(raw or "", question)
    cut = finish_reason == "length"
    choice = None if cut and not reader.reads_cut else found.choice  # awbench takes none from an unended answer
    if choice is not None:
        error = None
    elif cut:
        error = "the judge's answer was cut off by its token limit (--judge-max-tokens)"
    else:
        error = found.reason
    return {
        "choice": choice,
        "error": error,
        "transient": error is not None,  # asked again within the budget
        "flags": list(found.flags),
    }


class ChoiceJudge:
    """One judge configuration asking two-choice questions; see the module docstring."""

    def __init__(
        self, settings: JudgeSettings, prompt_set: PromptSet, endpoints: Endpoints | None = None, role: str = "judge"
    ) -> None:
        if settings.structured:
            raise SettingsError("--judge-structured asks for a rubric verdict's JSON schema; a choice has none")
        if settings.samples != 1:
            raise SettingsError(
                "--judge-samples: a choice question is asked once (its re-asks are for unusable answers)"
            )
        self.settings = settings
        self.prompt_set = prompt_set
        self.id = llm_judge_id(settings, prompt_set.name, prompt_set.sha256)
        self.identity = llm_identity(settings, prompt_set.sha256)
        self.price = price_for(settings.model, settings.price_in, settings.price_out)
        if settings.max_cost is not None and self.price is None:
            raise SettingsError(
                unpriced_cap(settings.model, settings.max_cost, judge_base_url(settings)), key="cost_unknown"
            )
        self.reader = choice_reader(prompt_set)
        self.sender = make_sender(settings, prompt_set, self.id, self.price, endpoints or Endpoints(), role)
        self._spent: dict[Path, float] = {}  # by answer table read (`kept`): what its answers cost

    @property
    def spent_usd(self) -> float:
        """What the answers of every table this judge has read cost, earlier runs included: what --max-cost covers."""
        return sum(self._spent.values())

    @property
    def call_price(self) -> Price | None:
        """What a call costs: the list price, or the Batch API's."""
        if self.price is None:
            return None
        return batch_price(self.price) if self.settings.batch else self.price

    def question_hash(self, question: ChoiceQuestion, reader_version: str | None = None) -> str:
        version = reader_version or self.reader.version
        return content_hash({"judge": self.identity, "parser": version, "messages": question.messages})

    def describe(self) -> dict[str, Any]:
        return {**self.prompt_set.described(), "parser": self.reader.version}

    def kept(self, table: JsonlTable[ChoiceAnswer, str]) -> dict[str, ChoiceAnswer]:
        """A table's answers (question key -> the last row). What they cost counts against --max-cost from now
        on: a command asking into several tables (one per pair) reads them all first."""
        answers = table.load()
        self._spent[table.path] = sum(answer.cost_usd or 0.0 for answer in answers.values())
        return answers

    def reread(self, questions: list[ChoiceQuestion], answers: dict[str, ChoiceAnswer]) -> list[ChoiceAnswer]:
        """The kept answers to these very questions that an earlier reader read (`ChoiceReader.earlier`), read
        again from their raw text: new rows under the current question hash, attempts and cost kept."""
        out = []
        for question in questions:
            answer = answers.get(question.key)
            if answer is None or answer.raw is None:
                continue
            current = self.question_hash(question)
            if answer.question == current:
                continue
            if any(answer.question == self.question_hash(question, v) for v in self.reader.earlier):
                update = {"question": current, "meta": question.meta}
                update |= _reading(self.reader, question, answer.raw, answer.finish_reason)
                out.append(answer.model_copy(update=update))
        return out

    def pending(self, questions: list[ChoiceQuestion], answers: dict[str, ChoiceAnswer]) -> list[Call]:
        """The next call of every question not settled for its current text (answers to re-read, read)."""
        answers = answers | {answer.key: answer for answer in self.reread(questions, answers)}
        budget = self.settings.max_retries + 1
        calls = []
        for question in questions:
            digest = self.question_hash(question)
            answer = answers.get(question.key)
            if answer is not None and answer.question == digest and answer.settled(budget):
                continue
            done = answer.attempts if answer is not None and answer.question == digest else 0
            calls.append(Call(question, digest, done + 1, budget))
        return calls

    def call_ceiling(self, call: Call) -> float:
        """The most a call can be billed, which --max-cost holds while it is out: its prompt uncached and a
        completion up to --judge-max-tokens."""
        price = self.call_price
        if price is None:
            return 0.0
        return usage_cost(price, estimate_prompt_tokens(call.question.messages), self.settings.max_tokens)

    def estimate(self, questions: list[ChoiceQuestion], table: JsonlTable[ChoiceAnswer, str]) -> CostEstimate:
        """First calls of what is still to ask (no re-asks), with what the provider's prompt cache would serve of
        them sent in prefix order (`CacheEstimate`; none through the Batch API, which orders them itself); $0 for
        the in-process engine."""
        calls = self.pending(questions, table.load())
        prompt = sum(estimate_prompt_tokens(c.question.messages) for c in calls)
        cache = CacheEstimate()
        if not self.settings.batch:
            for call in prefix_sorted(calls, call_place):
                cache.add(call.question.place, call.question.messages)
        completion = len(calls) * OUTPUT_TOKENS_PER_VERDICT
        price = self.call_price
        free = self.settings.backend == "vllm"

        def cost(cached: int) -> float | None:
            return 0.0 if free else usage_cost(price, prompt, completion, cached) if price else None

        return CostEstimate(
            calls=len(calls),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=cost(cache.cached_tokens),
            cached_tokens=cache.cached_tokens,
            uncached_cost_usd=cost(0),
            batch_price=self.settings.batch,
        )

    async def check(self) -> None:
        await self.sender.check()

    async def aclose(self) -> None:
        await self.sender.aclose()

    async def ask(
        self,
        questions: list[ChoiceQuestion],
        table: JsonlTable[ChoiceAnswer, str],
        notes: Notes,
        settled: Callable[[bool], None] | None = None,
    ) -> dict[str, ChoiceAnswer]:
        """Every question's answer (key -> ChoiceAnswer), asking what the table does not hold; `settled(failed)` is
        told of each question asked that needs no more asking (a progress bar's advance), failed without a choice."""
        self.sender.bind(table.path.parent, notes)
        answers = self.kept(table)
        wanted = {q.key for q in questions}
        priced = self.price is not None and self.settings.backend != "vllm"
        capped = False
        reread = self.reread(questions, answers)
        answers.update((answer.key, answer) for answer in reread)
        calls = self.pending(questions, answers)
        if not calls and not reread:  # nothing to ask or read again: nothing is opened or written
            return {k: a for k, a in answers.items() if k in wanted}
        budget = Budget(self.settings.max_cost, self.spent_usd)
        with table.appender() as append:
            for answer in reread:
                append(answer)
            while calls:
                affordable = []
                for call in calls:
                    if not budget.reserve(self.call_ceiling(call)):
                        capped = True
                        break
                    affordable.append(call)
                if not affordable:  # not even one more fits: what is in flight elsewhere is left alone
                    break
                asked = []
                async for call, reply in self.sender.send(affordable):
                    before = answers.get(call.question.key)
                    if before is not None and before.question != call.hash:
                        before = None  # a changed question starts afresh
                    answer = read_reply(before, call, reply, priced, self.reader)
                    cost = reply.cost_usd if priced else 0.0
                    budget.settle(self.call_ceiling(call), cost)
                    self._spent[table.path] += cost
                    answers[call.question.key] = answer
                    append(answer)
                    asked.append(call.question)
                    if settled is not None and answer.settled(self.settings.max_retries + 1):
                        settled(answer.choice is None)
                calls = [] if capped else self.pending(asked, answers)
        if capped:
            raise BudgetExhausted(budget.why())
        return {k: a for k, a in answers.items() if k in wanted}

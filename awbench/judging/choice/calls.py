"""What a two-choice question is and how its calls travel: the vocabulary `awbench.judging.choice.judge` and its
senders (`awbench.judging.choice.senders`) share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from awbench.judging import Notes
from awbench.judging.llm.verdict_records import verdict_seed
from awbench.prefix_order import Place
from awbench.records import Usage
from awbench.transport.chat_client import Completion

Messages = list[dict[str, str]]


class ChoiceQuestion(BaseModel):
    """One question: its key in the table, the chat to send, the two responses as the chat shows them (a choice
    the judge quotes from one is flagged as steering), what the caller wants kept with the answer, and where its
    prompt sits among those sharing a prefix (`awbench.prefix_order`: its sample's trajectory and turn, and
    which of the sample's questions it is)."""

    key: str
    messages: Messages
    responses: list[str] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)
    place: Place


@dataclass(frozen=True)
class Call:
    """A question's next call(s): from attempt `first` to at most `last` (transient errors use the rest)."""

    question: ChoiceQuestion
    hash: str
    first: int
    last: int


@dataclass(frozen=True)
class Reply:
    """What came back for a call: a completion, or an error; `attempt` is the last attempt it used."""

    attempt: int
    seed: int | None
    completion: Completion | None = None
    error: str | None = None
    transient: bool = False
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0


class Sender(Protocol):
    """How calls travel: each call's reply, in any order."""

    def send(self, calls: list[Call]) -> AsyncIterator[tuple[Call, Reply]]: ...

    def bind(self, directory: Path, notes: Notes) -> None:
        """The evaluation's directory (for state kept between runs: the Batch API's batches) and notes."""
        ...

    async def check(self) -> None: ...

    async def aclose(self) -> None: ...


def choice_seed(question_hash: str, attempt: int) -> int:
    """The seed of a question's attempt, by the rubric judge's rule (`verdict_seed`)."""
    return verdict_seed(question_hash, 0, attempt)

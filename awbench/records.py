"""Records at the boundaries: benchmark samples in, and what each stage of a run writes to disk.

Every record written to a run carries `schema_version` and the sample `key` (`{domain}/{id}/{turn_idx}`,
with `#2`, `#3`... for repeated keys), so each stage can be resumed or replaced on its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Annotated, Any, Literal

import pydantic_core
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from awbench.domains import DOMAINS, domain_of_task
from awbench.prefix_order import Place

SCHEMA_VERSION = 1


class BenchmarkRecord(BaseModel):
    """One evaluated turn, in the schema of the released `{domain}_test.jsonl` files."""

    model_config = ConfigDict(extra="allow", strict=True)

    task: str
    id: int | str
    prompt: list[str]
    response: list[str]
    current_prompt: str
    system_str: str
    turn_idx: int
    total_turns: int

    @field_validator("task")
    @classmethod
    def _known_domain(cls, task: str) -> str:
        if domain_of_task(task) not in DOMAINS:
            raise ValueError(f"unknown domain {domain_of_task(task)!r}; expected one of {', '.join(DOMAINS)}")
        return task

    @field_validator("total_turns")
    @classmethod
    def _some_turns(cls, total_turns: int) -> int:
        if total_turns < 1:
            raise ValueError(f"total_turns {total_turns} is below 1; a trajectory has at least one turn")
        return total_turns

    @model_validator(mode="after")
    def _turns_consistent(self) -> BenchmarkRecord:
        if not 1 <= self.turn_idx <= len(self.prompt):
            raise ValueError(f"turn_idx {self.turn_idx} is outside 1..len(prompt)={len(self.prompt)}")
        if len(self.response) < self.turn_idx:
            raise ValueError(f"response has {len(self.response)} turns, fewer than turn_idx {self.turn_idx}")
        return self

    @property
    def domain(self) -> str:
        return domain_of_task(self.task)

    @property
    def action(self) -> str:
        return self.prompt[self.turn_idx - 1]

    @property
    def ground_truth(self) -> str:
        return self.response[self.turn_idx - 1]

    @property
    def trajectory_id(self) -> str:
        """Turns of one trajectory share their system prompt and first action."""
        return content_hash([self.system_str, self.prompt[0]])[:16]

    def base_key(self) -> str:
        return f"{self.domain}/{self.id}/{self.turn_idx}"


@dataclass(frozen=True)
class Sample:
    key: str
    record: BenchmarkRecord
    origin: str  # "path:line" or "dataset-id[split]:row", for messages about this sample
    # The record's `record_hash`, computed once: the loader passes the one it computed while checking the
    # record's text; left empty, it is computed here. (So `dataclasses.replace` with another record must
    # pass hash="" too.)
    hash: str = field(default="", compare=False)
    repeats: int = field(default=0, compare=False)  # later rows alike in every field, taken once by the loader

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", record_hash(self.record))

    @property
    def domain(self) -> str:
        return self.record.domain

    def place(self, variant: int = 0) -> Place:
        """Where a request about this sample sits among those sharing its prompt's prefix (`awbench.prefix_order`):
        its trajectory and turn; `variant` tells its requests apart (a generation, a question's order)."""
        return Place(self.record.trajectory_id, self.record.turn_idx, variant)


def content_hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# Characters of a string encoded at once for the hash: a longer one (a turn of megabytes) is hashed in pieces,
# never held encoded whole, nor kept in `encoded`.
HASHED_PIECE = 1 << 20


def record_hash(record: BenchmarkRecord, encoded: dict[str, bytes] | None = None) -> str:
    """`content_hash` of the record's benchmark fields only (so extra fields, such as an imported file's
    `gen`, don't change it): the value of `content_hash(record.model_dump(mode="json", include=those))`,
    without building that JSON text with `json.dumps`, which takes most of the time of loading a large file.
    The same bytes are put together from each string's JSON form (`_json_string`) instead; `encoded` keeps
    those forms for the next records (a trajectory's samples repeat its earlier turns). Raises
    UnicodeEncodeError for text that is not valid Unicode (a lone surrogate), as `content_hash` does."""
    digest = hashlib.sha256()
    add = digest.update  # piece by piece: no copy of the whole text is made

    def add_string(text: str) -> None:
        if len(text) > HASHED_PIECE:  # escaping is character by character, so the pieces' forms make the whole's
            add(b'"')
            for start in range(0, len(text), HASHED_PIECE):
                add(_json_string(text[start : start + HASHED_PIECE])[1:-1])
            add(b'"')
        elif encoded is None:
            add(_json_string(text))
        else:
            form = encoded.get(text)
            if form is None:
                form = encoded[text] = _json_string(text)
            add(form)

    try:
        for name, opening in _HASHED_FIELDS:
            add(opening)
            value = getattr(record, name)
            if type(value) is str:
                add_string(value)
            elif type(value) is list:
                add(b"[")
                for i, item in enumerate(value):
                    if i:
                        add(b", ")
                    add_string(item)
                add(b"]")
            elif type(value) is int or value is None:
                add(json.dumps(value).encode())
            else:
                raise TypeError(name)
    except (TypeError, AttributeError):
        # Not a type the schema allows (a record built without validation): the slow and certain way.
        return content_hash(record.model_dump(mode="json", include=set(BenchmarkRecord.model_fields)))
    add(b"}")
    return digest.hexdigest()


def _exact_json_string(text: str) -> bytes:
    """A string as `json.dumps(..., ensure_ascii=False)` writes it, in UTF-8."""
    return encode_basestring(text).encode()


def _fast_json_string(text: str) -> bytes:
    # pydantic-core escapes exactly the characters json.dumps escapes, and the same way (checked below, and
    # by the tests), about three times as fast. It is given UTF-8 bytes rather than the str: for a non-ASCII
    # str it would keep a UTF-8 copy inside the str for as long as the str lives. Encoding first also raises
    # on a lone surrogate, as json.dumps(...).encode() does. A list item that is not a str has no `encode`
    # (AttributeError), or is a str subclass, which json.dumps writes as a str too.
    return _to_json(text.encode())


_to_json = pydantic_core.to_json


def _choose_json_string() -> Callable[[str], bytes]:
    """The fast way when it gives the exact bytes on every character class that JSON escapes or may."""
    probe = "".join(map(chr, range(0x80))) + '\u00e9\u00ff\u0100\u2028\u2029\ufeff\U0001f600 "/\\'
    try:
        if _fast_json_string(probe) == _exact_json_string(probe):
            return _fast_json_string
    except (pydantic_core.PydanticSerializationError, TypeError, ValueError):
        pass
    return _exact_json_string


_json_string = _choose_json_string()
# In sorted order, as json.dumps(sort_keys=True) writes them: `{"name": ` for the first, `, "name": ` after.
_HASHED_FIELDS = [
    (name, (b"{" if i == 0 else b", ") + json.dumps(name).encode() + b": ")
    for i, name in enumerate(sorted(BenchmarkRecord.model_fields))
]


# What a record or file awbench reads may hold: finite numbers (JSON has no NaN nor infinity; a file holding one was
# not written by awbench), each on its scale. A file holding another value is refused, naming it, never averaged,
# ranked or printed.
FINITE_NUMBERS = ConfigDict(allow_inf_nan=False)
Score = Annotated[float, Field(ge=0, le=100)]  # the reported scale
Dimension = Annotated[float, Field(ge=1, le=5)]  # a rubric dimension's
MAX_CALL_COST_USD = 1e9  # far above a call's cost at config.MAX_PRICE, so that sums of costs stay finite
Cost = Annotated[float, Field(ge=0, le=MAX_CALL_COST_USD)]  # USD, of one call


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", **FINITE_NUMBERS)
    schema_version: int = SCHEMA_VERSION


class Usage(_Record):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None


GenerationStatus = Literal["ok", "empty", "error", "truncated", "overlength"]
FAILED_GENERATION: frozenset[str] = frozenset({"empty", "error", "truncated", "overlength"})


class Generation(BaseModel):
    """What a backend returns for one request, before parsing."""

    key: str
    generation: int = 0
    text: str | None = None
    reasoning: str | None = None  # thinking returned in a separate field
    finish_reason: str | None = None
    error: str | None = None
    transient: bool = False  # the error has a cause that may pass (connection, timeout, 429, 5xx, bad body)
    same_error_attempts: int | None = None  # every attempt failed with one error (numbers aside): how many
    attempts: int = 1  # calls made for it within --max-retries (a rate-limit refusal sent again is free)
    note: str | None = None  # why an answer is empty or unusable, when the backend knows (a baseline's first turn)
    overlength: bool = False
    dropped_turns: int = 0  # history turns removed to fit the context window
    usage: Usage = Field(default_factory=Usage)
    latency_s: float | None = None


class PredictionRecord(_Record):
    """One generation's outcome. On disk `raw` is left out where it equals `prediction` (an answer with no
    thinking, tags or surrounding whitespace), so that a long prediction is stored once; reading such a line
    gives `raw` the prediction back. A record without any text keeps `"raw": null`."""

    key: str
    generation: int = 0  # which of the K generations of this sample (`--generations K`)
    domain: str
    sample_hash: str
    status: GenerationStatus
    prediction: str = ""  # the parsed prediction: no thinking, no tags
    raw: str | None = None  # the model's whole answer; None when there is none
    reasoning: str | None = None
    finish_reason: str | None = None
    error: str | None = None  # why it failed: the server's message, or what the backend knows
    transient: bool = False  # the failure may pass: the same command retries it
    same_error_attempts: int | None = None  # every attempt failed with one error (numbers aside): how many
    attempts: int = 1  # calls made for it within --max-retries (a rate-limit refusal sent again is free)
    flags: list[str] = Field(default_factory=list)  # e.g. "replaced_invalid_text"
    dropped_turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    latency_s: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _raw_left_out_is_the_prediction(cls, data: Any) -> Any:
        if isinstance(data, dict) and "raw" not in data and "prediction" in data:
            return {**data, "raw": data["prediction"]}
        return data

    @model_serializer(mode="wrap")
    def _raw_only_where_it_differs(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        fields = handler(self)
        if self.raw == self.prediction:
            fields.pop("raw", None)  # absent already when the caller excluded it
        return fields

    @property
    def failed(self) -> bool:
        return self.status in FAILED_GENERATION

    @property
    def content(self) -> str:
        """What the model's answer held, thinking and tags included, as the reference's `gen` keeps it whatever
        the status (text a content filter cut short too); "" when no answer came (a transport error, a prompt
        over the context window)."""
        return self.raw if self.raw is not None else self.prediction


JudgeKind = Literal["llm", "rules"]
VerdictStatus = Literal["complete", "partial", "unparsed", "truncated", "error"]


class ReferenceReading(_Record):
    """How the reference `eval.py` reads a verdict: its parser's result on the first answer it reads
    successfully within its three asks, or `success` False. Kept beside awbench's own reading so the number the
    reference prints can be computed from the same answers (`awbench.run.reference_scores`)."""

    success: bool
    # As the reference keeps them: 0 for missing or unusable, negatives as given, a `false` answer as 0.
    scores: dict[str, int | float] = Field(default_factory=dict)
    total_score: float = 0.0  # the mean of the positive scores; 0 when none is
    attempt: int | None = None  # which answer it read
    quoted: bool = False  # awbench found a verdict quoted from the prediction, and the reference read other scores
    # The sha256 of the checkout's code that read it; None for an imported row (the file's own reading) and for
    # readings made by awbench's restatement of the reference's parser, before awbench ran the checkout's code.
    code: str | None = None


class VerdictRecord(_Record):
    """One verdict of an LLM judge (there are K of them with `--judge-samples K`)."""

    status: VerdictStatus
    scores: dict[str, int] = Field(default_factory=dict)  # dimension -> 1..5
    strengths: list[str] = Field(default_factory=list)
    weaknesses: list[str] = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)
    raw: str | None = None
    reasoning: str | None = None
    error: str | None = None
    transient: bool = False  # failed for a cause that may pass (transport, malformed body)
    attempts: int = 1
    same_error_attempts: int | None = None  # every attempt failed with one error (numbers aside): how many
    seed: int | None = None
    usage: Usage = Field(default_factory=Usage)
    reference: ReferenceReading | None = None  # under the reference protocol, and for imported verdicts


class RuleParts(_Record):
    """The rule judge's result for one prediction."""

    score: float  # 0..1
    parts: dict[str, float]
    exact_match: bool
    deterministic_complete: bool


JudgmentStatus = Literal["ok", "partial", "failed"]


class JudgmentRecord(_Record):
    key: str
    generation: int = 0
    domain: str
    judge: JudgeKind
    cache_key: str  # covers everything that can change the verdict
    status: JudgmentStatus
    score: Score | None = None  # None when the judge could not score
    dimensions: dict[str, Dimension] = Field(default_factory=dict)  # the mean over the given dimensions
    verdicts: list[VerdictRecord] = Field(default_factory=list)
    rule: RuleParts | None = None
    error: str | None = None
    transient: bool = False  # failed for a cause that may pass: the same command judges it again
    flags: list[str] = Field(default_factory=list)  # e.g. "suspected_injection"
    cost_usd: Cost | None = None

    @property
    def scored(self) -> bool:
        return self.score is not None


@dataclass(frozen=True)
class JudgeRequest:
    """One prediction to judge. It holds references, not copies: judges render what they send from the
    sample when they send it. `prediction` is the parsed prediction as stored (the candidate's thinking never
    gets here); each judge applies its protocol's marker cleaning."""

    sample: Sample
    prediction: str
    generation: int = 0
    flags: tuple[str, ...] = ()  # what the judgment records about the prediction: "suspected_injection"

    @property
    def key(self) -> str:
        return self.sample.key

    @property
    def domain(self) -> str:
        return self.sample.domain

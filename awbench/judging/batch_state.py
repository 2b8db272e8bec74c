"""The batch judge's files in its evaluation's directory: `batches.json` (every batch entry: its custom_ids,
our token, the uploaded file's id and the batch's id, each saved as soon as it exists; atomically replaced)
and `batch_answers.jsonl` (each attempt's parsed answer as it is downloaded). Everything needed to resume
is in them (`awbench.judging.batch`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from pydantic import BaseModel, Field

from awbench.files import JsonlTable, read_json, write_atomic
from awbench.records import VerdictRecord

STATE_FILE = "batches.json"
ANSWERS_FILE = "batch_answers.jsonl"
DIRECT_SUFFIX = "|direct"  # a verdict finished by direct re-asks (batch_fallback="direct")
RECORDED_SUFFIX = "|recorded"  # a request whose judgment was recorded


class BatchEntry(BaseModel):
    """One batch: what it asks, and how far its submission went."""

    token: str  # ours: names the uploaded file and is in the batch's metadata
    custom_ids: list[str]
    estimated_cost_usd: float = 0.0  # of its requests, at the batch price (what --max-cost reserves)
    tokens: int = 0  # what its requests count against the enqueued-token limit (prompts + max_tokens, estimated)
    created_at: float = Field(default_factory=time.time)
    file_id: str | None = None
    batch_id: str | None = None
    status: str = "preparing"  # preparing, uploaded, then the batch's own status
    counts: dict[str, int] = Field(default_factory=dict)
    collected: bool = False  # its output and error files are read (or it ended without any)
    abandoned: bool = False  # none of its requests was wanted any more: cancelled, never read
    errors: list[str] = Field(default_factory=list)  # a failed batch's reasons
    refused: bool = False  # failed for the enqueued-token limit: nothing ran, no attempt spent

    @property
    def open(self) -> bool:
        return not self.collected and not self.abandoned


class BatchState(BaseModel):
    """batches.json"""

    schema_version: int = 1
    judge_id: str
    token_limit: int | None = None  # the model's enqueued-token limit, learnt from a refusal's message
    batches: list[BatchEntry] = Field(default_factory=list)


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


# How long a batch takes, for --dry-run's wall time: an assumption (OpenAI promises 24 h at most, and says batches
# often finish sooner; it publishes no typical time).
TYPICAL_BATCH_TURNAROUND_S = 3600.0


def learnt_token_limit(directory: Path) -> int | None:
    """The enqueued-token limit an evaluation's batches learnt from a refusal, if any."""
    path = directory / STATE_FILE
    try:
        return BatchState.model_validate(read_json(path)).token_limit if path.exists() else None
    except Exception:
        return None


def batches_in_turn(limit_tokens: int, token_limit: int) -> int:
    """How many batches `limit_tokens` (what the requests count against the limit) take one after another under
    an enqueued-token limit."""
    return -(-limit_tokens // token_limit)


def pending_batches(directory: Path) -> int:
    """How many batches recorded in an evaluation's directory are still open (submitted, not collected)."""
    path = directory / STATE_FILE
    if not path.exists():
        return 0
    try:
        state = BatchState.model_validate(read_json(path))
    except Exception:
        return 0
    return sum(1 for e in state.batches if e.open and e.file_id is not None)


class BatchFiles:
    """One evaluation's batch state (`state`, loaded by `load`) and answers, on disk."""

    def __init__(self, directory: Path, judge_id: str) -> None:
        self.directory = directory
        self.state = BatchState(judge_id=judge_id)
        self._answers = JsonlTable(directory / ANSWERS_FILE, BatchAnswer, lambda a: a.custom_id)

    @property
    def state_path(self) -> Path:
        return self.directory / STATE_FILE

    def load(self) -> BatchState:
        if self.state_path.exists():
            self.state = BatchState.model_validate(read_json(self.state_path))
        return self.state

    def save(self) -> None:
        """batches.json, atomically. With no batch in it, none: an evaluation whose first upload failed leaves no
        file behind (nor its directory, when nothing else is in it)."""
        if not self.state.batches:
            self.state_path.unlink(missing_ok=True)
            if self.directory.is_dir() and not any(self.directory.iterdir()):
                self.directory.rmdir()
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomic(self.state_path, self.state.model_dump_json(indent=1) + "\n")

    def read_answers(self) -> list[BatchAnswer]:
        """Every line of batch_answers.jsonl in order (a torn last line, from a crash mid-write, left out)."""
        return list(self._answers.records())

    def appender(self) -> AbstractContextManager[Callable[[BatchAnswer], None]]:
        """`append(answer)` to batch_answers.jsonl (`JsonlTable.appender`)."""
        return self._answers.appender()

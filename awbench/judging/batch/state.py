"""The batch judge's files in its evaluation's directory: `batches.json` (every batch entry: its custom_ids,
our token, the uploaded file's id and the batch's id, each saved as soon as it exists; atomically replaced)
and `batch_answers.jsonl` (each attempt's parsed answer as it is downloaded). Everything needed to resume
is in them (`awbench.judging.llm.batch_judge`)."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from awbench.files import read_json, write_atomic

STATE_FILE = "batches.json"


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
    # By awbench's count, the most tokens batches are enqueued with: learnt when the API refused a batch under the
    # limit with none of ours in flight (its count is larger than awbench's, or ended batches' tokens linger).
    budget: int | None = None
    batches: list[BatchEntry] = Field(default_factory=list)


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
    """One evaluation's batch state (`state`, loaded by `load`), on disk."""

    def __init__(self, directory: Path, judge_id: str) -> None:
        self.directory = directory
        self.state = BatchState(judge_id=judge_id)

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

"""The Batch API's enqueued-token limit, as both batch senders keep to it (the rubric's `awbench.judging.llm.batch_judge`,
the two-choice questions' `awbench.judging.choice.senders`).

The API holds, per organisation and model, the tokens of the batches not ended yet (each request's prompt plus
its `max_tokens`), and fails a batch that would pass the limit (`token_limit_exceeded`, nothing run). The limit
is `--judge-batch-tokens`, or the one a refusal's message states (kept in batches.json), the smaller. A refused
batch spends no attempt: its requests go out again, split under the limit, as room frees up: once another batch
of ours ends, or, with none in flight, after a wait that grows while such refusals go on (the limit is held by
batches not ours), until MAX_LIMIT_REFUSALS in a row stop the run, resumably.
"""

from __future__ import annotations

import asyncio
from typing import Any

from awbench.judging import Notes
from awbench.judging.batch.api import TOKEN_LIMIT_CODE, stated_limit
from awbench.judging.batch.state import BatchEntry, BatchFiles
from awbench.transport.endpoints import EndpointDown

# Refused for the enqueued-token limit with none of our batches in flight: the limit is held by batches not ours
# (or counts more than we estimate). Asked again after poll interval x 1, 2, 4 ... (at most x this factor) ...
MAX_LIMIT_WAIT_FACTOR = 32
# ... and after this many refusals in a row the run stops, resumably.
MAX_LIMIT_REFUSALS = 6


def refusal(batch: Any) -> list[str] | None:
    """The messages of a batch the API failed for the enqueued-token limit alone (nothing ran); else None."""
    errors = (batch.errors.data or []) if batch.errors else []
    if batch.status == "failed" and errors and all(e.code == TOKEN_LIMIT_CODE for e in errors):
        return [e.message or "" for e in errors]
    return None


def too_large(counted: int, limit: int) -> str:
    """Why a request that alone counts more than the limit fails: no batch can hold it (not transient: the same
    settings fail again)."""
    return (
        f"the request counts ~{counted:,} tokens (its prompt and max_tokens) against the Batch API's "
        f"enqueued-token limit of {limit:,}: no batch can hold it; lower --judge-max-tokens, or judge it "
        "directly (--no-judge-batch)"
    )


class EnqueuedLimit:
    """One sender's view of the limit: what it is, and when new batches may go out after a refusal."""

    def __init__(self, given: int | None, judge_id: str) -> None:
        self.given, self.judge_id = given, judge_id
        self.hold = False  # a batch was refused: submit again after one of ours ends
        self.crowded = 0  # refusals in a row with none of our batches in flight

    def value(self, files: BatchFiles) -> int | None:
        """`--judge-batch-tokens` or the one a refusal stated, the smaller; None while neither is known."""
        known = [n for n in (self.given, files.state.token_limit) if n]
        return min(known) if known else None

    def holding(self, files: BatchFiles) -> bool:
        """Whether new batches wait for one of ours in flight to end (after a refusal)."""
        self.hold = self.hold and any(e.open and e.batch_id for e in files.state.batches)
        return self.hold

    async def pause(self, poll_interval: float) -> None:
        """Before submitting again after refusals with none of ours in flight: a wait that grows with them."""
        if self.crowded:
            await asyncio.sleep(poll_interval * min(2 ** (self.crowded - 1), MAX_LIMIT_WAIT_FACTOR))

    def ended(self) -> None:
        """A batch of ours ended: its tokens are free again."""
        self.hold, self.crowded = False, 0

    def refused(self, files: BatchFiles, entry: BatchEntry, messages: list[str], notes: Notes) -> None:
        """Record a refused batch (its stated limit kept, the entry collected and marked refused); EndpointDown
        after MAX_LIMIT_REFUSALS in a row with none of ours in flight."""
        state = files.state
        stated = [n for n in map(stated_limit, messages) if n is not None]
        if stated:
            state.token_limit = min(stated)
        entry.collected, entry.refused, entry.status = True, True, "failed"
        files.save()
        limit = self.value(files)
        if any(e.open and e.batch_id for e in state.batches):
            self.hold = True
        elif limit is None or entry.tokens <= limit:
            self.crowded += 1
        if self.crowded >= MAX_LIMIT_REFUSALS:
            raise EndpointDown(
                f"the Batch API refused {self.crowded} batches in a row for the model's enqueued-token limit "
                f"with none of this run's batches in flight ({'; '.join(entry.errors)}): other batches of the "
                "organisation hold the limit, or it counts more tokens than estimated. No attempt was spent; run "
                "the same command again later, or give a lower --judge-batch-tokens"
            )
        known = f"the limit is {limit:,} tokens" if limit else "the limit is not stated (--judge-batch-tokens sets it)"
        notes.note(
            f"judge {self.judge_id}: batch {entry.batch_id} was refused for the enqueued-token limit ({known}); "
            f"its {len(entry.custom_ids)} requests (~{entry.tokens:,} tokens) go out again in batches under it as "
            "room frees up, no attempt spent"
        )

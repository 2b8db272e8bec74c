"""The Batch API's enqueued-token limit, as both batch senders keep to it (the rubric's `awbench.judging.llm.batch_judge`,
the two-choice questions' `awbench.judging.choice.senders`).

The API holds, per organisation and model, the tokens of the batches not ended yet (each request's prompt plus
its `max_tokens`), and fails a batch that would pass the limit (`token_limit_exceeded`, nothing run). The limit
is `--judge-batch-tokens`, or the one a refusal's message states (kept in batches.json), the smaller. A refused
batch spends no attempt: its requests go out again, split under the limit, as room frees up:

- with a batch of ours in flight: once one of ours ends;
- with none, and the batch over the limit by awbench's count: split under it at once;
- with none, and the batch under the limit by awbench's count (the API counts more than awbench estimates, as
  providers' counts are opaque, or tokens of ended batches linger): the batches' token budget is halved, at once,
  down to a single request a batch (`BatchState.budget`, kept in batches.json, said);
- a single request refused so: asked again after a wait that grows (poll interval x 1, 2, 4, 8, 16), until
  MAX_LIMIT_REFUSALS in a row stop the run, resumably, saying how long it waited.
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

    def budget(self, files: BatchFiles) -> int | None:
        """What batches are enqueued with at most, by awbench's count: the limit, or the budget refusals under it
        taught, the smaller (a single request goes alone whatever the budget)."""
        known = [n for n in (self.value(files), files.state.budget) if n]
        return min(known) if known else None

    def wait_s(self, poll_interval: float) -> float:
        """The wait before submitting again after `crowded` refusals of a single request in a row."""
        return _wait_s(poll_interval, self.crowded) if self.crowded else 0.0

    def holding(self, files: BatchFiles) -> bool:
        """Whether new batches wait for one of ours in flight to end (after a refusal)."""
        self.hold = self.hold and any(e.open and e.batch_id for e in files.state.batches)
        return self.hold

    async def pause(self, poll_interval: float) -> None:
        """Before submitting again after refusals of a single request with none of ours in flight: a wait that
        grows with them."""
        if self.crowded:
            await asyncio.sleep(self.wait_s(poll_interval))

    def ended(self) -> None:
        """A batch of ours ended: its tokens are free again."""
        self.hold, self.crowded = False, 0

    def refused(
        self, files: BatchFiles, entry: BatchEntry, messages: list[str], notes: Notes, poll_interval: float
    ) -> None:
        """Record a refused batch (its stated limit kept, the entry collected and marked refused), and what comes
        of it (see the module's docstring); EndpointDown after MAX_LIMIT_REFUSALS single requests in a row."""
        state = files.state
        stated = [n for n in map(stated_limit, messages) if n is not None]
        if stated:
            state.token_limit = min(stated)
        entry.collected, entry.refused, entry.status = True, True, "failed"
        limit = self.value(files)
        what = f"batch {entry.batch_id} ({len(entry.custom_ids)} requests, ~{entry.tokens:,} tokens by awbench's count)"
        known = f"the limit is {limit:,} tokens" if limit else "the limit is not stated (--judge-batch-tokens sets it)"
        if any(e.open and e.batch_id for e in state.batches):
            self.hold = True
            then = "they go out again in batches under it once one of this run's batches ends"
        elif limit is not None and entry.tokens > limit:
            then = "they go out again in batches under it"
        elif len(entry.custom_ids) > 1:
            state.budget = max(1, entry.tokens // 2)
            then = (
                "with none of this run's batches in flight, the API counts more than awbench estimates (or tokens "
                f"of ended batches linger): batches now hold at most ~{state.budget:,} tokens by awbench's count, "
                "down to one request each"
            )
        else:
            self.crowded += 1
            if self.crowded >= MAX_LIMIT_REFUSALS:
                files.save()
                waited = sum(_wait_s(poll_interval, n) for n in range(1, self.crowded))  # before each refusal
                raise EndpointDown(
                    f"the Batch API refused {self.crowded} batches of a single request in a row for the model's "
                    f"enqueued-token limit with none of this run's batches in flight, over {waited:g} s of waiting "
                    f"({'; '.join(entry.errors)}): other batches of the organisation hold the limit, or the tokens "
                    "of ended batches linger. No attempt was spent; run the same command again later, or give a "
                    "lower --judge-batch-tokens"
                )
            then = (
                "a single request, with none of this run's batches in flight: other batches hold the limit, or "
                f"tokens of ended batches linger; asked again in {self.wait_s(poll_interval):g} s (refusal "
                f"{self.crowded} of at most {MAX_LIMIT_REFUSALS} in a row)"
            )
        files.save()
        notes.note(
            f"judge {self.judge_id}: {what} was refused for the enqueued-token limit ({known}); {then}; no attempt "
            "spent"
        )


def _wait_s(poll_interval: float, refusals: int) -> float:
    """The wait after `refusals` (at least one) of a single request in a row: poll interval x 1, 2, 4..."""
    return poll_interval * min(2 ** (refusals - 1), MAX_LIMIT_WAIT_FACTOR)

"""Judge requests for tests: a benchmark record built from a history, an action and the real observation."""

from __future__ import annotations

from collections.abc import AsyncIterator

from awbench.records import BenchmarkRecord, JudgeRequest, Sample


async def requests_of(items: list[JudgeRequest]) -> AsyncIterator[JudgeRequest]:
    """A list as the stream judges take."""
    for item in items:
        yield item


def judge_request_for(
    prediction: str = "hi",
    ground_truth: str = "hi",
    action: str = "cat demo/a.txt",
    history: list[str] | None = None,
    domain: str = "terminal",
    sample_id: int | str = 1,
    system: str = "",
    current_prompt: str | None = None,
    flags: tuple[str, ...] = (),
) -> JudgeRequest:
    """`history`: earlier actions and observations, alternating (an even number of items)."""
    history = list(history or [])
    record = BenchmarkRecord(
        task=domain,
        id=sample_id,
        prompt=[*history[0::2], action],
        response=[*history[1::2], ground_truth],
        turn_idx=len(history) // 2 + 1,
        total_turns=len(history) // 2 + 1,
        system_str=system,
        current_prompt=action if current_prompt is None else current_prompt,
    )
    return JudgeRequest(
        sample=Sample(key=record.base_key(), record=record, origin="test"), prediction=prediction, flags=flags
    )

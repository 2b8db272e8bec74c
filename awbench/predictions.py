"""Generation -> stored prediction: parse the text and give the outcome an explicit status (pure)."""

from __future__ import annotations

from awbench.parsing import extract_prediction
from awbench.records import Generation, PredictionRecord, Sample


def prediction_record(sample: Sample, generation: Generation) -> PredictionRecord:
    prediction = "" if generation.error or generation.overlength else extract_prediction(generation.text or "")
    if generation.overlength:  # before error: a backend may attach the server's message to it
        status = "overlength"
    elif generation.error:
        status = "error"
    elif generation.finish_reason == "length":
        status = "truncated"  # cut by max_tokens: usually thinking that never reached the answer
    elif not prediction.strip():
        status = "empty"
    else:
        status = "ok"
    return PredictionRecord(
        key=sample.key,
        domain=sample.domain,
        sample_hash=sample.hash,
        status=status,
        prediction=prediction,
        raw=generation.text,
        reasoning=generation.reasoning,
        finish_reason=generation.finish_reason,
        error=generation.error,
        dropped_turns=generation.dropped_turns,
        usage=generation.usage,
        latency_s=generation.latency_s,
    )

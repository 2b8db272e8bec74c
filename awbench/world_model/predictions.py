"""Generation -> stored prediction: parse the text and give the outcome an explicit status (pure)."""

from __future__ import annotations

from awbench.records import Generation, PredictionRecord, Sample
from awbench.safe_text import REPLACED_FLAG, clean_text
from awbench.world_model.parsing import extract_prediction


def _why_empty(text: str | None, reasoning: str | None, tokens: int | None) -> str:
    """What an answer without a prediction held: nothing at all, thinking only, or thinking and nothing after it."""
    written = f" ({tokens} completion tokens)" if tokens is not None else ""
    if (text or "").strip():
        return "the model's answer has no prediction (nothing left after removing the thinking)"
    if (reasoning or "").strip():
        return f"the model's answer is thinking only, no prediction{written}"
    return f"the model's answer is empty{written}"


def prediction_record(sample: Sample, generation: Generation) -> PredictionRecord:
    text, text_replaced = clean_text(generation.text)
    reasoning, reasoning_replaced = clean_text(generation.reasoning)
    error, error_replaced = clean_text(generation.error)
    note, note_replaced = clean_text(generation.note)
    finish_reason, finish_replaced = clean_text(generation.finish_reason)
    prediction = "" if error or generation.overlength else extract_prediction(text or "")
    if generation.overlength:  # before error: a backend may attach the server's message to it
        status = "overlength"
    elif error:
        status = "error"
    elif finish_reason == "length":
        status = "truncated"  # cut by max_tokens: usually thinking that never reached the answer
        error = "cut off by the token limit (--max-tokens) before the answer ended"
    elif not prediction.strip():
        status = "empty"
        error = note or _why_empty(text, reasoning, generation.usage.completion_tokens)
    else:
        status = "ok"
    return PredictionRecord(
        key=sample.key,
        generation=generation.generation,
        domain=sample.domain,
        sample_hash=sample.hash,
        status=status,
        prediction=prediction,
        raw=text,
        reasoning=reasoning,
        finish_reason=finish_reason,
        error=error,
        transient=generation.transient and status == "error",
        same_error_attempts=generation.same_error_attempts if status == "error" else None,
        flags=[REPLACED_FLAG]
        if text_replaced or reasoning_replaced or error_replaced or note_replaced or finish_replaced
        else [],
        dropped_turns=generation.dropped_turns,
        usage=generation.usage,
        latency_s=generation.latency_s,
        attempts=generation.attempts,
    )

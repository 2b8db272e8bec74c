"""One sample's full story, for `awbench show` and the report: its recent history, the action, prediction and
ground truth, scores and the judge's reasons; and which samples scored worst."""

from __future__ import annotations

import difflib

from pydantic import BaseModel

from awbench.analysis.runs import RunData
from awbench.run.failures import readable
from awbench.run.scoring import Outcome, generation_outcome
from awbench.world_model.parsing import strip_observation_marker


class Reasons(BaseModel):
    status: str
    strengths: list[str]
    weaknesses: list[str]


class SampleView(BaseModel):
    key: str
    domain: str
    trajectory: str
    origin: str
    context: list[tuple[str, str]]  # the turns just before this one: (action, observation)
    earlier_turns: int  # turns of history not in `context`
    action: str
    prediction: str
    ground_truth: str
    status: str | None  # the generation's status; None when there is no prediction
    error: str | None
    score: float | None  # 0..100, as it enters the means
    dimensions: dict[str, float]  # 0..100
    rule_parts: dict[str, float] | None
    flags: list[str] = []  # e.g. suspected_injection, replaced_invalid_text
    reasons: list[Reasons]


def sample_view(data: RunData, key: str, judge_id: str, context_turns: int = 2) -> SampleView:
    sample = data.samples.get(key)
    if sample is None:
        raise KeyError(key)
    record = sample.record
    kind = data.evaluation(judge_id).kind
    point = next((p for p in data.points(judge_id).get(sample.domain, []) if p[0] == key), None)
    prediction = data.prediction(key)
    judgment = data.judgment(judge_id, key)
    history = range(max(0, record.turn_idx - 1 - context_turns), record.turn_idx - 1)
    return SampleView(
        key=key,
        domain=sample.domain,
        trajectory=record.trajectory_id,
        origin=sample.origin,
        context=[(record.prompt[i], strip_observation_marker(record.response[i])) for i in history],
        earlier_turns=max(0, record.turn_idx - 1 - context_turns),
        action=record.action,
        prediction=strip_observation_marker(prediction.prediction) if prediction else "",
        ground_truth=strip_observation_marker(record.ground_truth),
        status=prediction.status if prediction else None,
        error=(prediction.error if prediction else None) or (judgment.error if judgment else None),
        # Only the LLM judge has rubric dimensions (sample_points gives failures zeros for any judge).
        score=point[1] if point else None,
        dimensions=point[2] if point and kind == "llm" else {},
        rule_parts=judgment.rule.parts if judgment and judgment.rule else None,
        flags=[*(prediction.flags if prediction else []), *(judgment.flags if judgment else [])],
        reasons=[
            Reasons(status=v.status, strengths=v.strengths, weaknesses=v.weaknesses)
            for v in (judgment.verdicts if judgment else [])
        ],
    )


def worst_keys(
    data: RunData, judge_id: str, n: int, domain: str | None = None, dimension: str | None = None
) -> list[str]:
    """The n lowest-scored samples (by total, or by one dimension), lowest first; ties by key."""
    points = [p for d, pts in data.points(judge_id).items() if domain in (None, d) for p in pts]
    if dimension:
        points = [p for p in points if dimension in p[2]]
    ranked = sorted(points, key=lambda p: (p[2][dimension] if dimension else p[1], p[0]))
    return [key for key, _, _ in ranked[:n]]


def failed_keys(data: RunData, judge_id: str, domain: str | None = None) -> list[str]:
    """Samples with a failed generation, or a generation the judge could not score, in data order; not the
    ones still waiting for a prediction or a verdict (`pending_count`)."""
    keys = []
    for key, sample in data.samples.items():
        if domain in (None, sample.domain) and any(
            _outcome(data, judge_id, key, g) in ("failed", "unscored") for g in range(data.generations)
        ):
            keys.append(key)
    return keys


def pending_count(data: RunData, judge_id: str, domain: str | None = None) -> int:
    """Generations not judged yet (no prediction, or no verdict record): waiting, not failing."""
    return sum(
        _outcome(data, judge_id, key, g) == "pending"
        for key, sample in data.samples.items()
        if domain in (None, sample.domain)
        for g in range(data.generations)
    )


def _outcome(data: RunData, judge_id: str, key: str, generation: int) -> Outcome:
    return generation_outcome(data.prediction(key, generation), data.judgment(judge_id, key, generation))


class SampleLine(BaseModel):
    """One sample in a list (`show --failed`, `--flagged`): its key, what became of it, and why."""

    key: str
    status: str  # the generation's status (empty, error, truncated, overlength), unscored, or its flags
    reason: str


def failure_line(data: RunData, judge_id: str, key: str) -> SampleLine:
    """The first failed or unscored generation of a sample, with its error on one line."""
    for g in range(data.generations):
        prediction, judgment = data.prediction(key, g), data.judgment(judge_id, key, g)
        outcome = generation_outcome(prediction, judgment)
        if outcome == "failed" and prediction is not None:
            return SampleLine(key=key, status=prediction.status, reason=readable(prediction.error or prediction.status))
        if outcome == "unscored" and judgment is not None:
            return SampleLine(key=key, status="unscored", reason=readable(judgment.error or "no usable verdict"))
    return SampleLine(key=key, status="scored", reason="")


def flag_line(data: RunData, judge_id: str, key: str) -> SampleLine:
    flags = {
        flag
        for g in range(data.generations)
        for record in (data.prediction(key, g), data.judgment(judge_id, key, g))
        if record is not None
        for flag in record.flags
    }
    return SampleLine(key=key, status="flagged", reason=", ".join(sorted(flags)))


def flagged_keys(data: RunData, judge_id: str, domain: str | None = None) -> list[str]:
    """Samples whose judgment carries a flag (suspected_injection) or whose texts were repaired."""
    judgments = data.evaluation(judge_id).judgments
    return [
        key
        for key, sample in data.samples.items()
        if domain in (None, sample.domain)
        and any(
            ((j := judgments.get((key, g))) and j.flags) or ((p := data.prediction(key, g)) and p.flags)
            for g in range(data.generations)
        )
    ]


def unified_diff(ground_truth: str, prediction: str) -> list[str]:
    return list(
        difflib.unified_diff(
            ground_truth.splitlines(), prediction.splitlines(), "ground truth", "prediction", lineterm=""
        )
    )


def clip(text: str, limit: int) -> str:
    """Head and tail of a long text: the end of an observation often carries its exit status or prompt."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}\n… [{len(text) - limit} characters cut] …\n{text[-(limit - head) :]}"

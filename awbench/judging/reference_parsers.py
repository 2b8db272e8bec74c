"""The reference `eval.py`'s readings, reproduced exactly: what QwenLM/Qwen-AgentWorld's parsers make of a judge
answer, of a generation and of a choice answer, so awbench can print the numbers the reference prints.

These are deliberately not awbench's own parser (`awbench/judging/verdict_parsing.py`): they keep the reference's
quirks (a colon inside a string breaks the JSON, a capitalised key scores 0, a verdict quoted after the
judge's own wins). The reference's parser sources are not public; the specification is its recorded
behaviour in `tests/fixtures/reference/` (800 judge answers, 300 generations, 13 choice answers), reproduced
field by field. docs/judging.md ("Reading answers as the reference does") lists the rules.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from awbench.domains import DIMENSIONS, OBSERVATION_MARKER

_JUDGE_TAG = "final_evaluation"
_PREDICTION_TAG = "predicted_observation"
NO_OUTPUT = "No output"  # what the reference judges in place of a generation with nothing outside its thinking

_THINK_TAG = re.compile(r"<(/?)think>", re.I)
_THINK_OPEN = re.compile(r"<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_JUDGE_OPEN = re.compile(rf"<{_JUDGE_TAG}>", re.I)
_JUDGE_CLOSE = re.compile(rf"</{_JUDGE_TAG}>", re.I)
_PREDICTION_OPEN = re.compile(rf"<{_PREDICTION_TAG}>", re.I)
_PREDICTION_CLOSE = re.compile(rf"</{_PREDICTION_TAG}>", re.I)
# Only a lowercase ```json fence counts; ```JSON, ~~~ and bare ``` fences are read as plain text.
_JSON_FENCE = re.compile(r"```json(.*?)```", re.S)
# The reference's JSON repairs, in order. The bare-key one also fires inside strings ("note: x" becomes
# ',"note":'), which breaks JSON that was valid: kept, since the reference reads such answers that way.
_SINGLE_QUOTED_KEY = re.compile(r"'(\w+)'\s*:")
_BARE_KEY = re.compile(r"([{,])\s*(\w+)\s*:")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
# When the object does not load, the reference loads its scores object alone (up to the first "}"), behind a
# fixed prefix: its JSON errors then point into that string, and strengths and weaknesses come back empty.
_SCORES_OBJECT = re.compile(r'"scores":(\s*\{[^}]+\})')
_SALVAGE_PREFIX = '{"strengths":[],"weaknesses":[],"scores":'
_BOXED_CHOICE = re.compile(r"boxed\{\s*([AB])\s*\}", re.I)
_BARE_CHOICE = re.compile(r"\b([AB])\b")
_MAX_SCORE = 5


class ReferenceVerdict(NamedTuple):
    success: bool
    scores: dict[str, int]  # every dimension; 0 where missing or unusable, negatives kept, above 5 cut to 5
    total_score: float  # mean of the scores above 0; int 0 when none is, 0.0 on failure
    strengths: list[str]
    weaknesses: list[str]
    error_message: str | None
    source: str = ""  # the object's text as the answer holds it, before any repair ("" on failure)


class ReferenceGeneration(NamedTuple):
    judged: bool  # the reference judges every generation but an empty one
    extracted: str  # its `parse_model_output(generation, "predicted_observation")`
    shown_to_judge: str  # that text after its observation-marker cleaning


class _Unreadable(Exception):
    """An answer the reference's parser gives up on; the message is the reference's `error_message`."""


def reference_verdict(answer: str) -> ReferenceVerdict:
    """`parse_judge_output(answer, "final_evaluation")` of the reference, as `eval.py` reads it."""
    try:
        data, source = _verdict_object(answer)
        scores = {dimension: _score(data["scores"].get(dimension)) for dimension in DIMENSIONS}
    except _Unreadable as unreadable:
        return _failed(str(unreadable))
    except (ValueError, OverflowError, RecursionError) as error:  # NaN or infinite scores, absurd nesting
        return _failed(f"Error: {error}")
    counted = [score for score in scores.values() if score > 0]
    total = sum(counted) / len(counted) if counted else 0
    return ReferenceVerdict(
        True, scores, total, _texts(data.get("strengths")), _texts(data.get("weaknesses")), None, source
    )


def reference_generation(generation: str, domain: str) -> ReferenceGeneration:
    """What the reference's judge stage does with a generation of `domain`. Its marker cleaning takes the
    domain but treats all seven alike (checked on every domain of the fixtures)."""
    extracted = _extracted(generation)
    return ReferenceGeneration(generation != "", extracted, reference_clean(extracted))


def reference_clean(text: str) -> str:
    """The reference's marker cleaning: a leading marker is cut off, else every occurrence is removed; then
    whitespace is stripped."""
    if text.startswith(OBSERVATION_MARKER):
        return text[len(OBSERVATION_MARKER) :].strip()
    return text.replace(OBSERVATION_MARKER, "").strip()


def reference_choice(answer: str) -> str | None:
    """The reference's `extract_choice_answer` for Turing-test and pairwise answers: the last `boxed{A}` or
    `boxed{B}` (any case, spaces inside), else the last standalone capital A or B; None when it fails."""
    boxed = _BOXED_CHOICE.findall(answer)
    if boxed:
        return boxed[-1].upper()
    bare = _BARE_CHOICE.findall(answer)
    return bare[-1] if bare else None


def _extracted(generation: str) -> str:
    """The reference's `parse_model_output(generation, "predicted_observation")`: the text after the last
    opening tag, up to its closing tag or the end (an empty block gives ""); without an opening tag, the text
    after the last `</think>` and before an unclosed `<think>`, or "No output" when nothing is left."""
    opening = _last(_PREDICTION_OPEN, generation)
    if opening is not None:
        rest = generation[opening.end() :]
        closing = _PREDICTION_CLOSE.search(rest)
        return (rest[: closing.start()] if closing else rest).strip()
    closing_think = _last(_THINK_CLOSE, generation)
    text = generation[closing_think.end() :] if closing_think else generation
    unclosed = _THINK_OPEN.search(text)
    text = text[: unclosed.start()] if unclosed else text
    return text.strip() or NO_OUTPUT


def _verdict_object(answer: str) -> tuple[dict[str, Any], str]:
    """The object the reference takes the verdict from, with a `scores` object in it, and its text."""
    if not answer.strip():
        raise _Unreadable("Empty output")
    text = _strip_thinking(answer)
    region = _judge_block(text)
    fences = _JSON_FENCE.findall(region)
    source = _last_object(fences[-1] if fences else region)
    if source is None:
        raise _Unreadable("No JSON object found")
    candidate = _repaired(source)
    try:
        data = json.loads(candidate)
    except json.JSONDecodeError as error:
        data = _salvaged_scores(candidate, error)
    if not isinstance(data.get("scores"), dict):
        raise _Unreadable(f"Invalid scores. Keys: {list(data)}")
    return data, source


def _strip_thinking(text: str) -> str:
    """Each `</think>` closes the nearest open `<think>` before it and the pair goes, with all between (so in
    `<think>a<think>b</think>` the outer one stays open). An orphan `</think>` stays. An unclosed `<think>`
    hides the text up to the next `<final_evaluation>`, or to the end."""
    removed: list[tuple[int, int]] = []
    open_at: list[int] = []
    for tag in _THINK_TAG.finditer(text):
        if not tag.group(1):
            open_at.append(tag.start())
        elif open_at:
            start = open_at.pop()
            while removed and removed[-1][0] > start:  # an inner pair, inside this one
                removed.pop()
            removed.append((start, tag.end()))
    kept, position = [], 0
    for start, end in removed:
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    text = "".join(kept)
    parts, position = [], 0
    while (unclosed := _THINK_OPEN.search(text, position)) is not None:
        parts.append(text[position : unclosed.start()])
        verdict = _JUDGE_OPEN.search(text, unclosed.end())
        position = verdict.start() if verdict else len(text)
    parts.append(text[position:])
    return "".join(parts)


def _judge_block(text: str) -> str:
    """The last `<final_evaluation>` block (to its closing tag, or the end); the whole text when there is none
    or it holds only whitespace."""
    opening = _last(_JUDGE_OPEN, text)
    if opening is None:
        return text
    rest = text[opening.end() :]
    closing = _JUDGE_CLOSE.search(rest)
    block = rest[: closing.start()] if closing else rest
    return block if block.strip() else text


def _last_object(text: str) -> str | None:
    """From the last `}` back to the `{` that balances it, counting every brace (strings included)."""
    end = text.rfind("}")
    depth = 0
    for index in range(end, -1, -1):
        if text[index] == "}":
            depth += 1
        elif text[index] == "{":
            depth -= 1
            if depth == 0:
                return text[index : end + 1]
    return None


def _repaired(candidate: str) -> str:
    candidate = _SINGLE_QUOTED_KEY.sub(r'"\1":', candidate)
    candidate = _BARE_KEY.sub(r'\1"\2":', candidate)
    return _TRAILING_COMMA.sub(r"\1", candidate)


def _salvaged_scores(candidate: str, error: json.JSONDecodeError) -> dict[str, Any]:
    """The scores object alone, loaded behind the reference's prefix; the last JSON error is the message."""
    scores = _SCORES_OBJECT.search(candidate)
    if scores is None:
        raise _Unreadable(f"JSON error: {error}")
    try:
        return json.loads(_SALVAGE_PREFIX + scores.group(1) + "}")
    except json.JSONDecodeError as salvage_error:
        raise _Unreadable(f"JSON error: {salvage_error}") from salvage_error


def _score(value: Any) -> int:
    """A number rounds half to even (NaN and infinities raise, as in the reference); a string reads as an
    integer, `"n/..."` as n; anything else is 0. Above 5 becomes 5; 0 and negatives stay as they are."""
    if isinstance(value, (int, float)):  # booleans too: true is 1
        score = round(value)
    elif isinstance(value, str):
        try:
            score = int(value.split("/")[0])
        except ValueError:  # "N/A", "3 out of 5", "5.0", an integer of more than 4300 digits
            score = 0
    else:
        score = 0
    return min(score, _MAX_SCORE)


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(item) for item in value]
    return [value] if isinstance(value, str) else []


def _failed(message: str) -> ReferenceVerdict:
    return ReferenceVerdict(False, dict.fromkeys(DIMENSIONS, 0), 0.0, [], [], message)


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    matches = list(pattern.finditer(text))
    return matches[-1] if matches else None

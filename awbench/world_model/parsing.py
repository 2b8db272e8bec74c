"""A candidate world model's raw generation -> the predicted observation that gets judged."""

from __future__ import annotations

import re

from awbench.domains import OBSERVATION_MARKER

PREDICTION_OPEN = "<predicted_observation>"

_THINK_TAG = re.compile(r"<(/?)think>", re.I)
_UP_TO_LAST_THINK_CLOSE = re.compile(r"\A.*</think>", re.I | re.S)
_PREDICTION_OPEN = re.compile(re.escape(PREDICTION_OPEN), re.I)
_PREDICTION_CLOSE = re.compile(r"</predicted_observation>", re.I)
# Only the exact marker, optionally indented, then the rest of its line's blanks and one line break.
_MARKER = re.compile(r"\A\s*" + re.escape(OBSERVATION_MARKER) + r"[ \t]*(?:\r?\n)?")


def strip_thinking(text: str, resume_at: str | None = PREDICTION_OPEN) -> str:
    """Remove a model's thinking from `text`. Tags match case-insensitively; the rules apply in this order:

    1. every complete `<think>...</think>` block goes, pairing each opening tag with the nearest closing tag
       after it (so `<think>a<think>b</think>c</think>d` leaves `c</think>d` for rule 2);
    2. a closing `</think>` left over has no opening tag before it (the chat template opened the thinking):
       everything up to the last such tag goes, the tag included;
    3. an opening `<think>` left over was never closed (thinking cut off): the text from it goes, up to the
       first `resume_at` tag after it (which is kept), or to the end when there is none or `resume_at` is
       None. Repeated for every such tag.

    Rule 1 comes first so that a closed block before a stray tag cannot be mistaken for an orphan.
    Judges pass `resume_at="<final_evaluation>"`, where their verdict starts, as the reference parser does.
    """
    # Rule 1 as a scan over the tags: a lazy `<think>.*?</think>` regex is quadratic on many unclosed tags.
    kept: list[str] = []
    kept_from, opened_at = 0, None
    for tag in _THINK_TAG.finditer(text):
        closing = bool(tag.group(1))
        if not closing and opened_at is None:
            opened_at = tag.start()
        elif closing and opened_at is not None:
            kept.append(text[kept_from:opened_at])
            kept_from, opened_at = tag.end(), None
    text = "".join(kept) + text[kept_from:]
    text = _UP_TO_LAST_THINK_CLOSE.sub("", text, count=1)
    resume = rf"(?={re.escape(resume_at)})|" if resume_at else ""
    return re.sub(rf"<think>.*?(?:{resume}\Z)", "", text, flags=re.I | re.S)


def extract_prediction(generation: str) -> str:
    """The predicted observation in a generation, surrounding whitespace stripped.

    After removing thinking, it is the content of the last `<predicted_observation>` block; an unclosed
    block runs to the end. A closing tag without any opening one is read as a block opened at the start
    of the text (the prompt may have opened it). Without any tag, it is the whole cleaned text.
    """
    text = strip_thinking(generation)
    openings = list(_PREDICTION_OPEN.finditer(text))
    if openings:
        text = text[openings[-1].end() :]
    close = _PREDICTION_CLOSE.search(text)
    if close:
        text = text[: close.start()]
    return text.strip()


def strip_observation_marker(text: str) -> str:
    """Drop a leading `**Environment Observation:**` marker (the exact text, possibly indented) and the line
    break after it, so that predictions and ground truths are judged on their content alone."""
    return _MARKER.sub("", text, count=1)

"""A judge's answer to a two-choice question ("Response A" or "Response B"?) read under awbench's own protocol:
only the judge's own explicit choice counts, never one it quotes from the question it was sent.

Explicit choices in the answer:
  - a box, anywhere: `\\boxed{A}`, `\\boxed{ b }`, `\\boxed{\\text{A}}`;
  - an answer line, anywhere: a line holding a label and a letter and nothing else ("Answer: A",
    "**Final answer:** Response B", "The answer is B.", "Choice: A");
  - on the answer's last line (the last holding a letter or a digit) only: its last sentence stating which
    response it is, unconditionally ("Response A is the real observation", "The response B is closer to the
    real observation than A"; not "... if the clock is right"), or the letter alone ("B", "**Response A**").
A capital A or B anywhere else is no choice. The last explicit choice that is not a quote is the judge's, so a
judge that quotes after answering keeps its answer, and a quoted box does not overrule a later answer line.

Quotes are told against the exact texts of the messages the judge was sent (the system prompt, the user
message with its instructions and both responses as shown), normalised as the rubric's verdict parser
normalises them (`verdict_parsing.normalise`: no whitespace, no `>` markers at line starts). A choice is quoted
  - when it occurs in one of them together with at least `CONTEXT` more characters of the answer around it, on
    either side: a box copied with the end of a response, an echoed instruction ("\\boxed{A} if Response A is
    the real observation"), a fake end of the prompt;
  - or when the answer marks it as a quote (a blockquote line, a fenced block: `verdict_parsing.FENCED_BLOCK`,
    anything between its first and last fence lines) and its line is a line of one of the responses: a response
    that is little more than a box, quoted at the end of the answer, where no context follows it.
The judge's own words around its choice make it the judge's own, and so does nothing around it (the whole
answer "\\boxed{A}"). A choice the judge writes inline in its own words ("B ends with \\boxed{A}") cannot be
told from an answer; a later answer of its own overrules it.

A quoted choice whose own text is in one of the responses is flagged `steering_suspected`: a response carries
a choice, and the judge copied it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, NamedTuple, cast

from awbench.judging.llm.verdict_parsing import FENCED_BLOCK, Normalised, normalise

CHOICE_READER = "awbench-choice-1"  # part of each question's hash: bump when the reading changes
STEERING_FLAG = "steering_suspected"
# The least number of the answer's characters, normalised, around a choice that must occur with it in a message
# for it to be a quote: more than a judge's own answer shares with the instructions by chance ("as \boxed{A}").
CONTEXT = 12
# The choices compared with the messages, the last first: a degenerate answer holding thousands of boxes is
# read in bounded time.
MAX_CANDIDATES = 64
# Longer lines are prose, never an answer line or a lone letter (and the patterns stay cheap on them).
_MAX_ANSWER_LINE = 200

NO_CHOICE = (
    "no choice: no \\boxed{A} or \\boxed{B}, no answer line such as 'Answer: A', and no last line naming a response"
)
ONLY_QUOTED = "no choice of the judge's own: every choice in the answer is quoted from the question"

Choice = Literal["A", "B"]

_BOX = re.compile(r"boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*([AB])\s*\}|([AB]))\s*\}", re.I)
_OPEN = r"[ \t*_`\"'(\[]*"
_CLOSE = r"[ \t*_`\"')\].!]*"
_RESPONSE = r"(?:(?i:response)\s+)?"
_LABEL = r"(?i:(?:(?:my|the)\s+)?(?:final\s+)?(?:answer|choice|verdict|decision)(?:\s+is)?)"
_ANSWER_LINE = re.compile(rf"[ \t*_#]*{_LABEL}[ \t]*[:=\-\u2013\u2014]?{_OPEN}{_RESPONSE}([AB]){_CLOSE}")
_LONE_LETTER = re.compile(rf"{_OPEN}{_RESPONSE}([AB]){_CLOSE}")
_STATEMENT = re.compile(
    r"\b(?i:response)\s+([AB])\s+(?i:is\s+(?:the\s+)?"
    r"(?:real|genuine|authentic|actual|closer|better|more\s+(?:realistic|accurate|faithful)))\b"
)
_CONDITIONAL = re.compile(r"\b(?i:if|unless|whether)\b")
_SENTENCE_END = re.compile(r"[.!?]\s+")
_LINE = re.compile(r"[^\n]+")
_BLOCKQUOTE_LINE = re.compile(r"^[ \t]*>.*$", re.M)
_FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.M)
_WORD = re.compile(r"\w")


class ChoiceReading(NamedTuple):
    choice: Choice | None
    flags: tuple[str, ...]  # STEERING_FLAG
    reason: str | None  # why there is no choice


class _Candidate(NamedTuple):
    start: int
    end: int
    choice: Choice


def read_choice(answer: str, messages: Sequence[str], responses: Sequence[str]) -> ChoiceReading:
    """The judge's own explicit choice in `answer` (see the module docstring). `messages`: the texts of the
    messages it was sent; `responses`: the two responses as they show them. Never raises."""
    text = answer.replace("\r\n", "\n")
    candidates = _candidates(text)
    if not candidates:
        return ChoiceReading(None, (), NO_CHOICE)
    shown = _Shown(messages, responses)
    normalised = Normalised(text)
    marked = _marked_quotes(text)
    choice: Choice | None = None
    steering = False
    for candidate in reversed(candidates[-MAX_CANDIDATES:]):
        marked_line = _inside(candidate, marked) and shown.is_response_line(_line_of(text, candidate))
        if marked_line or shown.quoted(normalised, candidate):
            own = normalised.text[normalised.index_at(candidate.start) : normalised.index_at(candidate.end)]
            steering = steering or shown.in_response(own)
        else:
            choice = choice or candidate.choice
    flags = (STEERING_FLAG,) if steering else ()
    return ChoiceReading(choice, flags, None if choice else ONLY_QUOTED)


def _marked_quotes(text: str) -> list[tuple[int, int]]:
    """The spans the answer marks as quotes: its blockquote lines, its fenced blocks' contents, and everything
    from its first fence line to its last (a response holding a fence line of its own, quoted in a fence,
    pairs the fences wrongly and leaves its end outside any block)."""
    spans = [line.span() for line in _BLOCKQUOTE_LINE.finditer(text)]
    spans += [(fence.start(2), fence.end(2)) for fence in FENCED_BLOCK.finditer(text)]
    fence_lines = list(_FENCE_LINE.finditer(text))
    if len(fence_lines) > 1:
        spans.append((fence_lines[0].start(), fence_lines[-1].end()))
    return spans


def _inside(candidate: _Candidate, spans: list[tuple[int, int]]) -> bool:
    return any(start <= candidate.start and candidate.end <= end for start, end in spans)


def _line_of(text: str, candidate: _Candidate) -> str:
    end = text.find("\n", candidate.end)
    return text[text.rfind("\n", 0, candidate.start) + 1 : len(text) if end < 0 else end]


def _candidates(text: str) -> list[_Candidate]:
    """Every explicit choice in `text`, in order of where it starts."""
    found = [_Candidate(m.start(), m.end(), _letter(m.group(1) or m.group(2))) for m in _BOX.finditer(text)]
    last_line = None
    for line in _LINE.finditer(text):
        if len(line.group()) <= _MAX_ANSWER_LINE and (match := _ANSWER_LINE.fullmatch(line.group())):
            found.append(_Candidate(line.start(), line.end(), _letter(match.group(1))))
        if _WORD.search(line.group()):
            last_line = line
    if last_line is not None:
        found += _last_line_candidates(last_line)
    return sorted(found)


def _last_line_candidates(line: re.Match[str]) -> list[_Candidate]:
    """The statements of the line's last sentence, unless it is a conditional one; or the line's lone letter."""
    content, offset = line.group(), line.start()
    found = []
    sentence = max((end.end() for end in _SENTENCE_END.finditer(content)), default=0)
    if not _CONDITIONAL.search(content, sentence):
        for match in _STATEMENT.finditer(content, sentence):
            found.append(_Candidate(offset + match.start(), offset + match.end(), _letter(match.group(1))))
    if len(content) <= _MAX_ANSWER_LINE and (lone := _LONE_LETTER.fullmatch(content)):
        found.append(_Candidate(offset, line.end(), _letter(lone.group(1))))
    return found


def _letter(text: str) -> Choice:
    return cast(Choice, text.upper())


class _Shown:
    """The texts the judge was shown, normalised once."""

    def __init__(self, messages: Sequence[str], responses: Sequence[str]) -> None:
        self.responses = [normalise(response) for response in responses]
        self.texts = [normalise(message) for message in messages] + self.responses
        self.response_lines = {normalise(line) for response in responses for line in response.split("\n")} - {""}

    def quoted(self, answer: Normalised, candidate: _Candidate) -> bool:
        """Whether the candidate and CONTEXT more characters of the answer around it occur in one of the texts.
        A quote longer than that holds such a window, so the windows of exactly CONTEXT more characters are all
        there is to try."""
        first, last = answer.index_at(candidate.start), answer.index_at(candidate.end)
        for before in range(CONTEXT + 1):
            start, end = first - before, last + CONTEXT - before
            if start < 0:
                break
            if end <= len(answer.text) and any(answer.text[start:end] in text for text in self.texts):
                return True
        return False

    def is_response_line(self, line: str) -> bool:
        return normalise(line) in self.response_lines

    def in_response(self, choice: str) -> bool:
        """Whether a choice's normalised text is in one of the responses."""
        return any(choice in response for response in self.responses)

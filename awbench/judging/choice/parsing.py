"""A judge's answer to a two-choice question ("Response A" or "Response B"?) read under awbench's own protocol:
only the judge's own explicit choice counts, never one it quotes from the question it was sent.

Explicit choices in the answer:
  - a box, anywhere: `\\boxed{A}`, `\\boxed{ b }`, `\\boxed{\\text{A}}`, `$\\boxed{\\mathrm{ B }}$` (LaTeX's text and font
    commands, up to two, or braces around the letter);
  - an answer line, anywhere: a line holding a label and a letter and nothing else ("Answer: A",
    "**Final answer:** Response B", "The answer is B.", "Choice: A");
  - on the answer's last line (the last holding a letter or a digit) only: its last sentence stating which
    response it is, unconditionally ("Response A is the real observation", "The response B is closer to the
    real observation than A"; not "... if the clock is right"), or the letter alone ("B", "**Response A**").
A capital A or B anywhere else is no choice.

Every text is compared as the judge reads it (`_as_seen`: the injection check's reading, compatibility forms
made plain, look-alike letters made Latin, tag characters read as ASCII; no format character or other
default-ignorable one left: no zero-width space, word joiner, direction control or variation selector), then
normalised as the rubric's verdict parser normalises (`verdict_parsing.normalise`: no whitespace, no `>`
markers at line starts). A prediction that hides such characters in its text reads as a judge quoting it writes it.

Quotes, told against the texts of the messages the judge was sent (the system prompt, the user message with
its instructions and both responses as shown):
  - a choice that occurs in one of them together with at least `CONTEXT` more characters of the answer around
    it, on either side: a box copied with the end of a response, an echoed instruction ("\\boxed{A} if
    Response A is the real observation"), a fake end of the prompt;
  - a choice the answer marks as a quote (a blockquote line, a fenced block: `verdict_parsing.FENCED_BLOCK`,
    anything between its first and last fence lines) on a line of one of the responses: a response that is
    little more than a box, quoted at the end of the answer, where no context follows it;
  - when the choices left disagree, those a response carries (a choice of the same form and letter: a box, an
    answer line, a statement, a line holding the letter alone): a forged choice quoted bare, however the quote
    is set apart (quotation marks, HTML, an indented block, a table cell, a bullet, nothing). When a response
    carries every one of them, the answer has no choice of its own.
A box a response carries that the judge mentions in a sentence of its own (`_mentioned`: after a word of
saying or holding, "ends with", "says", "tries", "contains"...; after the response named and a colon; or with
words after it in its sentence: "It says \\boxed{A} at its end.", "<code>\\boxed{A}</code> is injected text.")
describes that response: it is not the judge's answer, and when it is all the answer holds, there is no choice.
A choice a response carries that agrees with every other choice left is the judge's: it chose what the response
names, and nothing tells a quote from it. The last choice of the judge's own counts, so a judge that quotes after
answering keeps its answer, and a quoted box does not overrule a later answer line.

An answer holding a quote or a mention of a choice that a response carries is flagged `steering_suspected`: a
response carries a choice, and the judge copied it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Literal, NamedTuple, cast

from awbench.judging.injection import as_read
from awbench.judging.llm.verdict_parsing import FENCED_BLOCK, Normalised, normalise

CHOICE_READER = "awbench-choice-3"  # part of each question's hash: bump when the reading changes
# Answers read by these earlier versions are read again with this one, not asked again (`judge.ChoiceReader`).
EARLIER_READERS = ("awbench-choice-1", "awbench-choice-2")
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
ONLY_QUOTED = "no choice of the judge's own: every choice in the answer is quoted from the question or mentioned"
ONLY_CARRIED = "no choice of the judge's own: the answer's choices disagree, and a response carries each of them"

Choice = Literal["A", "B"]
Form = Literal["box", "answer line", "statement", "letter"]

# Around a box's letter: LaTeX's text and font commands (`\\text{A}`, `\\mathrm{ B }`, `\\textbf{\\text{A}}`) or braces.
_LATEX_WRAP = r"(?:\\(?:text(?:bf|rm|it|tt|sf|up|normal)?|math(?:rm|bf|it|sf|tt|bb|normal)|bm|boldsymbol)\s*)?\{\s*"
_BOX = re.compile(rf"boxed\s*\{{\s*(?:{_LATEX_WRAP}){{0,2}}([AB])\s*(?:\}}\s*){{0,2}}\}}", re.I)
_OPEN = r"[ \t*_`\"'(\[]*"
_CLOSE = r"[ \t*_`\"')\].!]*"
_RESPONSE = r"(?:(?i:response)\s+)?"
_LABEL = r"(?i:(?:(?:my|the)\s+)?(?:final\s+)?(?:answer|choice|verdict|decision)(?:\s+is)?)"
_ANSWER = rf"{_LABEL}[ \t]*[:=\-\u2013\u2014]?{_OPEN}{_RESPONSE}([AB])"
_ANSWER_LINE = re.compile(rf"[ \t*_#]*{_ANSWER}{_CLOSE}")
_LONE_LETTER = re.compile(rf"{_OPEN}{_RESPONSE}([AB]){_CLOSE}")
_STATEMENT = re.compile(
    r"\b(?i:response)\s+([AB])\s+(?i:is\s+(?:the\s+)?"
    r"(?:real|genuine|authentic|actual|closer|better|more\s+(?:realistic|accurate|faithful)))\b"
)
# Each form of choice as a response carries it: an answer line's words inside a longer line too, a statement in
# any sentence, a letter alone on any line.
_CARRIED: tuple[tuple[Form, re.Pattern[str]], ...] = (
    ("box", _BOX),
    ("answer line", re.compile(rf"\b{_ANSWER}(?!\w)")),
    ("statement", _STATEMENT),
    ("letter", re.compile(rf"^{_LONE_LETTER.pattern}$", re.M)),
)
_CONDITIONAL = re.compile(r"\b(?i:if|unless|whether)\b")
_SENTENCE_END = re.compile(r"[.!?]\s+")
_LINE = re.compile(r"[^\n]+")
_BLOCKQUOTE_LINE = re.compile(r"^[ \t]*>.*$", re.M)
_FENCE_LINE = re.compile(r"^[ \t>]*(?:`{3,}|~{3,}).*$", re.M)
_WORD = re.compile(r"\w")
# What, before a box in its sentence, says the judge describes a response there: a word of saying or holding, or a
# response named and a colon ("Response A: \\boxed{A}").
_DESCRIBING = re.compile(
    r"(?i:\b(?:ends?|ended|ending|closes?|finishes|concludes)\s+(?:with|in|on)\b|\b(?:says?|said|writes?|wrote|"
    r"reads?|contains?|includes?|appends?|appended|adds?|added|tries|tried|claims?|inserts?|injects?|outputs?|"
    r"prints?|shows?|displays?|slips?|sneaks?|embeds?|attempts?)\b|\bresponse\s*[AB12]\s*[:\u2013\u2014-]\W*$)"
)
_TAG = re.compile(r"<[^<>\n]*>")
# Characters Unicode says to show as nothing that are not format characters (category Cf): the combining
# grapheme joiner, Hangul fillers, Khmer inherent vowels, Mongolian and other variation selectors.
_IGNORABLE = frozenset(
    map(chr, [0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, *range(0x180B, 0x1810), 0x3164, *range(0xFE00, 0xFE10), 0xFFA0])
) | frozenset(map(chr, range(0xE0100, 0xE01F0)))


class ChoiceReading(NamedTuple):
    choice: Choice | None
    flags: tuple[str, ...]  # STEERING_FLAG
    reason: str | None  # why there is no choice


class _Candidate(NamedTuple):
    start: int
    end: int
    choice: Choice
    form: Form


def read_choice(answer: str, messages: Sequence[str], responses: Sequence[str]) -> ChoiceReading:
    """The judge's own explicit choice in `answer` (see the module docstring). `messages`: the texts of the
    messages it was sent; `responses`: the two responses as they show them. Never raises."""
    text = _as_seen(answer)
    candidates = _candidates(text)
    if not candidates:
        return ChoiceReading(None, (), NO_CHOICE)
    shown = _Shown(messages, responses)
    normalised = Normalised(text)
    marked = _marked_quotes(text)
    unquoted: list[_Candidate] = []  # the last first
    steering = False
    for candidate in reversed(candidates[-MAX_CANDIDATES:]):
        marked_line = _inside(candidate, marked) and shown.is_response_line(_line_of(text, candidate))
        if marked_line or shown.quoted(normalised, candidate):
            steering = steering or shown.carries(candidate)
        elif candidate.form == "box" and shown.carries(candidate) and _mentioned(text, candidate):
            steering = True
        else:
            unquoted.append(candidate)
    return _judges_own(unquoted, shown, steering)


def _judges_own(unquoted: list[_Candidate], shown: _Shown, steering: bool) -> ChoiceReading:
    """The last of the choices not quoted, unless they disagree: then those a response carries are quotes too."""
    own = unquoted
    if len({candidate.choice for candidate in unquoted}) > 1:
        own = [candidate for candidate in unquoted if not shown.carries(candidate)]
        steering = steering or len(own) < len(unquoted)
    flags = (STEERING_FLAG,) if steering else ()
    if own:
        return ChoiceReading(own[0].choice, flags, None)
    return ChoiceReading(None, flags, ONLY_CARRIED if unquoted else ONLY_QUOTED)


def _as_seen(text: str) -> str:
    """`text` as a judge reads it: the injection check's reading (`injection.as_read`: compatibility forms
    made plain, look-alike letters made Latin, tag characters read as ASCII, the common invisible characters
    gone) without any other format character (Unicode category Cf) or default-ignorable one, and no CRLF."""
    _, latin = as_read(text.replace("\r\n", "\n"))
    if latin.isascii():
        return latin
    hidden = {char for char in set(latin) if char in _IGNORABLE or unicodedata.category(char) == "Cf"}
    return latin.translate(dict.fromkeys(map(ord, hidden))) if hidden else latin


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


def _mentioned(text: str, candidate: _Candidate) -> bool:
    """Whether the box sits in a sentence that describes a response (`_DESCRIBING` before it), or in one that goes
    on after it in words (markup aside): a mention, not an answer given as the last thing written."""
    line_end = text.find("\n", candidate.end)
    before = text[text.rfind("\n", 0, candidate.start) + 1 : candidate.start]
    after = text[candidate.end : len(text) if line_end < 0 else line_end]
    before = before[max((end.end() for end in _SENTENCE_END.finditer(before)), default=0) :]
    after = after[: sentence_end.start() if (sentence_end := _SENTENCE_END.search(after)) else len(after)]
    return bool(_DESCRIBING.search(_TAG.sub(" ", before)) or _WORD.search(_TAG.sub(" ", after)))


def _candidates(text: str) -> list[_Candidate]:
    """Every explicit choice in `text`, in order of where it starts."""
    found = _boxes(text)
    last_line = None
    for line in _LINE.finditer(text):
        found += _whole_line(line, _ANSWER_LINE, "answer line")
        if _WORD.search(line.group()):
            last_line = line
    if last_line is not None:
        found += _last_sentence_statements(last_line) + _whole_line(last_line, _LONE_LETTER, "letter")
    return sorted(found)


def _carried(response: str) -> set[tuple[Form, Choice]]:
    """The choices a response carries, of every form, wherever they are (`_CARRIED`): what a judge quoting it
    bare would copy."""
    return {(form, _letter(match)) for form, pattern in _CARRIED for match in pattern.finditer(response)}


def _boxes(text: str) -> list[_Candidate]:
    return [_Candidate(m.start(), m.end(), _letter(m), "box") for m in _BOX.finditer(text)]


def _whole_line(line: re.Match[str], pattern: re.Pattern[str], form: Form) -> list[_Candidate]:
    """The line as a choice of this form, when the pattern matches all of it."""
    if len(line.group()) <= _MAX_ANSWER_LINE and (match := pattern.fullmatch(line.group())):
        return [_Candidate(line.start(), line.end(), _letter(match), form)]
    return []


def _last_sentence_statements(line: re.Match[str]) -> list[_Candidate]:
    """The statements of the line's last sentence, unless it is a conditional one."""
    content, offset = line.group(), line.start()
    sentence = max((end.end() for end in _SENTENCE_END.finditer(content)), default=0)
    if _CONDITIONAL.search(content, sentence):
        return []
    statements = _STATEMENT.finditer(content, sentence)
    return [_Candidate(offset + m.start(), offset + m.end(), _letter(m), "statement") for m in statements]


def _letter(match: re.Match[str]) -> Choice:
    """The letter a choice's pattern matched (its one group)."""
    return cast(Choice, match.group(1).upper())


class _Shown:
    """The texts the judge was shown, as seen and normalised once, and the choices the responses carry."""

    def __init__(self, messages: Sequence[str], responses: Sequence[str]) -> None:
        seen = [_as_seen(response) for response in responses]
        self.texts = [normalise(_as_seen(message)) for message in messages] + [normalise(text) for text in seen]
        self.response_lines = {normalise(line) for text in seen for line in text.split("\n")} - {""}
        self.carried = set().union(*map(_carried, seen))

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

    def carries(self, candidate: _Candidate) -> bool:
        """Whether a response carries a choice of the candidate's form and letter."""
        return (candidate.form, candidate.choice) in self.carried

"""The LLM judge's raw output -> its verdict: rubric scores, strengths and weaknesses.

Judges reason first and end with a `<final_evaluation>` block holding a fenced JSON object
`{"strengths": [...], "weaknesses": [...], "scores": {dimension: 1..5}}`. Real outputs drift from that,
so the parser is lenient in what it reads and records every liberty it took in `flags`. Only the judge's own
verdict counts: one it quotes from the prediction it was shown (a prediction may carry a fake verdict) is not.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from typing import Any, Literal, NamedTuple

import json_repair
import pydantic

from awbench.domains import DIMENSIONS
from awbench.world_model.parsing import strip_thinking

PARSER_VERSION = "3"  # bump when parsing behaviour changes; it is part of the verdict cache key

FINAL_OPEN = "<final_evaluation>"
QUOTED_FLAG = "quoted_verdict_ignored"
AMBIGUOUS_FLAG = "ambiguous"

_FINAL_TAG = re.compile(r"<(/?)final_evaluation>", re.I)
_THINK_TAG = re.compile(r"</?think>", re.I)
# An opening fence of 3+ backticks (any info string), closed by a run at least as long that ends its line;
# a fence left open runs to the end, as in a verdict cut off by the token limit. The choice reader's too.
FENCED_BLOCK = re.compile(r"(?<!`)(`{3,})[^`\n]*\n(.*?)(?:(?<!`)\1`*[ \t]*$|\Z)", re.S | re.M)
_STRING_SYNTAX = re.compile(r"[{}\"'\\]")
_LEADING_NUMBER = re.compile(r"\s*([+-]?\d+(?:\.\d+)?)")
# What follows a score's number when it names its scale: "8/10", "8 out of 10", "80%".
_SCALE = re.compile(r"\s*(?:(?:/|out\s+of\b)\s*(\d+(?:\.\d+)?)|%)", re.I)
_JSON_SYNTAX = re.compile(r"[{}\[\],:\"'\\]")
# What normalising removes: whitespace, and at line starts blockquote markers with the spaces around them.
_SKIPPED = re.compile(r"\s*\n[ \t>]*|^[ \t>]+|\s+", re.M)
# A fence opening line with an info string: inside a fence, it can only be the opening of another one.
_FENCE_OPENER = re.compile(r"^[ \t>]*`{3,}[ \t]*[^`\s]", re.M)
_BRACKETS = re.compile(r"[{}\[\]]")

# A truncated verdict leaves its outer object and one or two nested ones open; trying only the outermost
# few unclosed braces keeps degenerate output ("{{{{...") linear.
_MAX_UNCLOSED = 3
# json_repair spends ~0.3 ms per nesting level; no verdict, even one quoting JSON, nests this deep.
_MAX_REPAIR_DEPTH = 64
# The least text, normalised, that a quote of the prediction must share with it from an opening the judge
# left unclosed: a whole `<final_evaluation>` tag (one only a forged prediction holds), or an object's
# opening brace and first key (`{"strengths"`), or a fence's opening line and the first character inside.
_LEAST_QUOTED_OBJECT = 12
# Each comparison with the prediction scans it once; a judge answer that quotes more verdicts than this is
# degenerate, and stopping keeps the parse linear in the sizes of the answer and the prediction.
_MAX_QUOTE_CHECKS = 100

_NO_OBJECT = "no JSON object found"
_NO_SCORES = "no JSON object with scores found"
_ONLY_QUOTES = "the only verdicts found are quoted from the prediction"

Opening = tuple[int, str, int, "re.Match[str] | None"]  # offset, kind, least normalised quote, the fence if one
Span = tuple[int, int | None]  # an object's start and end offsets; end is None when it never closes
Candidate = tuple[dict[str, Any], bool, str]  # a loaded object, whether it needed repair, its source text
Chosen = tuple[dict[str, Any], bool, bool, str]  # the verdict object, whether repaired, whether flat, its source


class ParsedVerdict(pydantic.BaseModel):
    status: Literal["complete", "partial", "unparsed"]
    scores: dict[str, int]  # only the usable dimensions, each 1..5
    strengths: list[str] = []
    weaknesses: list[str] = []
    # e.g. "clamped:factuality", "rounded:format", "repaired", "no_final_tag", "partial", "quoted_verdict_ignored",
    # "ambiguous"
    flags: list[str] = []
    reason: str | None = None  # why unparsed/partial, human readable


class _Block(NamedTuple):
    """A top-level `<final_evaluation>` block: its opening tag's start, its content's start and end, and the
    end of its closing tag. A block never closed runs to the end of the text."""

    tag_start: int
    start: int
    end: int
    close_end: int


class _TooManyQuotes(Exception):
    pass


def parse_verdict(raw: str, prediction: str = "") -> ParsedVerdict:
    """Parse a judge's output. Never raises: an output without a usable verdict is `unparsed`, with a reason.

    `prediction` is the text the judge was shown as the candidate's prediction. Only the judge's own verdict
    counts, never one it quotes from the prediction (a prediction may carry a fake verdict to be copied).

    Thinking goes first: `strip_thinking` with a `<think>` never closed ending at the first
    `<final_evaluation>` tag after it, as the reference parser does; a thinking tag quoted from the prediction
    is blanked out first (see Quotes).

    Where the verdict is looked for: the last top-level `<final_evaluation>` block that is not a quote (tags
    nest, so a block quoted inside a verdict's strings stays inside it; an unclosed block runs to the end);
    when the text has no such block, the text outside any block (flagged "no_final_tag"). Inside it, in order
    of preference: the last fenced code block holding an object with a `scores` key, the last balanced `{...}`
    object with one, the last never-closed object with one (a truncated verdict, repaired); failing all of
    those, the first object in that same order with a rubric dimension among its top-level keys (a flat
    verdict, flagged "flat_scores"). Strings are parsed strictly first, then repaired (flagged "repaired").

    Quotes, told against `prediction` normalised (`normalise`: no whitespace, no `>` markers at line
    starts), so that verbatim, fenced, blockquoted, indented and re-wrapped quotes match:
    - unclosed openings first (`_blank_quotes`): a `<final_evaluation>` tag or `{` the judge never closes, a
      fence that runs to the end or holds another fence's opening line, and any thinking tag, is a quote when
      the text from it occurs in the prediction for at least the opening itself; the quote, as far as the
      text goes on occurring, is blanked out. A fake verdict left unclosed and quoted before the judge's own
      would otherwise take the judge's closing tag, fence and braces for its own, and be repaired.
    - then each candidate, and each block as a whole, is quoted when its text occurs in the prediction
      (trailing fence marks and ellipses aside, so a quote cut off by the token limit matches too).
    "quoted_verdict_ignored" is flagged when a quote was passed over where a verdict would have been read;
    with only quotes, the result is unparsed. The judge's text must occur in the prediction, never the
    reverse, so a short object of the prediction such as `{"format": 5}` cannot hide a judge's verdict that
    differs from it. Quotes that change more than whitespace and `>` markers are not recognised.

    Ambiguity: a key given twice with different values in the verdict or its `scores` (`_conflicting_keys`)
    makes the verdict unparsed, flagged "ambiguous".

    Scores: ints 1..5; floats are rounded as Python's `round` does, strings take their leading number
    ("4/5", "4 out of 5" -> 4) unless they name another scale ("8/10", "8 out of 10", "80%": unusable), and
    out-of-range numbers are clamped. complete = all five dimensions usable, partial = some, unparsed = none.
    Keys match case-insensitively; extra dimensions are ignored.
    """
    quotes = _Quotes(prediction)
    try:
        # A thinking tag quoted from the prediction is no thinking of the judge's (an orphan `</think>` quoted
        # after the verdict would remove the verdict with it).
        text = strip_thinking(_blank_quotes(raw, quotes, _think_tags(raw)), resume_at=FINAL_OPEN)
        if not text.strip():
            reason = "empty output" if not raw.strip() else "nothing left after removing the thinking"
            return ParsedVerdict(status="unparsed", scores={}, reason=reason)
        return _parse_unquoted(text, quotes)
    except _TooManyQuotes:
        reason = f"more than {_MAX_QUOTE_CHECKS} verdict candidates to compare with the prediction"
        return ParsedVerdict(status="unparsed", scores={}, flags=[QUOTED_FLAG], reason=reason)


def _parse_unquoted(text: str, quotes: _Quotes) -> ParsedVerdict:
    """`_parse` on the text with unclosed quotes blanked out. A blanked quote is flagged when it stood where a
    verdict would have been read: the text as written parses differently, or only by passing over a quote."""
    unquoted = _blank_quotes(text, quotes, _unclosed_openings(text))
    verdict = _parse(unquoted, quotes)
    if unquoted == text or QUOTED_FLAG in verdict.flags:
        return verdict
    as_written = _parse(text, quotes)
    if QUOTED_FLAG in as_written.flags or (as_written.status, as_written.scores) != (verdict.status, verdict.scores):
        verdict.flags.insert(0, QUOTED_FLAG)
        if verdict.reason in (_NO_OBJECT, _NO_SCORES):
            verdict.reason = _ONLY_QUOTES
    return verdict


def _parse(text: str, quoted: _Quotes) -> ParsedVerdict:
    """The verdict in the last block that is not a quote, else in the text outside the blocks."""
    blocks = _final_blocks(text)
    skipped = False
    for block in reversed(blocks):
        if quoted(text[block.tag_start : block.end]):
            skipped = True
            continue
        loaded = _load_candidates(text[block.start : block.end])
        chosen, skipped_here = _choose(loaded, quoted)
        skipped |= skipped_here
        if chosen is None and skipped_here:  # it holds quoted verdicts and none of the judge's own
            continue
        return _verdict(chosen, loaded, [QUOTED_FLAG] if skipped else [])
    # No block, or every block is a quote: the judge's own verdict, if any, stands outside them.
    outside = _outside(text, blocks)
    loaded = _load_candidates(outside)
    chosen, skipped_here = _choose(loaded, quoted)
    skipped |= skipped_here
    flags = [QUOTED_FLAG, "no_final_tag"] if skipped else ["no_final_tag"]
    if chosen is None and skipped:
        reason = _ONLY_QUOTES
        return ParsedVerdict(status="unparsed", scores={}, flags=flags, reason=reason)
    return _verdict(chosen, loaded, flags)


def _verdict(chosen: Chosen | None, loaded: list[Candidate], flags: list[str]) -> ParsedVerdict:
    """The verdict from the chosen object; without one, unparsed with the reason."""
    if chosen is None:
        reason = _NO_SCORES if loaded else _NO_OBJECT
        return ParsedVerdict(status="unparsed", scores={}, flags=flags, reason=reason)
    verdict, repaired, flat, source = chosen
    conflicts = _conflicting_keys(source)
    if conflicts:
        reason = "ambiguous verdict: different values for " + ", ".join(conflicts)
        return ParsedVerdict(status="unparsed", scores={}, flags=[*flags, AMBIGUOUS_FLAG], reason=reason)
    if repaired:
        flags.append("repaired")
    if flat:
        flags.append("flat_scores")
    return _build(verdict, verdict if flat else verdict["scores"], flags)


def _final_blocks(text: str) -> list[_Block]:
    """The top-level `<final_evaluation>` blocks in order; one still open at the end runs to the end."""
    stack: list[tuple[int, int]] = []
    blocks: list[_Block] = []
    for tag in _FINAL_TAG.finditer(text):
        if not tag.group(1):
            stack.append((tag.start(), tag.end()))
        elif stack:
            tag_start, start = stack.pop()
            if not stack:
                blocks.append(_Block(tag_start, start, tag.start(), tag.end()))
    if stack:  # still open: it started after the last complete block, and runs to the end
        tag_start, start = stack[0]
        blocks.append(_Block(tag_start, start, len(text), len(text)))
    return blocks


def _outside(text: str, blocks: list[_Block]) -> str:
    """The text with the blocks, tags included, cut out."""
    pieces, kept_from = [], 0
    for block in blocks:
        pieces.append(text[kept_from : block.tag_start])
        kept_from = block.close_end
    pieces.append(text[kept_from:])
    return "\n".join(pieces)


class _Quotes:
    """Whether a piece of the judge's answer is quoted from the prediction (see `parse_verdict`)."""

    def __init__(self, prediction: str) -> None:
        self._prediction = prediction
        self._active = bool(prediction.strip())  # an empty prediction quotes nothing
        self._haystack: str | None = None  # the normalised prediction, made on first use
        self._seen: dict[str, bool] = {}  # normalised text -> quoted; at most _MAX_QUOTE_CHECKS entries

    @property
    def active(self) -> bool:
        return self._active

    def __call__(self, text: str) -> bool:
        if not self._active:
            return False
        # A quote cut short on purpose may still close its fence or end in an ellipsis: those marks go.
        needle = normalise(text).rstrip("`~.\u2026")
        if not needle:
            return False
        if needle not in self._seen:
            if len(self._seen) >= _MAX_QUOTE_CHECKS:
                raise _TooManyQuotes
            self._seen[needle] = self._occurs(needle)
        return self._seen[needle]

    def quote_end(self, answer: Normalised, start: int, least: int) -> int | None:
        """Where a quote of the prediction starting at offset `start` of the answer ends: the end of the longest
        text from there that, normalised, occurs in the normalised prediction. None when that is shorter than
        `least` normalised characters. A binary search: a text occurs only if each of its prefixes does."""
        if not self._active:
            return None
        first = answer.index_at(start)
        longest = min(len(answer.text) - first, len(self._normalised_prediction()))
        if longest < least or not self._occurs(answer.text[first : first + least]):
            return None
        low, high = least, longest
        while low < high:
            middle = (low + high + 1) // 2
            if self._occurs(answer.text[first : first + middle]):
                low = middle
            else:
                high = middle - 1
        return answer.offset_after(first + low - 1)

    def _normalised_prediction(self) -> str:
        if self._haystack is None:
            self._haystack = normalise(self._prediction)
        return self._haystack

    def _occurs(self, needle: str) -> bool:
        return needle in self._normalised_prediction()


def normalise(text: str) -> str:
    """`text` without blockquote markers at line starts (`>`, `> >`, as judges quote with them) and without any
    whitespace. Spaces and tabs around the markers go with the whitespace, so a line loses its leading run of
    spaces, tabs and `>`. The choice reader (`awbench.judging.choice.parsing`) tells quotes the same way."""
    if ">" in text:
        text = "".join(line.lstrip(" \t>") for line in text.split("\n"))
    return "".join(text.split())


class Normalised:
    """A judge's answer normalised as `normalise` does (a regular expression, slower on a long prediction than
    `normalise`, but with the way back to offsets in the answer)."""

    def __init__(self, text: str) -> None:
        kept: list[tuple[int, int]] = []  # the spans of the answer that normalising keeps
        position = 0
        for skipped in _SKIPPED.finditer(text):
            if skipped.start() > position:
                kept.append((position, skipped.start()))
            position = max(position, skipped.end())
        if position < len(text):
            kept.append((position, len(text)))
        self.text = "".join(text[start:end] for start, end in kept)
        self._starts = [start for start, _ in kept]  # each kept span's offset in the answer...
        self._indexes = list(itertools.accumulate((end - start for start, end in kept), initial=0))[:-1]  # ...and here

    def index_at(self, offset: int) -> int:
        """The index in the normalised text of the first character kept at or after `offset` of the answer."""
        span = bisect.bisect_right(self._starts, offset) - 1
        if span < 0:
            return 0
        return self._indexes[span] + min(offset - self._starts[span], self._length(span))

    def offset_after(self, index: int) -> int:
        """The offset in the answer just after the character at `index` of the normalised text."""
        span = bisect.bisect_right(self._indexes, index) - 1
        return self._starts[span] + index - self._indexes[span] + 1

    def _length(self, span: int) -> int:
        following = self._indexes[span + 1] if span + 1 < len(self._indexes) else len(self.text)
        return following - self._indexes[span]


def _blank_quotes(text: str, quotes: _Quotes, openings: list[Opening]) -> str:
    """`text` with each quote of the prediction that starts at one of the `openings` blanked out (spaces, line
    breaks kept): of a verdict the judge left unclosed (`_unclosed_openings`), or of a thinking tag.

    A prediction that ends in an opening `<final_evaluation>` tag, fence and object never closes them; quoted
    before the judge's own verdict, they would take the judge's closing tag, fence and braces for theirs and
    swallow its verdict. So an opening the judge leaves unclosed (a fence whose closing line comes only after
    another fence's opening line counts as one) is a quote when the text from it, normalised, occurs in the
    prediction for at least the opening itself; the quote runs as far as that text does. The judge's own
    verdict may start as a fake one does, but it closes what it opens after the point where it differs.
    """
    if not quotes.active:
        return text
    answer: Normalised | None = None
    blanks: list[tuple[int, int]] = []
    checks: dict[str, int] = {}
    for start, kind, least, fence in openings:
        if any(begin <= start < end for begin, end in blanks) or checks.get(kind, 0) >= _MAX_UNCLOSED:
            continue  # inside a quote found already; or past the few of its kind compared, in degenerate text
        checks[kind] = checks.get(kind, 0) + 1
        answer = answer or Normalised(text)
        end = quotes.quote_end(answer, start, least)
        if end is None:
            continue
        if fence and fence.end() > fence.end(2) and not _FENCE_OPENER.search(text, end, fence.end(2)):
            continue  # closed after the quote, with no other fence opening before: the judge's own fence
        blanks.append((start, end))
    if not blanks:
        return text
    chars = list(text)
    for start, end in blanks:
        chars[start:end] = [" " if char != "\n" else char for char in text[start:end]]
    return "".join(chars)


def _unclosed_openings(text: str) -> list[Opening]:
    """In order: the `<final_evaluation>` tags and `{` braces never closed in `text`, and the fences that run
    to the end of it or hold another fence's opening line; each with the least normalised length a quote
    from it must have: the tag, an object's opening and first key, a fence's opening line and a character."""
    tags: list[int] = []
    for tag in _FINAL_TAG.finditer(text):
        if not tag.group(1):
            tags.append(tag.start())
        elif tags:
            tags.pop()
    openings: list[Opening] = [(start, "tag", len(FINAL_OPEN), None) for start in tags]
    spans = _object_spans(text, unclosed_limit=len(text))
    openings += [(start, "object", _LEAST_QUOTED_OBJECT, None) for start, end in spans if end is None]
    for fence in FENCED_BLOCK.finditer(text):
        if fence.end() == fence.end(2) or _FENCE_OPENER.search(text, fence.start(2), fence.end(2)):
            opening = normalise(text[fence.start() : fence.start(2)])
            openings.append((fence.start(), "fence", len(opening) + 1, fence))
    return sorted(openings, key=lambda opening: opening[0])


def _think_tags(text: str) -> list[Opening]:
    """Every `<think>` and `</think>` tag; a quote from one must hold the tag and the character after it."""
    return [(tag.start(), "think", len(tag.group()) + 1, None) for tag in _THINK_TAG.finditer(text)]


def _load_candidates(block: str) -> list[Candidate]:
    """Every object in the block with whether it needed repair and its source text, in order of preference:
    fenced blocks, balanced objects, then never-closed ones, each kind last first. Top-level keys are
    lower-cased."""
    spans = _object_spans(block)
    texts = [fence.group(2) for fence in FENCED_BLOCK.finditer(block)][::-1]
    texts += [block[start:end] for start, end in reversed(spans) if end is not None]
    texts += [block[start:] for start, end in reversed(spans) if end is None]
    candidates: list[Candidate] = []
    for text in texts:
        loaded = _load_object(text)
        if loaded is not None:
            candidates.append((_lower_keys(loaded[0]), loaded[1], text))
    return candidates


def _choose(loaded: list[Candidate], quoted: _Quotes) -> tuple[Chosen | None, bool]:
    """The first object not quoted with a `scores` key, else the first with a dimension as a top-level key
    (flat); and whether a quoted one was passed over on the way."""
    skipped = False
    for flat, is_verdict in ((False, _has_scores), (True, _has_dimension)):
        for obj, repaired, source in loaded:
            if not is_verdict(obj):
                continue
            if quoted(source):
                skipped = True
                continue
            return (obj, repaired, flat, source), skipped
    return None, skipped


def _has_scores(obj: dict[str, Any]) -> bool:
    return "scores" in obj


def _has_dimension(obj: dict[str, Any]) -> bool:
    return any(dim in obj for dim in DIMENSIONS)


def _build(verdict: dict[str, Any], scores_given: Any, flags: list[str]) -> ParsedVerdict:
    """The verdict from the chosen object; its status follows from how many dimensions have a usable score."""
    texts = {"strengths": _texts(verdict.get("strengths")), "weaknesses": _texts(verdict.get("weaknesses"))}
    if not isinstance(scores_given, dict):
        reason = f"scores is {_describe(scores_given)}, not an object"
        return ParsedVerdict(status="unparsed", scores={}, flags=flags, reason=reason, **texts)
    given = _lower_keys(scores_given)
    scores: dict[str, int] = {}
    problems: list[str] = []
    for dim in DIMENSIONS:
        if dim not in given:
            problems.append(f"{dim} missing")
            continue
        score, notes = _score(given[dim])
        if score is None:
            problems.append(f"{dim} unusable ({_describe(given[dim])})")
        else:
            scores[dim] = score
            flags += [f"{note}:{dim}" for note in notes]
    if not problems:
        return ParsedVerdict(status="complete", scores=scores, flags=flags, **texts)
    if not scores:
        reason = "no usable score: " + "; ".join(problems)
        return ParsedVerdict(status="unparsed", scores={}, flags=flags, reason=reason, **texts)
    flags.append("partial")
    return ParsedVerdict(status="partial", scores=scores, flags=flags, reason="; ".join(problems), **texts)


def _score(value: Any) -> tuple[int | None, list[str]]:
    """A score as an int in 1..5 (None when unusable) and what was done to it: "rounded", "clamped"."""
    notes: list[str] = []
    if isinstance(value, bool):  # bool is an int subclass, but true/false is no score
        return None, notes
    if isinstance(value, str):
        number = _LEADING_NUMBER.match(value)
        if not number:
            return None, notes
        scale = _SCALE.match(value, number.end())
        if scale and (scale.group(1) is None or float(scale.group(1)) != 5):
            return None, notes  # "8/10", "8 out of 10", "80%": on another scale, no 1..5 score
        value = float(number.group(1))
    if isinstance(value, float):
        if not math.isfinite(value):
            return None, notes
        if not value.is_integer():
            notes.append("rounded")
        value = round(value)  # half to even, as the reference script: 2.5 -> 2, 3.5 -> 4
    if not isinstance(value, int):
        return None, notes
    if not 1 <= value <= 5:
        notes.append("clamped")
        value = min(max(value, 1), 5)
    return value, notes


def _conflicting_keys(source: str) -> list[str]:
    """The keys given more than once with different values (whitespace aside) in the object that opens
    `source` (`key`) or in its `scores` object (`scores.key`), keys read as the parser reads them (trimmed,
    lower-cased). One pass over the text, strings skipped as `_object_spans` skips them, so it reads a
    truncated or loosely written object as json_repair does, before the repair keeps the last value."""
    start = source.find("{")
    if start < 0:
        return []
    # One frame per open brace or bracket: the key path it records under (None: not looked at), where its
    # current key starts, the current key, and where that key's value starts.
    frames: list[list[Any]] = []
    values: dict[str, set[str]] = {}
    quote, skip_to = "", 0

    def record(frame: list[Any], end: int) -> None:
        path, _, key, value_from = frame
        if path is not None and key is not None:
            values.setdefault(path + key, set()).add("".join(source[value_from:end].split()))

    for match in _JSON_SYNTAX.finditer(source, start):
        pos, char = match.start(), match.group()
        if pos < skip_to:
            continue
        if quote:
            if char == "\\":
                skip_to = pos + 2
            elif char == quote:
                quote = ""
        elif char in "\"'":
            if _starts_value(source, pos):
                quote = char
        elif char in "{[":
            parent = frames[-1] if frames else None
            if parent is None:
                path = ""
            elif char == "{" and parent[0] == "" and parent[2] == "scores":
                path = "scores."
            else:
                path = None
            frames.append([path if char == "{" else None, pos + 1, None, pos + 1])
        elif char == ":" and frames and frames[-1][2] is None:
            frames[-1][2] = source[frames[-1][1] : pos].strip().strip("\"'").strip().lower()
            frames[-1][3] = pos + 1
        elif char in ",}]" and frames:
            record(frames[-1], pos)
            frames[-1][1:3] = [pos + 1, None]
            if char != ",":
                frames.pop()
                if not frames:
                    break
    for frame in frames:  # left open by a truncated verdict: each open value runs to the end
        record(frame, len(source))
    return sorted(key for key, seen in values.items() if len(seen) > 1)


def _texts(value: Any) -> list[str]:
    """strengths/weaknesses as a list of strings: a lone value is wrapped, non-strings are str()-ed."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [item if isinstance(item, str) else str(item) for item in items if item is not None]


def _describe(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else json.dumps(value, ensure_ascii=False)[:40]


def _lower_keys(obj: dict[str, Any]) -> dict[str, Any]:
    return {str(key).strip().lower(): value for key, value in obj.items()}


def _object_spans(text: str, unclosed_limit: int = _MAX_UNCLOSED) -> list[Span]:
    """The top-level `{...}` objects in order of their start, in one pass.

    Braces inside "..." or '...' strings (with backslash escapes) do not count; strings are only tracked
    inside braces, and a quote opens one only where a key or value can start, so an apostrophe in prose
    ("it's") does not swallow the rest. Objects nested in a balanced one are not listed; those inside a
    `{` that never closes are, so that a stray brace in prose does not hide the verdict after it. Of the
    braces never closed (end None: a truncated verdict), the outermost `unclosed_limit` are listed.
    """
    closed: list[tuple[int, int]] = []
    stack: list[int] = []
    quote, skip_to = "", 0
    for match in _STRING_SYNTAX.finditer(text):
        pos, char = match.start(), match.group()
        if pos < skip_to:  # the character right after a backslash inside a string
            continue
        if quote:
            if char == "\\":
                skip_to = pos + 2
            elif char == quote:
                quote = ""
        elif char == "{":
            stack.append(pos)
        elif char == "}":
            if stack:
                closed.append((stack.pop(), pos + 1))
        elif char in "\"'" and stack and _starts_value(text, pos):
            quote = char
    top: list[tuple[int, int]] = []
    for start, end in sorted(closed):
        if not top or start >= top[-1][1]:
            top.append((start, end))
    unclosed: list[Span] = [(start, None) for start in stack[:unclosed_limit]]
    return sorted([*top, *unclosed], key=lambda span: span[0])


def _starts_value(text: str, quote_at: int) -> bool:
    """Whether a quote at `quote_at` follows `{`, `[`, `,` or `:` (whitespace aside), where a string can start."""
    before = quote_at - 1
    while before >= 0 and text[before].isspace():
        before -= 1
    return before >= 0 and text[before] in "{[,:"


def _load_object(text: str) -> tuple[dict[str, Any], bool] | None:
    """Parse `text` as a JSON object: strictly first (control characters allowed inside strings, as
    constrained decoding emits them), then through json_repair. The bool says whether repair was needed."""
    try:
        obj = json.loads(text, strict=False)
        if isinstance(obj, dict):
            return obj, False
    except (ValueError, RecursionError):
        pass  # not strict JSON: the repair below gets its turn
    if _nests_deeper_than(text, _MAX_REPAIR_DEPTH):
        return None
    try:
        obj = json_repair.loads(text, skip_json_loads=True)
    except Exception:  # a third-party repairer on arbitrary text: any failure just means "no object here"
        return None
    return (obj, True) if isinstance(obj, dict) else None


def _nests_deeper_than(text: str, limit: int) -> bool:
    """Whether brackets and braces (strings or not) ever nest more than `limit` deep."""
    depth = 0
    for bracket in _BRACKETS.finditer(text):
        depth += 1 if bracket.group() in "{[" else -1
        if depth > limit:
            return True
    return False

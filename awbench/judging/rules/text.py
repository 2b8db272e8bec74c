"""Line handling shared by the rule judge: splitting, whitespace normalisation, placeholders."""

from __future__ import annotations

import re
from functools import lru_cache

# Typed placeholders that masking writes in place of runtime metadata, e.g. "⟨TIME⟩".
PLACEHOLDER_RE = re.compile(r"⟨([A-Z]+)⟩")
NOT_CONTENT_RE = re.compile(r"[\W_]+")  # everything but letters and digits


def placeholder(kind: str) -> str:
    return f"⟨{kind}⟩"


def split_lines(text: str) -> list[str]:
    """Split on "\\n" only: observations contain U+2028 and similar inside strings, which are not line breaks."""
    return text.split("\n")


def normalize_line(line: str) -> str:
    """Collapse every run of whitespace to one space, so indentation and alignment width don't matter."""
    return " ".join(line.split())


def normalized_lines(text: str) -> list[str]:
    """Whitespace-normalised lines without the leading and trailing blank ones."""
    lines = [normalize_line(line) for line in split_lines(text)]
    start, end = 0, len(lines)
    while start < end and not lines[start]:
        start += 1
    while end > start and not lines[end - 1]:
        end -= 1
    return lines[start:end]


def line_key(normalized: str) -> str:
    """What two lines must share to count as "the same line": a trailing comma is JSON layout, not content."""
    return normalized.rstrip(",").rstrip()


@lru_cache(maxsize=16)
def line_keys(masked: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """normalized_lines of a masked text and their line keys; cached for the same truth judged again (an
    exact prediction, another generation), which comes soon after."""
    lines = tuple(normalized_lines(masked))
    return lines, tuple(line_key(line) for line in lines)


def content_chars(line: str) -> int:
    """Letters and digits of a line outside placeholders."""
    return len(NOT_CONTENT_RE.sub("", PLACEHOLDER_RE.sub("", line)))


# At least n letters or digits, whatever lies between them.
_AT_LEAST = {n: re.compile(r"[^\W_]" + r"[\W_]*[^\W_]" * (n - 1)) for n in (2, 3)}


@lru_cache(maxsize=1 << 13)
def has_content_chars(line: str, n: int) -> bool:
    """content_chars(line) >= n (n is 2 or 3), found without counting them all."""
    if "⟨" in line:
        line = PLACEHOLDER_RE.sub("", line)
    return _AT_LEAST[n].search(line) is not None


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


WORD_RE = re.compile(r"\w+")  # runs of _is_word_char characters (`\w` is str.isalnum() or "_")
# ASCII word characters kept, every other byte made a space: for ASCII text, splitting the translated bytes
# gives WORD_RE's words three times faster than the regex.
_ASCII_WORDS = bytes(c if c < 128 and (chr(c).isalnum() or c == ord("_")) else ord(" ") for c in range(256))


def words(text: str) -> list[str]:
    """The maximal runs of word characters in `text`, in order (WORD_RE.findall)."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS).decode("ascii").split()
    return WORD_RE.findall(text)


@lru_cache(maxsize=1 << 12)  # whole texts' word sets are large: keep few
def words_of(text: str) -> frozenset[str]:
    """The set of `words(text)`. Where `contains_bounded(haystack, needle)` holds, every word of `needle` is
    a word of `haystack`, which lets a set test rule most needles out before a search."""
    return frozenset(words(text))


def contains_bounded(haystack: str, needle: str, max_hits: int = 64) -> bool:
    """`needle` occurs in `haystack` without cutting a word in two at either end ("cat" is not in "concat").
    Gives up after `max_hits` occurrences inside words, to stay linear on pathological inputs."""
    if not needle:
        return False
    check_left = _is_word_char(needle[0])
    check_right = _is_word_char(needle[-1])
    start = 0
    for _ in range(max_hits):
        at = haystack.find(needle, start)
        if at < 0:
            return False
        end = at + len(needle)
        left_ok = not check_left or at == 0 or not _is_word_char(haystack[at - 1])
        right_ok = not check_right or end == len(haystack) or not _is_word_char(haystack[end])
        if left_ok and right_ok:
            return True
        start = at + 1
    return False


def count_bounded(haystack: str, needle: str, limit: int, max_hits: int = 64) -> int:
    """How often (up to `limit`) `needle` occurs in `haystack` without cutting a word in two at either end;
    occurrences do not overlap. Gives up after `max_hits` occurrences inside words, like `contains_bounded`."""
    if not needle or limit <= 0:
        return 0
    check_left = _is_word_char(needle[0])
    check_right = _is_word_char(needle[-1])
    found, misses, start = 0, 0, 0
    while found < limit and misses < max_hits:
        at = haystack.find(needle, start)
        if at < 0:
            break
        end = at + len(needle)
        left_ok = not check_left or at == 0 or not _is_word_char(haystack[at - 1])
        right_ok = not check_right or end == len(haystack) or not _is_word_char(haystack[end])
        if left_ok and right_ok:
            found += 1
            start = end
        else:
            misses += 1
            start = at + 1
    return found

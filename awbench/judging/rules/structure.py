"""Tier 2, pre-existing content: checked for shape only, per domain. Each check returns 0..1.

* terminal, swe: the sequence of line kinds (prompt, error, numbered, table, blank...) and the prompts.
* mcp: JSON where the truth is JSON, and how far the typed key paths agree; else line kinds.
* android, web, os: the same markup format (XML, HTML, `[12] link 'x'` accessibility lines) and how far
  the tag paths (or roles) agree as multisets.
* search: the number of result entries (URLs) and the layout of the entries.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from difflib import SequenceMatcher
from functools import lru_cache
from xml.parsers import expat

from awbench.judging.rules.deterministic import PROMPT_RE
from awbench.judging.rules.jsonish import NOT_JSON, key_paths, parse_json
from awbench.judging.rules.text import PLACEHOLDER_RE, normalize_line, split_lines

FORMAT_PENALTY = 0.2  # share of the similarity a prediction in another format than the truth's loses
MAX_RUNS = 300  # bounds difflib's work on line-kind sequences
MAX_MARKUP_CHARS = 400_000  # longer markup is compared on its beginning
PATH_DEPTH = 6  # tag paths are suffixes of this many elements, so deep trees cost no more than shallow ones
VOID_TAGS = frozenset(
    ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
)

LINE_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("status", re.compile(r"^\[[^\]]*\]$|^\([^)]*\)$")),  # "[exit code: 1]", "(no output)"
    ("error", re.compile(r"(?i)\b(?:error|exception|traceback|fatal|failed|failure|warning|denied|no such file)\b")),
    ("numbered", re.compile(r"^\s*\d+(?:\t|:|\|)")),
    ("json", re.compile(r"^\s*(?:[{}\[\]]|\"[^\"]*\"\s*:)")),
    ("markup", re.compile(r"^\s*<")),
    ("table", re.compile(r"\S(?: {2,}|\t)\S.*\S(?: {2,}|\t)\S")),
    ("indented", re.compile(r"^\s+\S")),
)
_ERROR_LOWER_RE = re.compile(dict(LINE_KINDS)["error"].pattern.removeprefix("(?i)"))
A11Y_LINE_RE = re.compile(r"^\s*(?:\[[^\]\s]{1,16}\]\s*(?P<role>[A-Za-z][\w-]*)|(?P<role2>[A-Za-z][\w-]*)\s+(?:'|\"))")
# A11Y_LINE_RE for every line of a text: the same pattern, its whitespace kept within a line.
_A11Y_LINES_RE = re.compile(A11Y_LINE_RE.pattern.replace(r"\s", r"[^\S\n]").replace(r"[^\][^\S\n]]", r"[^\]\s]"), re.M)
URL_RE = re.compile(r"https?://[^\s\"'<>)\]]+")


def ratio(a: float, b: float) -> float:
    """min/max of two sizes; two empty things are alike."""
    return 1.0 if max(a, b) == 0 else min(a, b) / max(a, b)


def multiset_jaccard(a: Counter[str], b: Counter[str]) -> float:
    union = sum((a | b).values())
    return 1.0 if union == 0 else sum((a & b).values()) / union


def set_jaccard(a: set[str], b: set[str]) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


# ----------------------------------------------------------------------------- line shapes


@lru_cache(maxsize=1 << 13)
def line_kind(line: str) -> str:
    if not line.strip():
        return "blank"
    if PROMPT_RE.match(normalize_line(line)):
        return "prompt"
    for kind, pattern in LINE_KINDS:
        if kind == "error" and line.isascii():
            # For ASCII text, a case-insensitive search is a search of the lowercased line (and much faster).
            if _ERROR_LOWER_RE.search(line.lower()):
                return kind
        elif kind == "table" and "  " not in line and "\t" not in line:
            continue  # a table row has two gaps of two spaces or a tab
        elif pattern.search(line):
            return kind
    return "meta" if PLACEHOLDER_RE.search(line) else "text"


@lru_cache(maxsize=128)
def kind_runs(masked_text: str) -> tuple[str, ...]:
    """Line kinds with runs of equal kinds collapsed to kind×(size class), so a listing of 10 files and
    one of 12 look alike and difflib sees short sequences."""
    runs: list[str] = []
    previous, length = "", 0
    for line in split_lines(masked_text.strip("\n")):
        kind = line_kind(line)
        if kind == previous:
            length += 1
            continue
        if previous:
            runs.append(f"{previous}×{min(length.bit_length(), 5)}")
        previous, length = kind, 1
    if previous:
        runs.append(f"{previous}×{min(length.bit_length(), 5)}")
    return tuple(runs[:MAX_RUNS])


def line_shape_similarity(truth: str, prediction: str) -> float:
    truth_runs, predicted_runs = kind_runs(truth), kind_runs(prediction)
    if truth_runs == predicted_runs:
        return 1.0  # what difflib's ratio is for equal sequences, without its quadratic matching
    return SequenceMatcher(None, truth_runs, predicted_runs, autojunk=False).ratio()


def prompt_similarity(truth: str, prediction: str) -> float | None:
    """Do both show the same shell prompts (after masking)? None when neither shows one: nothing to compare."""

    def prompts(text: str) -> set[str]:
        # Every prompt PROMPT_RE knows holds one of these (whitespace normalisation neither makes nor breaks them).
        found = (
            PROMPT_RE.match(normalize_line(line))
            for line in split_lines(text)
            if "#" in line or "$" in line or "%" in line or ">>>" in line
        )
        return {m.group("prompt") for m in found if m}

    truth_prompts, predicted_prompts = prompts(truth), prompts(prediction)
    if not truth_prompts and not predicted_prompts:
        return None
    return set_jaccard(truth_prompts, predicted_prompts)


# ----------------------------------------------------------------------------- markup


# A comment, declaration or processing instruction (skipped), or a start or end tag: `/`, name, attributes.
TAG_RE = re.compile(r"<!--.*?(?:-->|\Z)|<[!?][^>]*>|<(/?)([A-Za-z][^\t\n\r\f />\x00]*)([^>]*)>", re.S)
RAW_TEXT_TAGS = frozenset({"script", "style"})  # their content is text, not markup
NODE_ATTRIBUTE_RE = re.compile(
    r"""(?:^|[\s"'])(class|resource-id)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""", re.I
)
END_TAG_LOOKBACK = 32  # open elements searched for the one an end tag closes, so tag soup stays linear


def _label(tag: str, attributes: str) -> str:
    """Android dumps name every element "node"; the widget class and the layout's view id (without the
    package: `com.x:id/note_title` -> `note_title`) are what tell them apart."""
    if tag != "node":
        return tag
    named: dict[str, str] = {}
    for m in NODE_ATTRIBUTE_RE.finditer(attributes):
        named.setdefault(m.group(1).lower(), next(v for v in m.groups()[1:] if v is not None))
    cls = named.get("class")
    if not cls:
        return tag
    view_id = named.get("resource-id", "").rsplit("/", 1)[-1]
    label = f"node:{cls.rsplit('.', 1)[-1]}" + (f"#{view_id}" if view_id else "")
    return html.unescape(label) if "&" in label else label


@lru_cache(maxsize=128)
def tag_paths(text: str) -> Counter[str]:
    """How often each tag path occurs (its last PATH_DEPTH elements, from the root down) in any tag soup.
    A tag's path is counted where it opens; an end tag closes up to the nearest open element of its name;
    void and self-closing elements never stay open. Never raises."""
    text = text[:MAX_MARKUP_CHARS]
    counts: Counter[tuple[str, ...]] = Counter()
    names: list[str] = []  # the open elements' names
    paths: list[tuple[str, ...]] = []  # ... and their paths
    skip_to = 0  # the end of a script or style element's content
    for m in TAG_RE.finditer(text):
        name = m.group(2)
        if name is None or m.start() < skip_to:
            continue  # a comment, declaration or processing instruction; or inside a script
        name = name.lower()
        if m.group(1):
            for depth in range(len(names) - 1, max(-1, len(names) - 1 - END_TAG_LOOKBACK), -1):
                if names[depth] == name:
                    del names[depth:], paths[depth:]
                    break
            continue
        attributes = m.group(3)
        path = (paths[-1][1 - PATH_DEPTH :] if paths else ()) + (_label(name, attributes),)
        counts[path] += 1
        if attributes.endswith("/") or name in VOID_TAGS:
            continue
        if name in RAW_TEXT_TAGS:
            close = re.compile(rf"</{name}\s*>", re.I).search(text, m.end())
            skip_to = close.end() if close else len(text)
            continue
        names.append(name)
        paths.append(path)
    return Counter({"/".join(path): count for path, count in counts.items()})


def _is_xml(text: str) -> bool:
    body = re.sub(r"^\s*<\?xml[^>]*\?>", "", text[:MAX_MARKUP_CHARS])
    body = re.sub(r"^\s*<!DOCTYPE[^>]*>", "", body, flags=re.IGNORECASE)
    # Well-formedness as ElementTree sees it (the same expat parser, with namespaces), without building a tree.
    parser = expat.ParserCreate(None, "}")
    try:
        parser.Parse(f"<awb-root>{body}</awb-root>", True)
    except (expat.ExpatError, ValueError, RecursionError):
        return False
    return True


@lru_cache(maxsize=128)
def a11y_roles(text: str) -> Counter[str]:
    """The roles of accessibility-tree lines (`[12] link 'x'`, `button "OK"`), one scan of the whole text."""
    return Counter(m.group("role") or m.group("role2") for m in _A11Y_LINES_RE.finditer(text))


@lru_cache(maxsize=128)
def text_format(text: str) -> str:
    """ "json", "xml", "html", "a11y" or "text"."""
    stripped = text.strip()
    if parse_json(stripped) is not NOT_JSON:
        return "json"
    if stripped.startswith("<"):
        return "xml" if _is_xml(stripped) else ("html" if tag_paths(stripped) else "text")
    lines = [line for line in split_lines(stripped) if line.strip()]
    if lines and 2 * a11y_roles(text).total() >= len(lines):  # the same roles as in `stripped` (`^\s*`)
        return "a11y"
    return "text"


def _similarity_in_format(fmt: str, truth: str, prediction: str, masked_truth: str, masked_prediction: str) -> float:
    """How far the prediction agrees with the truth in the truth's own format."""
    if fmt == "json":
        predicted = parse_json(prediction)
        return 0.0 if predicted is NOT_JSON else set_jaccard(key_paths(parse_json(truth)), key_paths(predicted))
    if fmt in ("xml", "html"):
        return multiset_jaccard(tag_paths(truth.strip()), tag_paths(prediction.strip()))
    if fmt == "a11y":
        return multiset_jaccard(a11y_roles(truth), a11y_roles(prediction))
    return line_shape_similarity(masked_truth, masked_prediction)


def format_and_shape(truth: str, prediction: str, masked_truth: str, masked_prediction: str) -> float:
    """The similarity in the truth's format; a prediction in another format loses FORMAT_PENALTY of it.
    Having the right format earns nothing by itself: every observation of a domain has it."""
    fmt = text_format(truth)
    similarity = _similarity_in_format(fmt, truth, prediction, masked_truth, masked_prediction)
    return similarity if text_format(prediction) == fmt else (1 - FORMAT_PENALTY) * similarity


def clear_caches() -> None:
    for cached in (kind_runs, tag_paths, text_format, a11y_roles, line_kind):
        cached.cache_clear()


# ----------------------------------------------------------------------------- per domain


def search_similarity(truth: str, prediction: str, masked_truth: str, masked_prediction: str) -> float:
    """Result entries are counted by their URLs; their layout is compared line kind by line kind."""
    if text_format(truth) == "json":
        return format_and_shape(truth, prediction, masked_truth, masked_prediction)
    entries = ratio(len(URL_RE.findall(truth)), len(URL_RE.findall(prediction)))
    return 0.5 * entries + 0.5 * line_shape_similarity(masked_truth, masked_prediction)


def structure_score(domain: str, truth: str, prediction: str, masked_truth: str, masked_prediction: str) -> float:
    """Shape agreement of a prediction with the truth, by the domain's own notion of structure. Formats are
    read from the raw texts (masking can break JSON), line shapes from the masked ones."""
    if domain in ("terminal", "swe"):
        shape = line_shape_similarity(masked_truth, masked_prediction)
        prompts = prompt_similarity(masked_truth, masked_prediction)
        return shape if prompts is None else 0.7 * shape + 0.3 * prompts
    if domain == "search":
        return search_similarity(truth, prediction, masked_truth, masked_prediction)
    return format_and_shape(truth, prediction, masked_truth, masked_prediction)

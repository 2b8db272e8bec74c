"""Runtime-metadata masking: values no model can know (clock times, PIDs, hashes, sizes, timings...)
become typed placeholders such as ⟨TIME⟩, so that only their format is compared.

Detectors are anchored on formats or on their context (a `pid=` key, a `ps` header, an `ls -l` row)
rather than on bare numbers, because small integers in ordinary output (counts, line numbers, exit
codes, `wc -l`) are usually deterministic. A line without an ASCII digit is never masked (except for
mktemp names), which keeps masking cheap on long observations.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

from awbench.judging.rules.text import PLACEHOLDER_RE, placeholder, split_lines

MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
HEX = "[0-9a-fA-F]"

# Cues that a percentage on the line is a progress indicator rather than content.
PROGRESS_CUE_RE = re.compile(
    r"(?i)\beta\b|download|receiving|resolving|counting|compressing|writing objects|unpacking|progress"
    r"|[#=█━]{3,}|\|"
)
# Cues that a port number on the line is where a freshly started server listens.
LISTEN_CUE_RE = re.compile(r"(?i)\b(?:listen(?:ing)?|serving|running on|started|bound|available (?:at|on))\b")


@dataclass(frozen=True)
class Detector:
    """`pattern` finds a value; its group `v` (or the whole match) becomes ⟨kind⟩, the rest is context kept.
    `accept` vets a match; `applies` is a cheap test of the line that spares running `pattern` on most lines
    and carries the line-level cues (a percentage counts only on a progress line)."""

    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] | None = None
    applies: Callable[[str], object] | None = None  # truthy when the detector may match the line


def _has_digit_and_letter_single_case(m: re.Match[str]) -> bool:
    # A hash mixes digits and letters and is written in one case; this spares words like "deadbeef" and "Facade1".
    v = m.group(0)
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v) and (v.lower() == v or v.upper() == v)


def _contains_digit(m: re.Match[str]) -> bool:
    return any(c.isdigit() for c in m.group(0))


def _is_clock_time(m: re.Match[str]) -> bool:
    return int(m.group(0).split(":", 1)[0]) < 24


def _any(*parts: str) -> Callable[[str], object]:
    """A test that the line contains one of `parts` (one regex scan instead of a loop of `in`)."""
    return re.compile("|".join(map(re.escape, parts))).search


def _d(
    kind: str,
    pattern: str,
    applies: Callable[[str], object] | None = None,
    accept: Callable[[re.Match[str]], bool] | None = None,
) -> Detector:
    return Detector(kind, re.compile(pattern), accept, applies)


MONTH_NAMES = _any("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
PID_WORD = _any("pid", "PID", "Pid", "tgid", "TGID")

# Order matters: longer, more specific formats run before the pieces they contain.
DETECTORS: tuple[Detector, ...] = (
    # curl's progress meter row: every column is a transfer statistic.
    _d(
        "PROGRESS",
        r"^\s*\d{1,3}\s+\S+\s+\d{1,3}\s+\S+\s+\d{1,3}\s+\S+\s+\S+\s+\S+\s+[\d:-]{7,9}\s+[\d:-]{7,9}\s+[\d:-]{7,9}\s+\S+\s*$",
        _any(":"),
    ),
    _d("UUID", rf"(?<![\w-]){HEX}{{8}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{4}}-{HEX}{{12}}(?![\w-])", _any("-")),
    # Timestamps and dates.
    _d("TIME", rf"\d{{2}}/{MONTH}/\d{{4}}:\d{{2}}:\d{{2}}:\d{{2}}(?: [+-]\d{{4}})?", _any("/")),
    _d(
        "TIME",
        r"(?<![\w-])\d{4}([-/])\d{2}\1\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?)?"
        r"(?:Z| ?[+-]\d{2}:?\d{2}(?!\d))?(?: ?(?:UTC|GMT))?(?![\w-]|\.\w)",
        _any("-", "/"),
    ),
    _d(
        "TIME",
        rf"\b{WEEKDAY}, \d{{1,2}} {MONTH} \d{{4}} \d{{2}}:\d{{2}}:\d{{2}}(?: (?:GMT|UTC|[+-]\d{{4}}))?",
        _any(", "),
    ),
    _d(
        "TIME",
        rf"\b{WEEKDAY} {MONTH} +\d{{1,2}} \d{{2}}:\d{{2}}:\d{{2}}(?: [A-Z]{{2,5}})?(?: \d{{4}})?(?: [+-]\d{{4}})?",
        _any(":"),
    ),
    _d("TIME", rf"(?<!\w){MONTH} +\d{{1,2}} +(?:\d{{1,2}}:\d{{2}}(?::\d{{2}})?|\d{{4}})(?![\w:])", MONTH_NAMES),
    _d("TIME", rf"(?<!\w){MONTH}\.? \d{{1,2}}, \d{{4}}(?!\w)|(?<!\w)\d{{1,2}} {MONTH} \d{{4}}(?!\w)", MONTH_NAMES),
    # tqdm's [00:01<00:02]
    _d("DURATION", r"(?<=\[)\d+:\d{2}(?::\d{2})?(?=<)|(?<=<)\d+:\d{2}(?::\d{2})?(?=[,\]])", _any("<")),
    _d("TIME", r"(?<![\d:.])\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,9})?(?![\d:])", _any(":")),
    _d("TIME", r"(?<![\w:.])\d{1,2}:[0-5]\d(?:\s?[AaPp]\.?[Mm]\.?)?(?![\w:])", _any(":"), _is_clock_time),  # "9:41"
    # Epoch seconds (or milliseconds) only as the value of a time-like key.
    _d(
        "TIME",
        r"(?i)(?P<p>(?:\b[\w-]*(?:time|stamp|date|epoch|_at|_ts|created|updated|modified|expires?)|\bts)"
        r"[\"']?\s*[:=]\s*[\"']?)(?P<v>\d{9,13}(?:\.\d+)?)(?!\d)",
        re.compile(r"\d{9}").search,
    ),
    _d("TIME", r"\b\d+ (?:second|minute|hour|day|week|month|year)s? ago\b", _any(" ago")),
    # Durations.
    _d("DURATION", r"(?<=\bUp )\d+ (?:second|minute|hour|day|week)s?\b", _any("Up ")),
    _d("DURATION", r"(?<![\w.])\d+m\d+(?:\.\d+)?s(?!\w)", re.compile(r"\dm\d").search),
    _d("DURATION", r"(?<![\w.])\d+(?:\.\d+)?\s?(?:ms|µs|us|ns|msec|usec)(?!\w)", _any("s")),
    _d("DURATION", r"(?<![\w.])\d+\.\d+\s?(?:s|sec|secs|seconds)(?!\w)", _any("s")),
    _d(
        "DURATION",
        r"(?P<p>\b(?:in|took|after|elapsed:?|[Tt]ime:|[Dd]uration:)\s)(?P<v>\d+\s?(?:s|sec|secs|seconds))(?!\w)",
        _any("s"),
    ),
    # Process ids, only where something says they are process ids.
    _d("PID", r"(?i)(?P<p>\b(?:pid|ppid|tgid)\b[\"']?\s*[:=#]?\s*)(?P<v>\d+)(?!\w)", PID_WORD),
    _d("PID", r"(?i)(?P<p>\bprocess(?: id)?\s*[:=#]?\s*)(?P<v>\d{2,})(?!\w)", _any("rocess", "ROCESS")),
    _d("PID", r"(?i)(?P<p>\bparent\b[\"']?\s*[:=]?\s*)(?P<v>\d+)(?!\w)", PID_WORD),  # "child pid: 5 parent: 4"
    _d("PID", r"^(?P<p>\s*\[\d+\][+-]?\s+)(?P<v>\d+)\s*$", _any("[")),  # `cmd &` prints "[1] 12345"
    # Addresses and hashes.
    _d("ADDR", r"(?<!\w)0x[0-9a-fA-F]{6,16}(?!\w)", _any("0x")),
    _d(
        "HASH",
        rf"(?<![\w-]){HEX}{{7,128}}(?![\w-])",
        re.compile(rf"{HEX}{{7}}").search,
        _has_digit_and_letter_single_case,
    ),
    # Transfer rates, then sizes.
    _d("RATE", r"(?<![\w.])\d+(?:\.\d+)?\s?(?:[kKMGT]i?B|B|bytes|[kKMG]|[kMG]?bit)/s(?!\w)", _any("/s")),
    _d("RATE", r"(?<![\w.])\d+(?:\.\d+)?\s?(?:it/s|s/it|[kMG]?bps)(?!\w)", _any("it/s", "s/it", "bps")),
    # The size column of `ls -l`.
    _d("SIZE", r"^(?P<p>[-dlcbpsD][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+)(?P<v>\d+(?:[.,]\d+)?[KMGTP]?)(?=\s)"),
    _d("SIZE", r"^(?P<p>total )(?P<v>\d+(?:[.,]\d+)?[KMGTP]?)\s*$"),  # ls -l block total
    _d("SIZE", r"^(?P<v>\d+(?:[.,]\d+)?[KMGTP]?)(?=\t)"),  # du
    _d(
        "SIZE",
        r"(?<![\w.])\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|kB|bytes?)(?![\w/])|(?<![\w.])\d+(?:\.\d+)?[KMGTPB](?![\w/])",
        _any("B", "K", "M", "G", "T", "P", "byte"),
    ),
    # Progress percentages and the battery level.
    _d("PERCENT", r"(?i)(?P<p>\bbattery:?\s)(?P<v>\d{1,3})(?=\s?(?:%|percent))", _any("attery", "ATTERY")),
    _d("PERCENT", r"(?<=\[)\s*\d{1,3}%(?=\])", _any("%]")),
    _d("PERCENT", r"(?<![\w.])\d{1,3}(?:\.\d+)?%", lambda line: "%" in line and PROGRESS_CUE_RE.search(line)),
    _d("PORT", r"(?P<p>:)(?P<v>\d{2,5})(?![\w:.])|(?P<p2>\b[Pp]ort\s)(?P<v2>\d{2,5})\b", LISTEN_CUE_RE.search),
    # Random temporary names: mktemp's tmp.XXXXXXXXXX and Python's tmpXXXXXXXX.
    _d("TMPNAME", r"(?<![\w.])tmp\.[A-Za-z0-9]{6,12}(?![\w])", _any("tmp.")),
    _d("TMPNAME", r"(?<![\w.])tmp[a-z0-9_]{8}(?!\w)", _any("tmp"), _contains_digit),
)

# Only lines matching this can contain something a detector masks.
CANDIDATE_RE = re.compile(r"[0-9]|tmp\.")
_MONTH3 = "(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# What a detector's match (or its line test) contains, checked before running the detectors: most lines with
# digits (coordinates, element ids, counts) hold no metadata and are left as they are, and a masked line that
# passes none of these checks is its own mask. Every check is a necessary condition of the detectors noted,
# so the prefilter never changes a mask (see the property tests); a leading `\d` lets the regex engine skip
# to digits.
_AFTER_A_DIGIT_RE = re.compile(
    r"\d(?:"
    rf"/{_MONTH3}"  # TIME: access log
    r"|\d{3}[-/]\d\d[-/]\d\d"  # TIME: ISO 8601 and slashed dates
    r"|:\d"  # TIME: HTTP and `date` formats, clock times; DURATION: tqdm
    r"| (?:second|minute|hour|day|week|month|year)"  # TIME: "3 minutes ago"; DURATION: "Up 2 days"
    rf"| {_MONTH3}"  # TIME: "6 Mar 2025"
    r"|m\d"  # DURATION: 1m2.5s
    r"|\s?[mµun]?s"  # DURATION: 12 ms, 0.5 s, "in 3s"
    r"|\s?(?:[KMGTPBk]|byte)"  # SIZE
    r"|\s?(?:[kKMGT]i?B|B|bytes|[kKMG]|[kMG]?bit)/s|\s?(?:it/s|s/it|[kMG]?bps)"  # RATE
    r"|x[0-9a-fA-F]"  # ADDR
    r"|\d{8}"  # TIME: epoch values (after a time-like key: not checked here)
    # HASH takes runs of 7 or more hex characters with a digit: a digit with hex characters around it.
    + "".join(f"|(?<={HEX}{{{k + 1}}})(?={HEX}{{{6 - k}}})" for k in range(6))
    + f"|(?<={HEX}{{7}})"
    + ")"
)
_LINE_START_RE = re.compile(
    r"^(?:"
    r"\s*\d{1,3}\s+\S+\s+\d{1,3}\s+\S+\s+\d{1,3}\s"  # PROGRESS: curl's meter row
    r"|\s*\[\d+\][+-]?\s+\d+\s*$"  # PID: `cmd &` prints "[1] 12345"
    r"|[-dlcbpsD][rwxsStT-]{9}[.+@]?\s+\d"  # SIZE: `ls -l`
    r"|total \d"  # SIZE: `ls -l` block total
    r"|\d+(?:[.,]\d+)?[KMGTP]?\t"  # SIZE: `du`
    r")"
)
_UUID_RE = re.compile(f"-{HEX}{{4}}-{HEX}{{4}}-")  # UUID (the literal first is found fast)
_MONTH_DAY_RE = re.compile(rf"{_MONTH3}[a-z]*\.? +\d")  # TIME: syslog, `ls -l`, "Mar 6, 2025"
_PERCENT_RE = re.compile(r"\d%")  # PERCENT: after a progress cue, or alone in brackets
# The detectors' literal line tests for PID, PERCENT (battery) and TMPNAME, in the lowercased line.
_WORDS_RE = re.compile("pid|tgid|rocess|attery|tmp")
_PORT_RE = re.compile(r":\d\d|[Pp]ort\s\d\d")  # in every PORT match
# PORT's line cue on a lowercased ASCII line (for ASCII text, case-insensitive matching is lowercasing).
_LISTEN_LOWER_RE = re.compile(LISTEN_CUE_RE.pattern.removeprefix("(?i)"))


def _detector(kind: str, applies_to: str) -> Detector:
    return next(d for d in DETECTORS if d.kind == kind and applies_to in d.pattern.pattern)


_BRACKETED_PERCENT = _detector("PERCENT", r"(?<=\[)")


# (scan, confirmation of a line it finds, whether it scans the lowercased line), in the order they are tried.
_SCANS: tuple[tuple[re.Pattern[str], Callable[[str], object] | None, bool], ...] = (
    (_AFTER_A_DIGIT_RE, None, False),
    (_LINE_START_RE, None, False),
    (_MONTH_DAY_RE, None, False),
    (_UUID_RE, None, False),
    (_PERCENT_RE, lambda line: PROGRESS_CUE_RE.search(line) or _BRACKETED_PERCENT.pattern.search(line), False),
    (_WORDS_RE, None, True),
    (_PORT_RE, lambda line: _listen_cue(line, line.lower()), False),
)


def may_match(line: str) -> bool:
    """False when no detector can change `line`."""
    for scan, confirm, on_lowered in _SCANS:
        if scan.search(line.lower() if on_lowered else line) and (confirm is None or confirm(line)):
            return True
    return False


def _listen_cue(line: str, lowered: str) -> bool:
    if line.isascii():
        return _LISTEN_LOWER_RE.search(lowered) is not None
    return LISTEN_CUE_RE.search(line) is not None


# Column headers of process tables (ps, top, lsof) whose values are runtime metadata.
PROCESS_COLUMNS: dict[str, str] = {
    "PID": "PID",
    "PPID": "PID",
    "PGID": "PID",
    "SID": "PID",
    "TGID": "PID",
    "LWP": "PID",
    "SPID": "PID",
    "%CPU": "PERCENT",
    "%MEM": "PERCENT",
    "CPU%": "PERCENT",
    "MEM%": "PERCENT",
    "C": "PERCENT",
    "VSZ": "SIZE",
    "RSS": "SIZE",
    "VIRT": "SIZE",
    "RES": "SIZE",
    "SHR": "SIZE",
    "SZ": "SIZE",
    "SIZE/OFF": "SIZE",
    "START": "TIME",
    "STIME": "TIME",
    "TIME": "DURATION",
    "TIME+": "DURATION",
    "ELAPSED": "DURATION",
    "ETIME": "DURATION",
}
HEADER_TOKEN_RE = re.compile(r"^[A-Z%+/_-]+$")
TOKEN_RE = re.compile(r"\S+")


def _replacement(detector: Detector) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        if detector.accept is not None and not detector.accept(m):
            return m.group(0)
        for group in ("v", "v2"):
            if group in m.re.groupindex and m.group(group) is not None:
                start, end = m.start(group) - m.start(), m.end(group) - m.start()
                whole = m.group(0)
                return whole[:start] + placeholder(detector.kind) + whole[end:]
        return placeholder(detector.kind)

    return replace


def _cue(pattern: str, anchored: bool = False) -> Callable[[str], object]:
    compiled = re.compile(pattern)
    return compiled.match if anchored else compiled.search


# A necessary condition of a detector's pattern that the regex engine checks fast (a leading `\d` or literal,
# where the pattern starts with a lookbehind that makes the engine try every position); shared between
# detectors within a pass. Where the detector's own line test is selective enough, there is none.
_DIGIT_COLON_DIGIT = _cue(r"\d:\d")
_DIGIT_SECONDS = _cue(r"\d\s?s")
_MONTH_DAY = _cue(rf"{_MONTH3}[a-z]*\.? +\d")
_CUES: dict[int, tuple[Callable[[str], object], ...]] = {  # the detector may match if one of its cues holds
    0: (_cue(r"\s*\d{1,3}\s+\S+\s+\d{1,3}\s", anchored=True),),  # PROGRESS
    1: (_UUID_RE.search,),  # UUID
    2: (_cue(rf"\d/{_MONTH3}"),),  # TIME: access log
    3: (_cue(r"\d{4}[-/]\d\d[-/]\d\d"),),  # TIME: ISO 8601
    4: (_DIGIT_COLON_DIGIT,),  # TIME: HTTP date
    5: (_DIGIT_COLON_DIGIT,),  # TIME: `date`
    6: (_MONTH_DAY,),  # TIME: syslog, `ls -l`
    7: (_MONTH_DAY, _cue(rf"\d {_MONTH3}")),  # TIME: written-out dates
    8: (_DIGIT_COLON_DIGIT,),  # DURATION: tqdm
    9: (_DIGIT_COLON_DIGIT,),  # TIME: h:mm:ss
    10: (_DIGIT_COLON_DIGIT,),  # TIME: h:mm
    15: (_cue(r"\d\s?[mµun]s"),),  # DURATION: 12 ms
    16: (_DIGIT_SECONDS,),  # DURATION: 0.5 s
    17: (_DIGIT_SECONDS,),  # DURATION: in 3s
    23: (
        _cue(
            r"\d(?:" + "|".join(f"(?<={HEX}{{{k + 1}}})(?={HEX}{{{6 - k}}})" for k in range(6)) + f"|(?<={HEX}{{7}}))"
        ),
    ),  # HASH
    24: (_cue(r"\d\s?(?:[kKMGT]i?B|B|bytes|[kKMG]|[kMG]?bit)/s"),),  # RATE
    26: (_cue(r"[-dlcbpsD][rwxsStT-]{9}", anchored=True),),  # SIZE: `ls -l`
    27: (_cue(r"total \d", anchored=True),),  # SIZE: `ls -l` block total
    28: (_cue(r"\d+(?:[.,]\d+)?[KMGTP]?\t", anchored=True),),  # SIZE: `du`
    29: (_cue(r"\d\s?(?:[KMGTPBk]|byte)"),),  # SIZE
    33: (_PORT_RE.search,),  # PORT (before its costlier line test)
}
# (line test, cues, substitution) per detector, prepared once: masking runs on every line of every text.
_PASS = tuple((d.applies, _CUES.get(i, ()), partial(d.pattern.sub, _replacement(d))) for i, d in enumerate(DETECTORS))
_line_cache: dict[str, str] = {}
LINE_CACHE_SIZE = 1 << 15  # the lines of the trajectories in flight; larger caches held 2x the data in a full run

# Which detectors may change a line depends on where its digits are, not on their values: no cue, line test or
# prefilter tells one ASCII digit from another (they use `\d`, hex classes and the literal "0x"; a line test
# that is part of a detector's meaning, such as a progress cue, has no digit in it). So the detectors to try
# are found once per *shape*, the line with every ASCII digit made 0, on that shape: a detector whose tests
# fail on the shape fails on the line, one whose tests pass on the shape but not on the line cannot match it
# and leaves it as it is. Lines of one shape (a timestamp field, an `ls -l` row) come by the thousand.
# Shapes are made on UTF-8 bytes (ten times faster than str.translate; digit bytes occur in no multi-byte
# character).
_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_plans: dict[bytes, tuple[int, ...]] = {}
PLAN_CACHE_SIZE = 1 << 14


def _plan(line: str) -> tuple[int, ...]:
    """The detectors, in order, that may change `line`; empty when none can."""
    key = line.encode("utf-8", "surrogatepass").translate(_AS_ZERO)
    plan = _plans.get(key)
    if plan is None:
        shape = key.decode("utf-8", "surrogatepass")
        plan = _detectors_for(shape) if CANDIDATE_RE.search(shape) and may_match(shape) else ()
        if len(_plans) >= PLAN_CACHE_SIZE:
            _plans.clear()
        _plans[key] = plan
    return plan


def _detectors_for(shape: str) -> tuple[int, ...]:
    """The detectors some cue and whose line test hold on `shape` (cues are shared: each is tested once)."""
    known: dict[Callable[[str], object], bool] = {}
    chosen = []
    for i, (applies, cues, _sub) in enumerate(_PASS):
        if cues:
            for cue in cues:
                hit = known.get(cue)
                if hit is None:
                    hit = known[cue] = cue(shape) is not None
                if hit:
                    break
            else:
                continue
        if applies is None or applies(shape):
            chosen.append(i)
    return tuple(chosen)


def _one_pass(line: str, plan: tuple[int, ...]) -> str:
    """Every detector once, in order, each on what the ones before it left; `plan` is `_plan(line)`. After a
    change the detectors still to come are chosen again for the changed line."""
    done = -1
    while True:
        for i in plan:
            if i <= done:
                continue
            changed = _PASS[i][2](line)
            if changed != line:
                line, done = changed, i
                plan = _plan(line)
                break
        else:
            return line


def mask_line(line: str) -> str:
    """Apply every detector to one line, repeating until nothing changes (so the result is stable).
    Cached, and the result is cached as its own mask, which spares `mask` its verifying pass."""
    cached = _line_cache.get(line)
    if cached is not None:
        return cached
    if not CANDIDATE_RE.search(line):
        return _remember(line, line)
    masked = line
    plan = _plan(masked)
    while plan:
        again = _one_pass(masked, plan)
        if again == masked:
            break
        masked = again
        plan = _plan(masked)  # empty when no detector can change it any more
    return _remember(line, masked)


def _remember(line: str, masked: str) -> str:
    if len(_line_cache) >= LINE_CACHE_SIZE:
        _line_cache.clear()
    _line_cache[line] = _line_cache[masked] = masked
    return masked


def clear_caches() -> None:
    """Forget every masked line and text (for measuring cold performance)."""
    _line_cache.clear()
    _plans.clear()
    mask.cache_clear()


def _mask_process_tables(lines: list[str]) -> list[str]:
    """Mask the metadata columns of rows under a process-table header (a header line with a PID column)."""
    out = list(lines)
    columns: dict[int, str] = {}
    pid_index = -1
    for i, line in enumerate(lines):
        tokens = line.split()
        if "PID" in tokens and all(HEADER_TOKEN_RE.match(t) for t in tokens):
            columns = {j: PROCESS_COLUMNS[t] for j, t in enumerate(tokens) if t in PROCESS_COLUMNS}
            pid_index = tokens.index("PID")
            continue
        if not columns:
            continue
        if len(tokens) <= pid_index or not (tokens[pid_index].isdigit() or tokens[pid_index] == placeholder("PID")):
            columns = {}
            continue
        matches = list(TOKEN_RE.finditer(line))
        pieces, last = [], 0
        for j, m in enumerate(matches):
            if j in columns and any(c.isdigit() for c in m.group(0)):
                pieces.append(line[last : m.start()] + placeholder(columns[j]))
                last = m.end()
        pieces.append(line[last:])
        out[i] = "".join(pieces)
    return out


@lru_cache(maxsize=16)
def mask(text: str) -> str:
    """Replace runtime metadata by typed placeholders. Idempotent: passes repeat until nothing changes
    (each change removes characters that are not placeholders, so this ends)."""
    lines = split_lines(text)
    if "PID" not in text:
        # Without a process-table header (it has a PID column) lines are masked one by one, and each
        # mask_line result is its own mask: a second pass would change nothing.
        return "\n".join([mask_line(line) for line in lines])
    while True:
        masked = [mask_line(line) for line in _mask_process_tables(lines)]
        if masked == lines:
            return "\n".join(lines)
        lines = masked


def placeholder_kinds(text: str) -> Counter[str]:
    """How many placeholders of each kind a masked text holds."""
    return Counter(PLACEHOLDER_RE.findall(text))

"""Calibration of the rule judge on the bundled sample (data/sample/{domain}_test.jsonl).

Per domain, the ground truth is scored against itself and against perturbed copies:
* oracle: the truth itself                                       -> 100
* metadata: every masked runtime value replaced by another value -> at least 95
* preexisting: content that was neither deterministic nor metadata rewritten in the same shape
                                                                 -> clearly above the last observation
* deterministic: one deterministic line (or value) altered       -> clearly below the metadata version
* last observation (the previous turn's observation) and empty   -> far below the oracle, and 0
* unrelated: the truth of another trajectory of the same domain  -> below 30 on average; per sample, at
                                                                    least 10 below that sample's pre-existing
                                                                    rewrite (which keeps its shape and its
                                                                    deterministic content)
Run with `-s` to see the table.
"""

from __future__ import annotations

import json
import re
import time
from statistics import mean

import pytest

from awbench.domains import DOMAINS, OBSERVATION_MARKER
from awbench.judging.rules import rule_score
from awbench.judging.rules.deterministic import Item, deterministic_items
from awbench.judging.rules.masking import mask
from awbench.judging.rules.score import clear_caches
from awbench.judging.rules.structure import text_format
from awbench.judging.rules.text import PLACEHOLDER_RE, line_key, normalize_line, normalized_lines, split_lines
from awbench.resources import sample_dir

SAMPLE_DIR = sample_dir()
CLEAR_MARGIN = 10.0  # points on the 0..100 scale
FAR_MARGIN = 30.0
UNRELATED_CEILING = 30.0  # an unrelated observation of the same domain scores below this on average

# Words that decide a line's kind, a document's syntax or that a number is metadata (`total 24`, `parent: 42`,
# `Battery 76 percent`); renaming them would change the shape, not the content.
KEEP_WORDS = frozenset(
    [
        "error",
        "errors",
        "exception",
        "traceback",
        "fatal",
        "fail",
        "failed",
        "failure",
        "warning",
        "denied",
        "such",
        "file",
        "usage",
        "http",
        "https",
        "www",
        "true",
        "false",
        "null",
        "none",
        "amp",
        "quot",
        "apos",
        "total",
        "parent",
        "pid",
        "process",
        "battery",
        "percent",
        "port",
        "listening",
        "serving",
        "real",
        "user",
        "sys",
        "took",
        "elapsed",
        "time",
        "duration",
        "ago",
    ]
)
CONTENT_ATTRIBUTES = frozenset({"text", "content-desc", "name", "description", "title", "label", "value"})
WORD_RE = re.compile(r"(?<![\\&A-Za-z])[A-Za-z]{3,}")
DIGIT_RUN_RE = re.compile(r"\d+")
LS_MODE_RE = re.compile(r"^[-dlcbps][rwxsStT-]{9}")  # `ls -l` permissions are syntax, not words
TEXT_KEY_RE = re.compile(r"^\s*[A-Za-z][\w .-]{0,30}:\s")
XML_ATTRIBUTE_RE = re.compile(r"([\w:-]+)=\"([^\"]*)\"")
QUOTED_RE = re.compile(r"\"((?:[^\"\\]|\\.)*)\"(\s*:)?|'([^'\n]*)'")  # pair by pair; group 2 marks a JSON key
HEX_SWAP = str.maketrans("abcdefABCDEF", "badcfeBADCFE")
HEX_KINDS = frozenset({"HASH", "UUID", "ADDR"})


# ----------------------------------------------------------------------------- sample


def strip_marker(text: str) -> str:
    return text.split("\n", 1)[1] if text.startswith(OBSERVATION_MARKER) else text


def load_cases(domain: str) -> list[dict]:
    """Each record as (truth, history, last observation, trajectory id)."""
    path = SAMPLE_DIR / f"{domain}_test.jsonl"
    if not path.exists():
        pytest.skip(f"sample data not available: {path}")
    cases = []
    for line in path.read_text(encoding="utf-8").split("\n"):  # "\n" only: strings hold U+2028
        if not line.strip():
            continue
        record = json.loads(line)
        turn = record["turn_idx"]
        history = [text for i in range(turn - 1) for text in (record["prompt"][i], record["response"][i])]
        history.append(record["prompt"][turn - 1])
        last = strip_marker(record["response"][turn - 2]) if turn > 1 else ""
        truth = strip_marker(record["response"][turn - 1])
        cases.append({"truth": truth, "history": history, "last": last, "trajectory": record["id"]})
    return cases


# ----------------------------------------------------------------------------- perturbations


def masked_pattern(masked: str) -> re.Pattern[str]:
    """Matches the raw text a masked (and possibly whitespace-normalised) text came from: placeholders
    become lazy wildcards, whitespace any whitespace."""
    literals = PLACEHOLDER_RE.split(masked)[0::2]
    escaped = (r"\s+".join(re.escape(word) for word in re.split(r"\s+", literal)) for literal in literals)
    return re.compile("(.+?)".join(escaped), flags=re.S)


def metadata_spans(line: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the values masking replaced in one line."""
    masked = mask(line)
    if masked == line:
        return []
    kinds = PLACEHOLDER_RE.findall(masked)
    m = masked_pattern(masked).fullmatch(line)
    return [(m.start(g), m.end(g), kinds[g - 1]) for g in range(1, len(kinds) + 1)] if m else []


def other_value(value: str, kind: str) -> str:
    """A different value of the same format: the last digit of each number flips (0<->1, 2<->3 ...), which
    keeps hours, minutes and days in range; hex letters flip too for hashes, UUIDs and addresses."""
    changed = DIGIT_RUN_RE.sub(lambda m: m.group(0)[:-1] + str(int(m.group(0)[-1]) ^ 1), value)
    return changed.translate(HEX_SWAP) if kind in HEX_KINDS else changed


def perturb_metadata(text: str) -> str:
    lines = split_lines(text)
    masked_lines = split_lines(mask(text))  # process tables are masked with their header in view
    out = []
    for line, masked in zip(lines, masked_lines):
        spans = metadata_spans(line) if masked != line else []
        for start, end, kind in reversed(spans):
            line = line[:start] + other_value(line[start:end], kind) + line[end:]
        out.append(line)
    return "\n".join(out)


def rot13_words(text: str) -> str:
    def rotate(m: re.Match[str]) -> str:
        word = m.group(0)
        if word.lower() in KEEP_WORDS or word.isupper():  # all-caps words are column headers and statuses
            return word
        return "".join(chr((ord(c) - base + 13) % 26 + base) for c in word for base in [65 if c.isupper() else 97])

    return WORD_RE.sub(rotate, text)


def content_spans(line: str, fmt: str) -> list[tuple[int, int]]:
    """Where a line of this format holds content rather than syntax."""
    if fmt == "text":
        key = TEXT_KEY_RE.match(line)  # "Title: ...": the key is layout
        return [(key.end() if key else 0, len(line))]
    if fmt in ("xml", "html"):
        if not line.lstrip().startswith("<"):
            return [(0, line.find("<") if "<" in line else len(line))]  # text content continued from above
        spans = [m.span(2) for m in XML_ATTRIBUTE_RE.finditer(line) if m.group(1) in CONTENT_ATTRIBUTES]
        return spans + [m.span(1) for m in re.finditer(r">([^<]+)(?:<|$)", line)]
    quoted = QUOTED_RE.finditer(line)
    return [m.span(1) if m.group(1) is not None else m.span(3) for m in quoted if not m.group(2)]


def raw_line_index(truth: str) -> list[int]:
    """Raw line number of each normalised line (normalisation drops leading blank lines)."""
    raw = split_lines(truth)
    first = next((i for i, line in enumerate(raw) if normalize_line(line)), 0)
    return list(range(first, len(raw)))


def items_of(truth: str, history: list[str]) -> list[Item]:
    keys = [line_key(line) for line in normalized_lines(mask(truth))]
    return deterministic_items(keys, tuple(history))


def perturb_preexisting(truth: str, history: list[str]) -> str:
    """Rewrite every word of content that is neither deterministic nor metadata, keeping the syntax."""
    items = items_of(truth, history)
    to_raw = raw_line_index(truth)
    fixed_lines = {to_raw[item.line_index] for item in items if item.kind == "line" and item.line_index is not None}
    values = [item.text for item in items if item.kind == "value"]
    fmt = text_format(truth)
    out = []
    for i, line in enumerate(split_lines(truth)):
        if i in fixed_lines:
            out.append(line)
            continue
        protected = [(s, e) for s, e, _kind in metadata_spans(line)]
        protected += [m.span() for value in values for m in masked_pattern(value).finditer(line)]
        protected += [m.span() for m in LS_MODE_RE.finditer(line)]
        chars = list(line)
        for start, end in content_spans(line, fmt):
            for m in WORD_RE.finditer(line, start, end):
                if not any(s < m.end() and m.start() < e for s, e in protected):
                    chars[m.start() : m.end()] = rot13_words(m.group(0))
        out.append("".join(chars))
    return "\n".join(out)


def alter_deterministic(truth: str, history: list[str]) -> str | None:
    """The truth with one word of one deterministic item changed (one new since the previous observation if
    there is one, a line before a value), inside the line's content so the syntax stays intact; None if the
    truth has no deterministic item."""
    items = items_of(truth, history)
    lines = split_lines(truth)
    to_raw = raw_line_index(truth)
    fmt = text_format(truth)
    # What the action changed comes first: that is what a world model most needs to get right.
    ordered = sorted(items, key=lambda item: (not item.novel, item.kind != "line"))
    for item in ordered:
        if item.line_index is not None:
            candidates = [to_raw[item.line_index]]
        else:
            candidates = [i for i, line in enumerate(lines) if masked_pattern(item.text).search(line)]
        for i in candidates:
            line = lines[i]
            protected = [(s, e) for s, e, _kind in metadata_spans(line)]
            if item.kind == "value":
                found = masked_pattern(item.text).search(line)
                regions = [found.span()] if found else []
            else:
                regions = content_spans(line, fmt)  # a line of pure syntax (`</node>`) is skipped
            for start, end in regions:
                for m in WORD_RE.finditer(line, start, end):
                    word = m.group(0)
                    if rot13_words(word) != word and not any(s < m.end() and m.start() < e for s, e in protected):
                        altered = line[: m.start()] + rot13_words(word) + line[m.end() :]
                        return "\n".join(lines[:i] + [altered] + lines[i + 1 :])
    return None


def unrelated_truths(cases: list[dict]) -> list[str]:
    """For each case, the truth of another trajectory of the same domain: the next trajectory (by id, cyclically)
    and in it the record at the same position (modulo its number of records). Deterministic, and never the
    case's own trajectory."""
    by_trajectory: dict[int, list[str]] = {}
    positions = []
    for case in cases:
        truths = by_trajectory.setdefault(case["trajectory"], [])
        positions.append(len(truths))
        truths.append(case["truth"])
    order = sorted(by_trajectory)
    if len(order) < 2:
        pytest.skip("the sample has a single trajectory in this domain")
    out = []
    for case, position in zip(cases, positions):
        other = by_trajectory[order[(order.index(case["trajectory"]) + 1) % len(order)]]
        out.append(other[position % len(other)])
    return out


# ----------------------------------------------------------------------------- calibration


def score(domain: str, case: dict, prediction: str) -> float:
    return (
        100
        * rule_score(domain=domain, ground_truth=case["truth"], prediction=prediction, history=case["history"]).score
    )


def calibrate(domain: str) -> dict[str, float]:
    cases = load_cases(domain)
    altered = [
        (case, text) for case in cases if (text := alter_deterministic(case["truth"], case["history"])) is not None
    ]
    unrelated = [score(domain, c, other) for c, other in zip(cases, unrelated_truths(cases))]
    preexisting = [score(domain, c, perturb_preexisting(c["truth"], c["history"])) for c in cases]
    return {
        "records": len(cases),
        "oracle": mean(score(domain, c, c["truth"]) for c in cases),
        "metadata": mean(score(domain, c, perturb_metadata(c["truth"])) for c in cases),
        "preexisting": mean(preexisting),
        "deterministic": mean(score(domain, c, text) for c, text in altered) if altered else float("nan"),
        "altered_records": len(altered),
        "last_observation": mean(score(domain, c, c["last"]) for c in cases),
        "unrelated": mean(unrelated),
        # Per sample: how far the unrelated observation stays below the sample's own pre-existing rewrite.
        "unrelated_gap": min(p - u for p, u in zip(preexisting, unrelated)),
        "unrelated_max": max(unrelated),
        "empty": mean(score(domain, c, "") for c in cases),
    }


@pytest.mark.parametrize("domain", DOMAINS)
def test_calibration(domain: str) -> None:
    result = calibrate(domain)
    print(
        f"\n{domain:9s} " + " ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items())
    )
    assert result["oracle"] == 100.0
    assert result["metadata"] >= 95.0
    assert result["metadata"] > result["preexisting"]
    assert result["preexisting"] >= result["last_observation"] + CLEAR_MARGIN
    if result["altered_records"]:
        assert result["deterministic"] <= result["metadata"] - CLEAR_MARGIN
        assert result["preexisting"] > result["deterministic"] > result["last_observation"]
    assert result["last_observation"] <= result["oracle"] - FAR_MARGIN
    assert result["unrelated"] < UNRELATED_CEILING
    assert result["unrelated_gap"] >= CLEAR_MARGIN
    assert result["empty"] == 0.0


def test_perturbations_change_what_they_claim_to() -> None:
    """Changed metadata masks to the same text; rewritten pre-existing content, an altered deterministic item
    and another trajectory's observation do not. Each perturbation changes most records, so the calibration
    above measures something."""
    changed = {"metadata": 0, "preexisting": 0, "deterministic": 0}
    records = 0
    for domain in DOMAINS:
        cases = load_cases(domain)
        for case, other in zip(cases, unrelated_truths(cases)):
            assert mask(other) != mask(case["truth"])
            records += 1
            truth, history = case["truth"], case["history"]
            metadata = perturb_metadata(truth)
            assert mask(metadata) == mask(truth)
            changed["metadata"] += metadata != truth
            changed["preexisting"] += mask(perturb_preexisting(truth, history)) != mask(truth)
            altered = alter_deterministic(truth, history)
            assert altered is None or mask(altered) != mask(truth)
            changed["deterministic"] += altered is not None
    assert all(count > records / 2 for count in changed.values()), changed


def test_scoring_the_whole_sample_from_cold_caches() -> None:
    """Every record scores from cold caches; the time is printed (`-s`), not asserted, as it depends on
    the machine. Expect well under a second for the sample."""
    cases = [(domain, case) for domain in DOMAINS for case in load_cases(domain)]
    clear_caches()
    started = time.perf_counter()
    scores = [score(domain, case, case["last"]) for domain, case in cases]
    print(f"\nscored {len(cases)} records from cold caches in {time.perf_counter() - started:.3f}s")
    assert all(0.0 <= value <= 100.0 for value in scores)

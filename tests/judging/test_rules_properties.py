"""Property tests of the rule judge: bounded scores, stable masking, identity, no input that raises, and a
masking prefilter that never changes a mask."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from awbench.domains import DOMAINS, OBSERVATION_MARKER
from awbench.judging.rules import masking, rule_score, structure
from awbench.judging.rules.deterministic import PROMPT_RE
from awbench.judging.rules.masking import mask
from awbench.judging.rules.text import (
    PLACEHOLDER_RE,
    WORD_RE,
    _is_word_char,
    contains_bounded,
    content_chars,
    count_bounded,
    has_content_chars,
    normalize_line,
    words,
    words_of,
)
from awbench.resources import sample_dir

# Pieces that look like runtime metadata, so generated texts exercise the detectors, not just plain text.
FRAGMENTS = [
    "Nov 29 22:44",
    "Jan  3  2024",
    "2024-05-03T08:00:00Z",
    "22:44:16",
    "9:41",
    "0.03s",
    "12 ms",
    "real\t0m1.2s",
    "pid=",
    "PID",
    " TTY TIME CMD\n",
    "[1] ",
    "0x7f3a2b1c",
    "3f2a1b4c5d6e",
    "4.0K",
    "1.2 MB/s",
    "100%",
    "port ",
    "tmp.",
    "tmpa1b2c3d4",
    "⟨TIME⟩",
    "⟨PID",
    "⟩",
    "-rw-r--r-- 1 root root ",
    "total ",
    "\t",
    "\n",
    " ",
    ":",
    "-",
    "123e4567-e89b-12d3-a456-426614174000",
    "Battery ",
    " percent",
    "ago",
    "Up ",
    "\u2028",
    "{",
    "}",
    "<",
    ">",
]
metadata_text = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet="0123456789abcdefABCDEF:.-/ \n", max_size=12)),
    max_size=40,
).map("".join)
deep = st.builds(
    lambda n, opener, closer, cut: (opener * n + closer * n)[: len(opener * n + closer * n) - cut],
    st.integers(1, 3000),
    st.sampled_from(["[", "{", '{"a":', "<a>", "<node class='x'>", "(", "[1] link '"]),
    st.sampled_from(["]", "}", "}", "</a>", "</node>", ")", "'\n"]),
    st.integers(0, 3),
)
huge = st.builds(
    lambda piece, n: piece * n,
    st.sampled_from(["x", "1", "ab12", "<a>", "[{", " :", "⟨"]),
    st.integers(1, 60_000),
)
any_text = st.one_of(st.text(max_size=300), metadata_text, deep, huge)


def history_of(actions: list[str], observations: list[str]) -> list[str]:
    history = []
    for turn, (action, observation) in enumerate(zip(actions, observations), 1):
        history += [f"### Turn {turn}\n**Action:**\n{action}", f"{OBSERVATION_MARKER}\n{observation}"]
    return history + [f"### Turn {len(actions) + 1}\n**Action:**\n{actions[-1] if actions else 'ls'}"]


histories = st.builds(history_of, st.lists(any_text, max_size=3), st.lists(any_text, max_size=3))
domains = st.one_of(st.sampled_from(DOMAINS), st.text(max_size=8))
SETTINGS = settings(max_examples=200, deadline=None)


@SETTINGS
@given(domain=domains, truth=any_text, prediction=any_text, history=histories)
def test_scores_and_parts_are_bounded(domain: str, truth: str, prediction: str, history: list[str]) -> None:
    result = rule_score(domain=domain, ground_truth=truth, prediction=prediction, history=history)
    assert 0.0 <= result.score <= 1.0
    assert all(0.0 <= value <= 1.0 for value in result.parts.values())
    assert result.exact_match == (result.parts["exact_match"] == 1.0)


@SETTINGS
@given(text=st.one_of(metadata_text, st.text(max_size=200)))
def test_masking_is_idempotent(text: str) -> None:
    once = mask(text)
    assert mask(once) == once


@SETTINGS
@given(domain=st.sampled_from(DOMAINS), truth=any_text, history=histories)
def test_identical_prediction_scores_one(domain: str, truth: str, history: list[str]) -> None:
    result = rule_score(domain=domain, ground_truth=truth, prediction=truth, history=history)
    assert result.score == 1.0 and result.exact_match and result.deterministic_complete


@SETTINGS
@given(domain=st.sampled_from(DOMAINS), truth=st.one_of(deep, metadata_text), prediction=st.one_of(deep, huge))
def test_malformed_structures_never_raise(domain: str, truth: str, prediction: str) -> None:
    history = history_of([truth], [prediction])
    rule_score(domain=domain, ground_truth=truth, prediction=prediction, history=history)


PLAIN_PASS = [(d.applies, d.pattern, masking._replacement(d)) for d in masking.DETECTORS]


def _detectors_without_prefilter(line: str) -> str:
    """mask_line without its shortcuts (prefilter, cues): every detector whose line test passes, in order, on
    every candidate line, until nothing changes."""
    masked = line
    while masking.CANDIDATE_RE.search(masked):
        again = masked
        for applies, pattern, replace in PLAIN_PASS:
            if applies is None or applies(again):
                again = pattern.sub(replace, again)
        if again == masked:
            break
        masked = again
    return masked


def _sample_lines() -> list[str]:
    lines = set()
    for path in sorted(sample_dir().glob("*_test.jsonl")):
        for record in path.read_text(encoding="utf-8").split("\n"):
            if record.strip():
                data = json.loads(record)
                for text in [*data["prompt"], *data["response"]]:
                    lines.update(text.split("\n"))
    return sorted(lines)


def test_shortcuts_skip_only_lines_no_detector_changes() -> None:
    lines = _sample_lines()
    assert len(lines) > 1000
    masking.clear_caches()
    assert [masking.mask_line(line) for line in lines] == [_detectors_without_prefilter(line) for line in lines]


@SETTINGS
@given(text=st.one_of(metadata_text, st.text(max_size=200)))
def test_shortcuts_never_change_a_mask(text: str) -> None:
    for line in text.split("\n"):
        masking.clear_caches()
        assert masking.mask_line(line) == _detectors_without_prefilter(line)


ROTATE_DIGITS = str.maketrans("0123456789", "1234567890")


def test_a_line_is_masked_alone_when_another_of_its_shape_chose_its_detectors() -> None:
    """The detectors to try are chosen once per digit shape: a line planned from other digits (a clock hour of
    19 read as 20, a year as a count) must still get its own mask."""
    lines = [line for line in _sample_lines() if any(c.isdigit() for c in line)]
    assert len(lines) > 500
    masking.clear_caches()
    rotated = [line.translate(ROTATE_DIGITS) for line in lines]
    for line in rotated:
        masking.mask_line(line)
    masking._line_cache.clear()  # keep the plans, forget the masks
    assert [masking.mask_line(line) for line in lines] == [_detectors_without_prefilter(line) for line in lines]
    masking.clear_caches()
    assert [masking.mask_line(line) for line in rotated] == [_detectors_without_prefilter(line) for line in rotated]


def test_regex_word_characters_are_contains_bounded_word_characters() -> None:
    """words_of (regex `\\w+`) and contains_bounded (_is_word_char) must agree on what a word character is."""
    word = re.compile(r"\w")
    assert all(bool(word.match(c)) == _is_word_char(c) for c in map(chr, range(sys.maxunicode + 1)))


def test_words_of_ascii_text_by_translation_are_the_regex_words() -> None:
    every_ascii = "".join(map(chr, range(128)))
    assert words(every_ascii) == WORD_RE.findall(every_ascii)
    assert [words(f"x{c}y") for c in every_ascii] == [WORD_RE.findall(f"x{c}y") for c in every_ascii]


@SETTINGS
@given(text=st.one_of(st.text(max_size=80), st.text(alphabet=st.characters(max_codepoint=127), max_size=80)))
def test_words_are_the_regex_words(text: str) -> None:
    assert words(text) == WORD_RE.findall(text)


@SETTINGS
@given(
    line=st.one_of(st.text(max_size=60), st.text(alphabet=st.sampled_from(list("ab_1 \t@:~/#$%>().-")), max_size=30))
)
def test_a_prompt_line_holds_a_prompt_character(line: str) -> None:
    """prompt_similarity and line_facts match PROMPT_RE only on lines with one of these."""
    if PROMPT_RE.match(normalize_line(line)):
        assert "#" in line or "$" in line or "%" in line or ">>>" in line


words_alphabet = st.text(alphabet=st.sampled_from(list("ab_1 .:-\"'é\u2028")), max_size=40)


@SETTINGS
@given(haystack=words_alphabet, needle=words_alphabet)
def test_a_bounded_occurrence_holds_whole_words_only(haystack: str, needle: str) -> None:
    if contains_bounded(haystack, needle):
        assert words_of(needle) <= words_of(haystack)
    assert count_bounded(haystack, needle, 1) == int(contains_bounded(haystack, needle))


@SETTINGS
@given(text=st.one_of(metadata_text, st.text(max_size=60), words_alphabet))
def test_content_threshold_is_the_content_count(text: str) -> None:
    for n in (2, 3):
        assert has_content_chars(text, n) == (content_chars(text) >= n)


def _line_kind_plain(line: str) -> str:
    if not line.strip():
        return "blank"
    if PROMPT_RE.match(normalize_line(line)):
        return "prompt"
    for kind, pattern in structure.LINE_KINDS:
        if pattern.search(line):
            return kind
    return "meta" if PLACEHOLDER_RE.search(line) else "text"


@SETTINGS
@given(
    line=st.one_of(st.text(max_size=80), st.text(alphabet=st.sampled_from(list('aErRoO \t:[]{}<>"1-ıİK')), max_size=40))
)
def test_line_kind_shortcuts_change_nothing(line: str) -> None:
    structure.line_kind.cache_clear()
    assert structure.line_kind(line) == _line_kind_plain(line)


def test_line_kind_shortcuts_on_the_sample() -> None:
    lines = _sample_lines()
    structure.line_kind.cache_clear()
    assert [structure.line_kind(line) for line in lines] == [_line_kind_plain(line) for line in lines]


def _a11y_roles_per_line(text: str) -> Counter[str]:
    roles: Counter[str] = Counter()
    for line in text.split("\n"):
        m = structure.A11Y_LINE_RE.match(line)
        if m:
            roles[m.group("role") or m.group("role2")] += 1
    return roles


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(list("[]12 \t\n\u2028\x0blink'\"-_aB")), max_size=80))
def test_accessibility_roles_in_one_scan_are_the_roles_line_by_line(text: str) -> None:
    structure.a11y_roles.cache_clear()
    assert structure.a11y_roles(text) == _a11y_roles_per_line(text)


def test_accessibility_roles_of_the_sample() -> None:
    structure.a11y_roles.cache_clear()
    for path in sorted(sample_dir().glob("*_test.jsonl")):
        for record in path.read_text(encoding="utf-8").split("\n"):
            for text in json.loads(record)["response"] if record.strip() else []:
                assert structure.a11y_roles(text) == _a11y_roles_per_line(text)

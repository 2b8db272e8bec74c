import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awbench.domains import DIMENSIONS
from awbench.judging.llm.verdict_parsing import _final_blocks, _object_spans, _score, parse_verdict


@pytest.mark.parametrize(
    ("text", "spans"),
    [
        ('{"a": 1}', [(0, 8)]),
        ('x {"a": "}"} y', [(2, 12)]),
        ("{'a': '{'}", [(0, 10)]),
        ('{"a": "\\"}"}', [(0, 12)]),
        ('{"a": "it\'s"}', [(0, 13)]),
        ('{"a": {"b": {}}} {"c": 2}', [(0, 16), (17, 25)]),
        ('{"a": "\\\\"}', [(0, 11)]),
        ('{note: it\'s odd} {"a": 1}', [(0, 16), (17, 25)]),  # an apostrophe in prose opens no string
        ("no braces", []),
        ("} stray close", []),
        ("x { y", [(2, None)]),
    ],
)
def test_object_spans_ignore_braces_in_strings(text: str, spans: list[tuple[int, int | None]]) -> None:
    assert _object_spans(text) == spans


def test_objects_inside_an_unclosed_brace_are_listed() -> None:
    text = 'a {stray brace, then {"scores": {}}'
    assert _object_spans(text) == [(2, None), (21, 35)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (4, (4, [])),
        (4.0, (4, [])),
        (2.5, (2, ["rounded"])),
        (3.5, (4, ["rounded"])),
        (4.49, (4, ["rounded"])),
        (0, (1, ["clamped"])),
        (7, (5, ["clamped"])),
        (-3, (1, ["clamped"])),
        (5.5, (5, ["rounded", "clamped"])),
        (10**400, (5, ["clamped"])),
        ("4", (4, [])),
        ("4/5", (4, [])),
        ("4 out of 5", (4, [])),
        ("2.5", (2, ["rounded"])),
        ("9", (5, ["clamped"])),
        ("3/5", (3, [])),
        ("3 out of 5", (3, [])),
        ("4.5 / 5", (4, ["rounded"])),
        ("10/10", (None, [])),  # on another scale: unusable, never clamped to 5
        ("8/10", (None, [])),
        ("8 out of 10", (None, [])),
        ("2 Out Of 3", (None, [])),
        ("80%", (None, [])),
        ("n/a", (None, [])),
        ("", (None, [])),
        (None, (None, [])),
        (True, (None, [])),
        (float("nan"), (None, [])),
        (float("inf"), (None, [])),
        ([4], (None, [])),
        ({"score": 4}, (None, [])),
    ],
)
def test_score_rounds_and_clamps(value: object, expected: tuple[int | None, list[str]]) -> None:
    assert _score(value) == expected


OPEN, CLOSE = "<final_evaluation>", "</final_evaluation>"


@pytest.mark.parametrize(
    ("text", "blocks"),
    [
        ("no tag", []),
        ("<final_evaluation>a</final_evaluation>", ["a"]),
        ("<final_evaluation>a</final_evaluation><final_evaluation>b</final_evaluation>", ["a", "b"]),
        ("<final_evaluation>a</final_evaluation><final_evaluation>b", ["a", "b"]),
        (f"{OPEN}a{OPEN}b{CLOSE}c{CLOSE}", [f"a{OPEN}b{CLOSE}c"]),  # a block quoted inside another stays inside
        (f"{OPEN}a{OPEN}b{CLOSE}c", [f"a{OPEN}b{CLOSE}c"]),  # ... also when the outer one never closes
        ("</final_evaluation>x", []),
    ],
)
def test_final_blocks_are_the_top_level_ones(text: str, blocks: list[str]) -> None:
    assert [text[block.start : block.end] for block in _final_blocks(text)] == blocks


@pytest.mark.parametrize(
    "raw", ["{" * 50_000, "{'" * 25_000, "<think>" * 10_000, "`" * 50_000, "{" * 5_000 + "}" * 5_000]
)
def test_degenerate_output_is_unparsed(raw: str) -> None:
    # Linear scans take milliseconds on these; an earlier quadratic version took minutes.
    assert parse_verdict(raw).status == "unparsed"


JUDGE_ALPHABET = st.sampled_from(
    list("{}[]\"',:`\\ \n\t/*")
    + ["<think>", "</think>", "<final_evaluation>", "</final_evaluation>", "```json\n"]
    + ['"scores"', '"format"', '"quality"', "null", "2.5", "7", "-1", "NaN", '"4/5"', "true", "x", "中"]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.lists(JUDGE_ALPHABET, max_size=60).map("".join)))
def test_parse_verdict_never_raises_and_scores_are_in_range(raw: str) -> None:
    verdict = parse_verdict(raw)
    assert set(verdict.scores) <= set(DIMENSIONS)
    assert all(type(score) is int and 1 <= score <= 5 for score in verdict.scores.values())
    assert (verdict.status == "complete") == (len(verdict.scores) == len(DIMENSIONS))
    assert (verdict.status == "unparsed") == (not verdict.scores)
    assert all(isinstance(item, str) for item in verdict.strengths + verdict.weaknesses)


SCORE_VALUES = st.one_of(
    st.integers(), st.floats(), st.text(max_size=8), st.none(), st.booleans(), st.lists(st.integers(), max_size=2)
)


@settings(max_examples=300, deadline=None)
@given(
    scores=st.dictionaries(st.sampled_from([*DIMENSIONS, "Quality", "overall"]), SCORE_VALUES),
    cut=st.one_of(st.none(), st.integers(min_value=1, max_value=300)),
    tagged=st.booleans(),
)
def test_parse_verdict_on_generated_verdicts(scores: dict[str, object], cut: int | None, tagged: bool) -> None:
    """Structured verdicts with arbitrary score values, whole or truncated, tagged or bare."""
    text = json.dumps({"strengths": ["a {b}"], "scores": scores, "weaknesses": ["c"]})[:cut]
    verdict = parse_verdict(f"reasoning\n<final_evaluation>\n```json\n{text}" if tagged else text)
    assert all(type(score) is int and 1 <= score <= 5 for score in verdict.scores.values())
    assert set(verdict.scores) <= set(DIMENSIONS)


# Text that mentions the tag is the one case where an untagged verdict cannot round-trip (see the next test);
# Hypothesis draws the parser's own string constants, so it does find it.
_NOT_THE_TAG = st.text(max_size=40).filter(lambda text: "final_evaluation" not in text.casefold())


@settings(max_examples=200, deadline=None)
@given(
    scores=st.fixed_dictionaries({dim: st.integers(min_value=1, max_value=5) for dim in DIMENSIONS}),
    strengths=st.lists(_NOT_THE_TAG, max_size=3),
    tagged=st.booleans(),
)
def test_valid_verdicts_round_trip(scores: dict[str, int], strengths: list[str], tagged: bool) -> None:
    text = json.dumps({"strengths": strengths, "weaknesses": [], "scores": scores}, ensure_ascii=False)
    raw = f"Some reasoning {{with braces}}.\n<final_evaluation>\n{text}\n</final_evaluation>" if tagged else text
    verdict = parse_verdict(raw)
    assert (verdict.status, verdict.scores, verdict.strengths, verdict.flags) == (
        "complete",
        scores,
        strengths,
        [] if tagged else ["no_final_tag"],
    )


def test_a_tag_inside_an_untagged_verdict_opens_a_block() -> None:
    """Without tags around the verdict, a tag written inside one of its strings is read as a tag (an answer cut
    off inside its block looks the same): the block runs from there, and its scores object is taken as a flat
    verdict. The scores are still the judge's; the strengths before the tag are lost, and it is flagged."""
    scores = dict.fromkeys(DIMENSIONS, 2)
    raw = json.dumps({"strengths": ["<FINAL_EVALUATION>"], "weaknesses": [], "scores": scores})
    verdict = parse_verdict(raw)
    assert (verdict.status, verdict.scores, verdict.strengths, verdict.flags) == (
        "complete",
        scores,
        [],
        ["flat_scores"],
    )


VERDICT = '"strengths": ["a"], "weaknesses": []'
TWOS = '"format": 2, "factuality": 2, "consistency": 2, "realism": 2, "quality": 2'


@pytest.mark.parametrize(
    ("body", "conflicts"),
    [
        ('{%s, "scores": {"format": 1, %s}}' % (VERDICT, TWOS), "scores.format"),
        ('{%s, "scores": {"Format": 5, %s}}' % (VERDICT, TWOS), "scores.format"),  # keys compare as read
        ('{%s, "scores": {%s}, "scores": {"format": 2}}' % (VERDICT, TWOS), "scores"),
        ('{%s, "strengths": ["b"], "scores": {%s}}' % (VERDICT, TWOS), "strengths"),
        ('{%s, "scores": {%s, "quality": 5' % (VERDICT, TWOS), "scores.quality"),  # truncated, repaired
        ('{%s, %s, "format": 4}' % (VERDICT, TWOS), "format"),  # flat
    ],
)
def test_a_key_with_two_values_makes_the_verdict_ambiguous(body: str, conflicts: str) -> None:
    verdict = parse_verdict(f"{OPEN}\n{body}\n{CLOSE}")
    assert (verdict.status, verdict.scores, verdict.flags[-1]) == ("unparsed", {}, "ambiguous")
    assert verdict.reason is not None and verdict.reason.startswith(
        "ambiguous verdict: different values for " + conflicts
    )


def test_a_key_repeated_with_the_same_value_is_no_ambiguity() -> None:
    body = '{%s, "scores": {%s, "format":  2}, "weaknesses": []}' % (VERDICT, TWOS)
    assert parse_verdict(f"{OPEN}\n{body}\n{CLOSE}").scores == dict.fromkeys(DIMENSIONS, 2)

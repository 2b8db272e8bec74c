"""Regression corpus of raw judge outputs: each `NAME.txt` in tests/judge_outputs/ is parsed and compared with
`NAME.expected.json` beside it, on the keys that file holds. Adding a case is dropping two files there."""

import json
from pathlib import Path

import pytest

from awbench.judging.verdict import parse_verdict

CORPUS = Path(__file__).parent / "judge_outputs"
CASES = sorted(CORPUS.glob("*.txt"))


def _expected_path(case: Path) -> Path:
    return case.with_name(f"{case.stem}.expected.json")


def test_corpus_is_complete() -> None:
    assert len(CASES) >= 40
    assert [case.name for case in CASES if not _expected_path(case).exists()] == []


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_parse_matches_expected(case: Path) -> None:
    expected = json.loads(_expected_path(case).read_text(encoding="utf-8"))
    parsed = parse_verdict(case.read_text(encoding="utf-8")).model_dump()
    assert {key: parsed[key] for key in expected} == expected

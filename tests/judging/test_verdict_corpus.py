"""Regression corpus of raw judge outputs: each `NAME.txt` in tests/judge_outputs/ is parsed and compared with
`NAME.expected.json` beside it, on the keys that file holds. An optional `NAME.prediction.txt` holds the
prediction the judge was shown, passed to the parser (cases of verdicts quoted from the prediction); without
it the prediction is empty. Adding a case is dropping two (or three) files there."""

import json
from pathlib import Path

import pytest

from awbench.judging.llm.verdict_parsing import parse_verdict

CORPUS = Path(__file__).resolve().parents[1] / "judge_outputs"
PREDICTION_SUFFIX = ".prediction.txt"
CASES = sorted(path for path in CORPUS.glob("*.txt") if not path.name.endswith(PREDICTION_SUFFIX))
CASE_NAMES = {case.name for case in CASES}


def _expected_path(case: Path) -> Path:
    return case.with_name(f"{case.stem}.expected.json")


def _prediction_path(case: Path) -> Path:
    return case.with_name(f"{case.stem}{PREDICTION_SUFFIX}")


def test_corpus_is_complete() -> None:
    assert len(CASES) >= 40
    assert [case.name for case in CASES if not _expected_path(case).exists()] == []
    predictions = CORPUS.glob(f"*{PREDICTION_SUFFIX}")
    assert [path.name for path in predictions if path.name.replace(PREDICTION_SUFFIX, ".txt") not in CASE_NAMES] == []


@pytest.mark.parametrize("case", CASES, ids=[case.stem for case in CASES])
def test_parse_matches_expected(case: Path) -> None:
    expected = json.loads(_expected_path(case).read_text(encoding="utf-8"))
    prediction_file = _prediction_path(case)
    prediction = prediction_file.read_text(encoding="utf-8") if prediction_file.exists() else ""
    parsed = parse_verdict(case.read_text(encoding="utf-8"), prediction).model_dump()
    assert {key: parsed[key] for key in expected} == expected

"""The reference eval.py's readings (awbench/judging/reference_parsers.py) against what the reference's own
functions returned: every row of tests/fixtures/reference/ (800 judge answers, 300 generations, 13 choice
answers), field by field, value and type (`total_score` is int 0 or a float, as the reference gives it).

With AWBENCH_REFERENCE_CHECKOUT set to a checkout of QwenLM/Qwen-AgentWorld, the checkout's own
`lwm_eval_utils` reads the same inputs and must agree. And the functions never raise, on any text.
"""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awbench.domains import DIMENSIONS, DOMAINS, OBSERVATION_MARKER
from awbench.judging.reference_parsers import (
    NO_OUTPUT,
    ReferenceGeneration,
    ReferenceVerdict,
    reference_choice,
    reference_clean,
    reference_generation,
    reference_verdict,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reference"
CHECKOUT_VARIABLE = "AWBENCH_REFERENCE_CHECKOUT"


def rows(name: str) -> list[dict[str, Any]]:
    with (FIXTURES / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


VERDICTS = rows("verdicts.jsonl")
GENERATIONS = rows("generations.jsonl")
CHOICES = rows("choices.jsonl")


def differences(index: int, got: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """Each field that differs in value or type (1 == 1.0 == True in Python, not in the reference's output)."""
    return [f"row {index} {field}: expected {expected[field]!r}, got {got[field]!r}" for field in expected
            if got[field] != expected[field] or type(got[field]) is not type(expected[field])]  # fmt: skip


def verdict_fields(answer: str) -> dict[str, Any]:
    return reference_verdict(answer)._asdict()


def generation_fields(generation: str, domain: str) -> dict[str, Any]:
    return reference_generation(generation, domain)._asdict()


def choice_fields(answer: str) -> dict[str, Any]:
    choice = reference_choice(answer)
    return {"success": choice is not None, "choice": choice}


def mismatches(fixture: list[dict[str, Any]], read: Callable[..., dict[str, Any]], *inputs: str) -> list[str]:
    found = []
    for index, row in enumerate(fixture):
        found += differences(index, read(*(row[name] for name in inputs)), row["reference"])
    return found


def test_the_fixtures_are_whole() -> None:
    assert (len(VERDICTS), len(GENERATIONS), len(CHOICES)) == (800, 300, 13)
    assert sum(row["reference"]["success"] for row in VERDICTS) == 569
    assert {row["domain"] for row in GENERATIONS} == set(DOMAINS)


def test_every_judge_answer_is_read_as_the_reference_reads_it() -> None:
    assert mismatches(VERDICTS, verdict_fields, "answer") == []


def test_every_generation_is_extracted_and_shown_as_by_the_reference() -> None:
    assert mismatches(GENERATIONS, generation_fields, "generation", "domain") == []


def test_every_choice_answer_is_read_as_the_reference_reads_it() -> None:
    assert mismatches(CHOICES, choice_fields, "answer") == []


def test_the_checks_can_fail() -> None:
    """One changed expectation of each kind is reported, with its row and field."""
    verdict = json.loads(json.dumps(VERDICTS[2]))
    verdict["reference"]["total_score"] = int(verdict["reference"]["total_score"])
    generation = dict(GENERATIONS[15], domain="os")
    generation["reference"] = dict(generation["reference"], shown_to_judge=generation["reference"]["extracted"])
    choice = dict(CHOICES[0], reference={"success": True, "choice": "B"})
    assert mismatches([verdict], verdict_fields, "answer") == ["row 0 total_score: expected 3, got 3.2"]
    assert mismatches([generation], generation_fields, "generation", "domain") == [
        f"row 0 shown_to_judge: expected '{OBSERVATION_MARKER}\\nfile.txt', got 'file.txt'"
    ]
    assert mismatches([choice], choice_fields, "answer") == ["row 0 choice: expected 'B', got 'A'"]


# --- Beyond the fixtures: answers the reference fails on with "Error: ...", never an exception here -----------


def test_unconvertible_numbers_fail_the_verdict_with_the_python_error() -> None:
    infinite = '{"scores": {"format": 1e999, "factuality": 3}}'
    assert reference_verdict(infinite).error_message == "Error: cannot convert float infinity to integer"
    huge = '{"scores": {"format": ' + "9" * 5000 + "}}"
    assert (reference_verdict(huge).error_message or "").startswith("Error: Exceeds the limit (4300 digits)")
    nested = '{"scores": {"format": ' + "[" * 100_000 + "]" * 100_000 + "}}"
    assert (reference_verdict(nested).error_message or "").startswith("Error: maximum recursion depth exceeded")
    assert not any(reference_verdict(text).success for text in (infinite, huge, nested))


def test_deeply_nested_thinking_is_read_in_linear_time() -> None:
    depth = 100_000
    answer = "<think>" * depth + "</think>" * depth + '{"scores": {"format": 4}}'
    started = time.perf_counter()
    verdict = reference_verdict(answer)
    assert time.perf_counter() - started < 2
    assert (verdict.success, verdict.scores["format"], verdict.total_score) == (True, 4, 4.0)


def test_an_empty_generation_is_not_judged() -> None:
    assert reference_generation("", "mcp") == ReferenceGeneration(False, NO_OUTPUT, NO_OUTPUT)
    assert reference_generation(" ", "mcp") == ReferenceGeneration(True, NO_OUTPUT, NO_OUTPUT)


# --- Never raises -------------------------------------------------------------------------------------------------

FRAGMENTS = ("<think>", "</think>", "<THINK>", "<final_evaluation>", "</final_evaluation>", "<FINAL_EVALUATION>",
             "```json", "```", "~~~", "{", "}", "[", "]", '"scores":', '"format":', '"quality": ', "'realism':",
             "strengths:", '"strengths": ', ",", ":", '"', "'", "NaN", "Infinity", "-Infinity", "1e999", "3", "-2",
             "4.5", '"4/5"', '"N/A"', "true", "null", " ", "\n", "\r\n", "\u00a0", "\u2028", "\u200b", "note: x",
             "\\boxed{A}", "boxed{ b }", "A", "B", "<predicted_observation>", "</predicted_observation>",
             OBSERVATION_MARKER, "\ud800", '"\\ud800"')  # fmt: skip
TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=6)), max_size=40).map("".join)


def fuzz(examples: int):
    return settings(max_examples=examples, database=None, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])  # fmt: skip


@fuzz(500)
@given(TEXTS)
def test_a_judge_answer_never_raises(answer: str) -> None:
    verdict = reference_verdict(answer)
    assert isinstance(verdict, ReferenceVerdict)
    assert list(verdict.scores) == list(DIMENSIONS)
    assert all(type(score) is int and score <= 5 for score in verdict.scores.values())
    assert all(type(text) is str for text in verdict.strengths + verdict.weaknesses)
    assert verdict.success == (verdict.error_message is None)
    if not verdict.success:
        assert (set(verdict.scores.values()), verdict.total_score, verdict.strengths) == ({0}, 0.0, [])


@fuzz(250)
@given(TEXTS, st.sampled_from((*DOMAINS, "", "unknown")))
def test_a_generation_never_raises(generation: str, domain: str) -> None:
    read = reference_generation(generation, domain)
    assert read.judged == (generation != "")
    assert read.shown_to_judge == reference_clean(read.extracted)
    assert read.extracted == read.extracted.strip()


@fuzz(250)
@given(TEXTS)
def test_a_choice_answer_never_raises(answer: str) -> None:
    assert reference_choice(answer) in ("A", "B", None)


# --- The reference's own functions, when a checkout is at hand -----------------------------------------------------


@pytest.fixture(scope="module")
def reference_utils() -> Any:
    checkout = os.environ.get(CHECKOUT_VARIABLE)
    if not checkout:
        pytest.skip(f"{CHECKOUT_VARIABLE} is not set (a checkout of QwenLM/Qwen-AgentWorld to compare with)")
    eval_dir = Path(checkout) / "eval"
    assert (eval_dir / "lwm_eval_utils").is_dir(), f"{CHECKOUT_VARIABLE}={checkout}: no eval/lwm_eval_utils/ there"
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.syspath_prepend(str(eval_dir))
    try:
        yield importlib.import_module("lwm_eval_utils")
    finally:
        monkeypatch.undo()


def reference_function(package: Any, name: str) -> Callable[..., Any]:
    """`name` from the package, or from the first of its modules that defines it."""
    if hasattr(package, name):
        return getattr(package, name)
    for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        found = getattr(importlib.import_module(module.name), name, None)
        if found is not None:
            return found
    raise AssertionError(f"{package.__name__} has no {name}")


def as_eval_reads(parsed: dict[str, Any]) -> dict[str, Any]:
    """A parse_judge_output result, its fields as eval.py reads them (a missing score is 0)."""
    scores = parsed.get("scores") or {}
    return {"success": parsed["success"], "scores": {dimension: scores.get(dimension, 0) for dimension in DIMENSIONS},
            "total_score": parsed.get("total_score", 0.0), "strengths": parsed.get("strengths", []),
            "weaknesses": parsed.get("weaknesses", []), "error_message": parsed.get("error_message")}  # fmt: skip


def as_choice(result: Any) -> dict[str, Any]:
    """extract_choice_answer's result, a dict or a (success, choice) pair."""
    if isinstance(result, dict):
        return {"success": result["success"], "choice": result.get("choice")}
    success, choice = result
    return {"success": success, "choice": choice}


def test_the_checkout_reads_judge_answers_as_awbench(reference_utils: Any) -> None:
    parse = reference_function(reference_utils, "parse_judge_output")
    found = []
    for index, row in enumerate(VERDICTS):
        theirs = as_eval_reads(parse(row["answer"], "final_evaluation"))
        found += differences(index, verdict_fields(row["answer"]), theirs)
    assert found == []


def test_the_checkout_reads_generations_as_awbench(reference_utils: Any) -> None:
    parse = reference_function(reference_utils, "parse_model_output")
    clean = reference_function(reference_utils, "clean_response_marker")
    found = []
    for index, row in enumerate(GENERATIONS):
        extracted = parse(row["generation"], "predicted_observation")
        theirs = {"judged": bool(row["generation"]), "extracted": extracted,
                  "shown_to_judge": clean(extracted, row["domain"])}  # fmt: skip
        found += differences(index, generation_fields(row["generation"], row["domain"]), theirs)
    assert found == []


def test_the_checkout_reads_choice_answers_as_awbench(reference_utils: Any) -> None:
    extract = reference_function(reference_utils, "extract_choice_answer")
    found = []
    for index, row in enumerate(CHOICES):
        found += differences(index, choice_fields(row["answer"]), as_choice(extract(row["answer"])))
    assert found == []

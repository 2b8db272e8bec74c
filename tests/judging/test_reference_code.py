"""The reference's own code, run from a checkout (awbench/judging/llm/reference_code.py): imported in isolation, its
functions called as eval.py calls them, a checkout that cannot serve refused naming what is missing.

Against the stand-in checkout of tests/reference_checkout.py always; with AWBENCH_REFERENCE_CHECKOUT naming a
checkout of QwenLM/Qwen-AgentWorld, every recorded fixture (tests/fixtures/reference/: 800 judge answers, 300
generations, 13 choice answers, each with what the reference's functions returned for it) is read through that
checkout by awbench and must give the recorded reading.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reference_checkout import JUDGE_PARSER, OUTPUT_PARSER, real_checkout, stand_in, write_checkout
from typer.testing import CliRunner

from awbench.cli import app
from awbench.domains import DIMENSIONS
from awbench.judging.llm.reference_code import ReferenceCodeError, ReferenceVerdict, load_reference_code

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reference"


def fixture_rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").split("\n") if line]


def test_the_package_is_imported_in_isolation(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    checkout = write_checkout(tmp_path / "Qwen-AgentWorld")
    path_before = list(sys.path)
    code = load_reference_code(checkout)
    assert code.module.__name__.startswith("_awbench_reference_")
    assert not any(name == "lwm_eval_utils" or name.startswith("lwm_eval_utils.") for name in sys.modules)
    assert sys.path == path_before
    assert not list(checkout.rglob("__pycache__"))  # nothing written into the user's checkout
    assert load_reference_code(checkout) is code  # imported once per process
    # The checkout's loggers are silent: its warning on an unreadable answer does not reach the terminal.
    logging.getLogger().setLevel(logging.WARNING)
    assert code.read_verdict("no verdict here", "terminal") == ReferenceVerdict(False, {}, 0, code.sha256)
    assert capfd.readouterr().err == ""


def test_awbench_calls_the_checkouts_functions_as_eval_py_calls_them(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "c")
    code, own = load_reference_code(checkout), stand_in(checkout)
    answer = '{"scores": {"format": 2}} then {"scores": {"format": 5, "factuality": 9, "quality": "x"}}'
    expected = own.parse_judge_output(answer, response_tag="final_evaluation")  # the stand-in takes the first
    read = code.read_verdict(answer, "os")
    assert (read.success, read.scores, read.total_score) == (True, expected["scores"], expected["total_score"])
    assert read.scores == {"format": 2, "factuality": 0, "consistency": 0, "realism": 0, "quality": 0}
    generation = "<think>plan</think><predicted_observation>**Environment Observation:**\nout</predicted_observation>"
    assert code.extract(generation, "web") == own.parse_model_output(generation, "predicted_observation")
    assert code.clean("a **Environment Observation:** b", "web") == "a  b"
    assert code.read_choice("\\boxed{B} or rather \\boxed{A}") == "B"  # the stand-in's first box
    assert code.read_choice("neither") is None
    assert set(code.judge_system_prompts()) == {"terminal", "swe", "search", "mcp", "android", "web", "os"}
    # An unknown subtask takes the MCP configuration, as eval.py does.
    assert code.config("chess") == code.config("mcp")


def test_two_checkouts_load_side_by_side(tmp_path: Path) -> None:
    generous = JUDGE_PARSER.replace("min(value, 5) if isinstance(value, int) else 0", "5")
    first = load_reference_code(write_checkout(tmp_path / "one"))
    second = load_reference_code(write_checkout(tmp_path / "two", files={"judge_parser.py": generous}))
    answer = '{"scores": {"format": 1, "factuality": 1, "consistency": 1, "realism": 1, "quality": 1}}'
    assert first.read_verdict(answer, "os").total_score == 1
    assert second.read_verdict(answer, "os").total_score == 5
    assert first.sha256 != second.sha256 and first.module is not second.module
    # The same code in two places is two packages: each reads its prompts where it lies.
    third = load_reference_code(write_checkout(tmp_path / "three"))
    assert third.sha256 == first.sha256 and third.module is not first.module


BROKEN: list[tuple[str, dict[str, str], str]] = [
    (
        "no-choice-parser",
        {"judge_parser.py": JUDGE_PARSER.replace("def extract_choice_answer(", "def other_choice(")},
        re.escape("no function extract_choice_answer(raw_output) in eval/lwm_eval_utils/judge_parser.py"),
    ),
    (
        "other-signature",
        {
            "output_parser.py": OUTPUT_PARSER.replace(
                "def clean_response_marker(text, subtask)", "def clean_response_marker(text)"
            )
        },
        re.escape("eval/lwm_eval_utils: clean_response_marker does not take (text, subtask), as eval.py calls it"),
    ),
    (
        "judge-tag-by-another-name",
        {
            "judge_parser.py": JUDGE_PARSER.replace(
                "def parse_judge_output(raw_output, response_tag)", "def parse_judge_output(raw_output, tag)"
            )
        },
        re.escape("parse_judge_output does not take (raw_output, response_tag)"),
    ),
    (
        "configs-not-a-dict",
        {
            "__init__.py": "from .judge_parser import *\nfrom .output_parser import *\nTASK_CONFIGS = []\nJUDGE_USER_PROMPT = ''\n"
        },
        "no dict TASK_CONFIGS in eval/lwm_eval_utils",
    ),
    (
        "raises-at-import",
        {"__init__.py": "raise RuntimeError('broken on purpose')\n"},
        "RuntimeError: broken on purpose",
    ),
    ("exits-at-import", {"__init__.py": "import sys\nsys.exit(3)\n"}, "importing .* failed: SystemExit: 3"),
    ("syntax-error", {"output_parser.py": "def broken(:\n"}, "importing .* failed: SyntaxError"),
]


@pytest.mark.parametrize(("files", "message"), [pytest.param(f, m, id=i) for i, f, m in BROKEN])
def test_a_checkout_that_cannot_serve_is_refused_naming_what_is_missing(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    checkout = write_checkout(tmp_path / "c", files=files)
    modules = set(sys.modules)
    with pytest.raises(ReferenceCodeError, match=message):
        load_reference_code(checkout)
    assert set(sys.modules) - modules == set()  # nothing half-imported is left behind


def test_a_checkout_without_the_package_is_refused(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "c")
    (checkout / "eval" / "lwm_eval_utils" / "__init__.py").unlink()
    with pytest.raises(ReferenceCodeError, match=r"eval/lwm_eval_utils/__init__.py not found: the reference protocol"):
        load_reference_code(checkout)


def test_a_broken_checkout_is_exit_2_before_anything_runs(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "c", files={"__init__.py": "raise RuntimeError('broken on purpose')\n"})
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline:oracle",
            "--data",
            "sample",
            "--output",
            str(out),
            "--judge-prompts",
            str(checkout),
            "--judge-model",
            "j",
        ],
    )
    assert result.exit_code == 2
    assert "RuntimeError: broken on purpose" in result.output and "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('return {"success": True, "scores": {"format": float("nan")}, "total_score": 1}', "returned the score nan"),
        ("return 'fine'", "parse_judge_output returned str, not a dict"),
        ("raise KeyError('scores')", "the checkout's parse_judge_output raised KeyError: 'scores'"),
    ],
)
def test_what_the_checkouts_functions_do_wrong_is_named(tmp_path: Path, change: str, message: str) -> None:
    source = JUDGE_PARSER.replace('    """The first JSON object holding "scores"', f'    {change}\n    """The first', 1)
    code = load_reference_code(write_checkout(tmp_path / "c", files={"judge_parser.py": source}))
    with pytest.raises(ReferenceCodeError, match=message):
        code.read_verdict("{}", "os")


def git(checkout: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(checkout), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True,
        capture_output=True,
    )


def committed(checkout: Path) -> str:
    git(checkout, "init", "-q")
    git(checkout, "add", ".")
    git(checkout, "commit", "-q", "-m", "stand-in")
    return subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


def test_the_commit_and_the_files_are_recorded(tmp_path: Path) -> None:
    assert load_reference_code(write_checkout(tmp_path / "plain")).commit is None  # not a git work tree
    clean = write_checkout(tmp_path / "clean")
    head = committed(clean)
    provenance = load_reference_code(clean).provenance()
    assert provenance["commit"] == head and len(head) == 40
    names = ("__init__.py", "task_configs.py", "judge_parser.py", "output_parser.py")
    assert set(provenance["files"]) == {f"eval/lwm_eval_utils/{name}" for name in names}
    edited = write_checkout(tmp_path / "edited")
    head = committed(edited)
    (edited / "prompts" / "os" / "judge_system_prompt.txt").write_text("edited\n")
    assert load_reference_code(edited).commit == f"{head}+modified"


# --- the recorded fixtures through a real checkout --------------------------------------------------------------


@pytest.fixture
def checkout() -> Path:
    return real_checkout("read the fixtures with")


def test_the_fixtures_are_whole() -> None:
    assert (
        len(fixture_rows("verdicts.jsonl")),
        len(fixture_rows("generations.jsonl")),
        len(fixture_rows("choices.jsonl")),
    ) == (800, 300, 13)


def test_every_judge_answer_reads_through_the_checkout_as_recorded(checkout: Path) -> None:
    code = load_reference_code(checkout)
    for row in fixture_rows("verdicts.jsonl"):
        read, recorded = code.read_verdict(row["answer"], "terminal"), row["reference"]
        expected_scores = {d: recorded["scores"][d] for d in DIMENSIONS} if recorded["success"] else {}
        assert (read.success, read.scores, read.total_score) == (
            recorded["success"],
            expected_scores,
            recorded["total_score"] if recorded["success"] else 0,
        ), row["answer"][:200]


def test_every_generation_is_extracted_and_shown_through_the_checkout_as_recorded(checkout: Path) -> None:
    code = load_reference_code(checkout)
    for row in fixture_rows("generations.jsonl"):
        recorded = row["reference"]
        assert (row["generation"] != "") == recorded["judged"]
        extracted = code.extract(row["generation"], row["domain"])
        assert (extracted, code.clean(extracted, row["domain"])) == (
            recorded["extracted"],
            recorded["shown_to_judge"],
        ), row["generation"][:200]


def test_every_choice_answer_reads_through_the_checkout_as_recorded(checkout: Path) -> None:
    code = load_reference_code(checkout)
    for row in fixture_rows("choices.jsonl"):
        assert code.read_choice(row["answer"]) == row["reference"]["choice"], row["answer"]

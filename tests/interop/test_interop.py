"""`awbench import` and `awbench export`: the reference script's files, strictly read and faithfully written.

Every malformed file is refused with exit 2, every problem named `file:line: field: message`, and nothing
left in the results directory; valid files score as the reference script scores them.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from refusals import refusal
from runs_helpers import Grade, make_run, write_data
from typer.testing import CliRunner

from awbench.cli import app
from awbench.domains import DIMENSIONS, DOMAINS
from awbench.judging.rules.judge import RuleJudge
from awbench.resources import sample_dir
from awbench.run.store import RunStore

runner = CliRunner()
DROP = object()  # a field to remove from the row

DIMS_36 = dict(format=5, factuality=4, consistency=3, realism=4, quality=2)  # mean 3.6
REFUSED = "error: {f}: {n} error(s) in the file; nothing was imported: fix them, then import again"


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def record(domain: str, i: int, turns: int = 1) -> dict:
    return {
        "task": f"agentworld/{domain}",
        "id": i,
        "prompt": [f"### Turn {t}\n**Action:**\nstep {t} of {domain} {i}" for t in range(1, turns + 1)],
        "response": [f"**Environment Observation:**\n{domain} {i} output {t}" for t in range(1, turns + 1)],
        "current_prompt": f"### Turn {turns}\n**Action:**\nstep {turns} of {domain} {i}",
        "system_str": "",
        "turn_idx": turns,
        "total_turns": turns,
    }


def scored(rec: dict, gen: str = "", dims: Mapping[str, int] | None = None) -> dict:
    scores = dims or DIMS_36
    valid = [v for v in scores.values() if v]
    return {
        **rec,
        "gen": gen or rec["response"][-1],
        "total_score": sum(valid) / len(valid) if valid else 0,
        **scores,
        "failed": 0.0,
        "strengths": ["keeps the format"],
        "weaknesses": ["invents a file"],
        "extracted_output": gen or rec["response"][-1],
        "judge_raw_output": "<final_evaluation>...</final_evaluation>",
    }


def judge_failed(rec: dict) -> dict:
    gen = rec["response"][-1]
    return {
        **rec,
        "gen": gen,
        "total_score": 0,
        "failed": 1.0,
        "error_message": "Judge scoring failed",
        "extracted_output": gen,
    }


def no_generation(rec: dict) -> dict:
    return {**rec, "gen": "", "failed": 1.0, "error_message": "No model generation"}


def lines_of(rows: list[dict]) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def three_rows() -> list[dict]:
    """Line 1 scored, line 2 scored (the row the malformed cases change), line 3 a judge failure."""
    return [
        scored(record("os", 1)),
        scored(record("os", 2), dims={d: 4 for d in DIMENSIONS}),
        judge_failed(record("os", 3)),
    ]


@pytest.fixture
def out(tmp_path):
    return tmp_path / "results"


def assert_nothing_imported(out: Path) -> None:
    assert not out.exists() or not any(out.iterdir()), sorted(out.iterdir())


def errors_of(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error: ")]


def warnings_of(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("warning: ")]


# --- Malformed files -----------------------------------------------------------------------------------------


def change(**fields) -> Callable[[list[dict]], bytes]:
    """Line 2 with these fields changed (DROP: removed)."""

    def make(rows: list[dict]) -> bytes:
        row = {**rows[1], **fields}
        rows[1] = {k: v for k, v in row.items() if v is not DROP}
        return lines_of(rows)

    return make


def line2(text: Callable[[str], str | bytes]) -> Callable[[list[dict]], bytes]:
    """Line 2 as raw text made from its JSON text (for what json.dumps cannot write)."""

    def make(rows: list[dict]) -> bytes:
        lines = lines_of(rows).split(b"\n")
        new = text(lines[1].decode())
        lines[1] = new if isinstance(new, bytes) else new.encode("utf-8", "surrogatepass")
        return b"\n".join(lines)

    return make


def whole(data: bytes) -> Callable[[list[dict]], bytes]:
    return lambda rows: data


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


LINE1_BYTES = len(lines_of(three_rows()).split(b"\n")[0]) + 1
SCORE = "expected an integer score 1..5 (0 or false for a missing one; the reference keeps negative ones), got"
TOTAL = "expected a number 0..5 (the mean of the scores above 0, or 0), got"
TOO_DEEP = "nested more than 100 levels deep (arrays and objects within each other)"
NOT_UNICODE = "not valid Unicode, so it cannot be written as UTF-8"

MALFORMED = [
    # failed
    ("failed-string", change(failed="abc"), ['{f}:2: failed: expected 0.0 or 1.0, got "abc"']),
    ("failed-null", change(failed=None), ["{f}:2: failed: expected 0.0 or 1.0, got null"]),
    ("failed-half", change(failed=0.5), ["{f}:2: failed: expected 0.0 or 1.0, got 0.5"]),
    ("failed-two", change(failed=2), ["{f}:2: failed: expected 0.0 or 1.0, got 2"]),
    ("failed-string-number", change(failed="0.0"), ['{f}:2: failed: expected 0.0 or 1.0, got "0.0"']),
    (
        "failed-nan",
        line2(lambda t: t.replace('"failed": 0.0', '"failed": NaN')),
        ["{f}:2: failed: expected 0.0 or 1.0, got NaN"],
    ),
    (
        "failed-missing",
        change(failed=DROP),
        [
            "{f}:2: failed: missing field: this is a judged.jsonl (line 1 has failed), and every row of one has failed (0.0 or 1.0)"
        ],
    ),
    (
        "failed-missing-in-the-first-row",
        lambda rows: lines_of([{k: v for k, v in rows[0].items() if k != "failed"}, *rows[1:]]),
        [
            "{f}:1: failed: missing field: this is a judged.jsonl (line 1 has total_score), and every row of one has failed (0.0 or 1.0)"
        ],
    ),
    # gen
    ("gen-number", change(gen=5), ["{f}:2: gen: expected a string, got 5"]),
    ("gen-null", change(gen=None), ["{f}:2: gen: expected a string, got null"]),
    ("gen-list", change(gen=["a"]), ["{f}:2: gen: expected a string, got a list"]),
    (
        "gen-missing",
        change(gen=DROP),
        ["{f}:2: gen: missing field: every row of the reference script's files has the generation"],
    ),
    (
        "gen-surrogate",
        line2(lambda t: t.replace('"gen": "', '"gen": "ab\\ud800', 1)),
        [f"{{f}}:2: gen: a lone surrogate \\ud800 at character 2: {NOT_UNICODE}"],
    ),
    (
        "failed-surrogate",
        line2(lambda t: t.replace('"failed": 0.0', '"failed": "\\ud800"')),
        [
            f"{{f}}:2: failed: a lone surrogate \\ud800 at character 0: {NOT_UNICODE}",
            '{f}:2: failed: expected 0.0 or 1.0, got "\\ud800"',
        ],
    ),
    (
        "scored-without-gen",
        change(gen=""),
        ["{f}:2: failed: 0.0, but gen is empty: the reference script marks a row without a generation failed (1.0)"],
    ),
    # strengths, weaknesses and the texts
    ("strengths-number", change(strengths=5), ["{f}:2: strengths: expected a list of strings, got 5"]),
    ("strengths-string", change(strengths="good"), ['{f}:2: strengths: expected a list of strings, got "good"']),
    (
        "strengths-items",
        change(strengths=[1, "ok", None]),
        ["{f}:2: strengths.0: expected a string, got 1", "{f}:2: strengths.2: expected a string, got null"],
    ),
    ("weaknesses-null", change(weaknesses=None), ["{f}:2: weaknesses: expected a list of strings, got null"]),
    ("extracted-output-number", change(extracted_output=5), ["{f}:2: extracted_output: expected a string, got 5"]),
    (
        "judge-raw-output-object",
        change(judge_raw_output={}),
        ["{f}:2: judge_raw_output: expected a string, got an object"],
    ),
    ("error-message-bool", change(error_message=False), ["{f}:2: error_message: expected a string, got false"]),
    # the five scores and total_score
    ("score-fraction", change(format=4.7), [f"{{f}}:2: format: {SCORE} 4.7"]),
    ("score-too-high", change(factuality=9), [f"{{f}}:2: factuality: {SCORE} 9"]),
    ("score-negative-fraction", change(consistency=-1.5), [f"{{f}}:2: consistency: {SCORE} -1.5"]),
    ("score-string", change(realism="4"), [f'{{f}}:2: realism: {SCORE} "4"']),
    (
        "score-huge",  # above 5, which the reference's parser never keeps; a huge negative one is its own
        line2(lambda t: t.replace('"format": 4', '"format": ' + "9" * 50)),
        [f"{{f}}:2: format: {SCORE} {'9' * 40}… (50 digits)"],
    ),
    ("score-null", change(quality=None), [f"{{f}}:2: quality: {SCORE} null"]),
    ("score-nan", line2(lambda t: t.replace('"format": 4', '"format": NaN')), [f"{{f}}:2: format: {SCORE} NaN"]),
    (
        "score-infinity",
        line2(lambda t: t.replace('"format": 4', '"format": Infinity')),
        [f"{{f}}:2: format: {SCORE} Infinity"],
    ),
    (
        "score-missing",
        change(quality=DROP),
        ["{f}:2: quality: missing field: a scored row (failed 0.0) has all five dimension scores, 0 for a missing one"],
    ),
    ("total-string", change(total_score="3.6"), [f'{{f}}:2: total_score: {TOTAL} "3.6"']),
    ("total-too-high", change(total_score=1e308), [f"{{f}}:2: total_score: {TOTAL} 1e+308"]),
    ("total-negative", change(total_score=-2.5), [f"{{f}}:2: total_score: {TOTAL} -2.5"]),
    (
        "total-infinity",
        change(total_score=float("-inf")),
        [f"{{f}}:2: total_score: {TOTAL} -Infinity"],
    ),
    # what json.loads reads but awbench cannot keep
    ("nesting-unreadable", line2(lambda t: '{"gen": ' + "[" * 1000 + "]" * 1000 + "}"), [f"{{f}}:2: {TOO_DEEP}"]),
    ("nesting-in-extra-field", change(meta=nested(150)), [f"{{f}}:2: meta: {TOO_DEEP}"]),
    (
        "duplicate-key",
        line2(lambda t: '{"gen": "first", ' + t[1:]),
        ["{f}:2: gen: duplicate JSON key 'gen': given 2 times in one object"],
    ),
    (
        "duplicate-nested-key",
        line2(lambda t: t[:-1] + ', "meta": {"a": 1, "a": 2}}'),
        ["{f}:2: meta.a: duplicate JSON key 'a': given 2 times in one object"],
    ),
    (
        "surrogate-in-benchmark-field",
        line2(lambda t: t.replace('"prompt": ["', '"prompt": ["\\udc80', 1)),
        [f"{{f}}:2: prompt.0: a lone surrogate \\udc80 at character 0: {NOT_UNICODE}"],
    ),
    # not JSON lines of objects
    ("empty-file", whole(b""), ["{f}: no records"]),
    ("blank-lines-only", whole(b"\n  \n\t\r\n\n"), ["{f}: no records"]),
    ("line-not-an-object", line2(lambda t: "[1, 2]"), ["{f}:2: expected a JSON object, got list"]),
    ("line-a-string", line2(lambda t: '"gen"'), ["{f}:2: expected a JSON object, got str"]),
    (
        "invalid-json",
        line2(lambda t: "{broken"),
        ["{f}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)"],
    ),
    ("torn-line", line2(lambda t: t[:50]), None),  # the loader's message: checked to be one error on line 2
    (
        "invalid-utf8",
        line2(lambda t: b"\xff" + t.encode()),
        [f"{{f}}:2: not valid UTF-8: byte 0xff at byte offset {LINE1_BYTES}"],
    ),
    # not valid benchmark records
    ("turn-idx-string", change(turn_idx="1"), ["{f}:2: turn_idx: expected int, got str"]),
    ("turn-idx-out-of-range", change(turn_idx=3), ["{f}:2: turn_idx: turn_idx 3 is outside 1..len(prompt)=1"]),
    ("task-missing", change(task=DROP), ["{f}:2: task: missing field"]),
    ("prompt-a-string", change(prompt="step"), ["{f}:2: prompt: expected list, got str"]),
    (
        "unknown-domain",
        change(task="agentworld/chess"),
        [f"{{f}}:2: task: unknown domain 'chess'; expected one of {', '.join(DOMAINS)}"],
    ),
    (
        "only-gen",
        change(**{k: DROP for k in ("task", "id", "prompt", "response", "turn_idx")}),
        [
            "{f}:2: task: missing field",
            "{f}:2: id: missing field",
            "{f}:2: prompt: missing field",
            "{f}:2: response: missing field",
            "{f}:2: turn_idx: missing field",
        ],
    ),
    # several rows wrong: every problem is listed
    (
        "several-rows",
        lambda rows: lines_of([{**rows[0], "failed": "x"}, {**rows[1], "gen": 1}, {**rows[2], "strengths": "s"}]),
        [
            '{f}:1: failed: expected 0.0 or 1.0, got "x"',
            "{f}:2: gen: expected a string, got 1",
            '{f}:3: strengths: expected a list of strings, got "s"',
        ],
    ),
]


@pytest.mark.parametrize("make, expected", [pytest.param(m, e, id=i) for i, m, e in MALFORMED])
def test_a_malformed_file_is_refused_with_every_problem_and_imports_nothing(tmp_path, out, make, expected):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(make(three_rows()))
    result = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and (result.exception is None or isinstance(result.exception, SystemExit))
    errors = errors_of(result.output)
    if expected is None:
        assert len(errors) == 2 and errors[0].startswith(f"error: {path}:2: invalid JSON: "), errors
    else:
        lines = [e.format(f=path) for e in expected]
        assert errors == [f"error: {line}" for line in lines] + [REFUSED.format(f=path, n=len(lines))]
    assert "--skip-invalid" not in result.output
    assert_nothing_imported(out)


def test_a_bad_row_anywhere_refuses_the_whole_file_and_a_fixed_file_then_imports(tmp_path, out):
    out.mkdir()
    (out / "other-run").mkdir()
    path = tmp_path / "judged.jsonl"
    rows = three_rows()
    path.write_bytes(lines_of(rows[:2] + [{**rows[2], "failed": None}]))
    first = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert first.exit_code == 2 and f"{path}:3: failed: expected 0.0 or 1.0, got null" in first.output
    assert sorted(p.name for p in out.iterdir()) == ["other-run"]
    path.write_bytes(lines_of(rows))
    second = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert second.exit_code == 0, second.output
    assert sorted(p.name for p in out.iterdir()) == ["other-run", "r"]


ONE_LINE = [
    (
        "json-array-document",
        lambda rows: json.dumps(rows, indent=2).encode(),
        "{f} is a JSON array, not JSON Lines: the reference script writes one JSON object per line",
    ),
    (
        "json-array-on-one-line",
        lambda rows: json.dumps(rows).encode() + b"\n",
        "{f} is a JSON array, not JSON Lines: the reference script writes one JSON object per line",
    ),
    (
        "one-pretty-object",
        lambda rows: json.dumps(rows[0], indent=2).encode(),
        "{f} is one JSON document, not JSON Lines: the reference script writes one JSON object per line",
    ),
    (
        "benchmark-data",
        lambda rows: lines_of([record("os", 1), record("os", 2)]),
        "{f}: no row has a 'gen' field, so this is not the reference script's predictions.jsonl or judged.jsonl (they "
        "add the model's generation, 'gen', to each benchmark record); benchmark data is evaluated with "
        "`awbench run --data {f}`",
    ),
]


@pytest.mark.parametrize("make, message", [pytest.param(m, e, id=i) for i, m, e in ONE_LINE])
def test_a_file_of_another_kind_is_refused_in_one_line(tmp_path, out, make, message):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(make(three_rows()))
    result = invoke("import", path, "--run-name", "r", "--output", out)
    assert result.exit_code == 2, result.output
    assert errors_of(result.output) == [f"error: {message.format(f=path)}"]
    assert_nothing_imported(out)


def test_a_directory_or_a_missing_file_is_refused(tmp_path, out):
    result = invoke("import", tmp_path, "--run-name", "r", "--output", out)
    assert refusal(result) == (2, "not_a_file") and str(tmp_path) in result.stderr
    missing = tmp_path / "nowhere.jsonl"
    result = invoke("import", missing, "--run-name", "r", "--output", out)
    assert refusal(result) == (2, "no_such_file") and str(missing) in result.stderr
    assert_nothing_imported(out)


# --- awbench's own files -------------------------------------------------------------------------------------

AWBENCH_FILES = [
    ("predictions.jsonl", "an awbench run's predictions.jsonl"),
    (f"judges/{RuleJudge.id}/judgments.jsonl", "an awbench run's judgments.jsonl (judges/<judge id>/judgments.jsonl)"),
    ("scores.json", "an awbench scores.json"),
    (f"judges/{RuleJudge.id}/scores.json", "an awbench scores.json"),
    ("run.json", "an awbench run's run.json"),
    (f"judges/{RuleJudge.id}/judge.json", "an awbench run's judge.json (judges/<judge id>/judge.json)"),
]


@pytest.fixture(scope="module")
def awbench_run(tmp_path_factory) -> Path:
    results = tmp_path_factory.mktemp("awbench-run") / "results"
    made = invoke(
        "run",
        "--model",
        "baseline:oracle",
        "--judge",
        "rules",
        "--data",
        "sample",
        "--domains",
        "os",
        "--run-name",
        "o",
        "--output",
        results,
    )
    assert made.exit_code == 0, made.output
    return results / "o"


@pytest.mark.parametrize("inspect_installed", [True, False], ids=["as-installed", "without-inspect_ai"])
@pytest.mark.parametrize("name, kind", AWBENCH_FILES)
def test_an_awbench_run_file_is_recognised_and_refused_in_one_line(
    awbench_run, tmp_path, monkeypatch, name, kind, inspect_installed
):
    """Said whether or not inspect_ai (whose logs are `.json` files too) is installed."""
    if not inspect_installed:
        monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # what `import inspect_ai.log` finds uninstalled
    path = awbench_run / name
    result = invoke("import", path, "--run-name", "x", "--output", tmp_path / "results")
    assert refusal(result) == (2, "not_a_reference_file"), result.output
    assert f"{path} is {kind}" in result.stderr and f"awbench score {awbench_run}," in result.stderr
    assert_nothing_imported(tmp_path / "results")


def test_an_awbench_file_outside_its_run_and_a_rewards_file_are_recognised(awbench_run, tmp_path):
    copy = tmp_path / "predictions.jsonl"
    copy.write_bytes((awbench_run / "predictions.jsonl").read_bytes())
    rewards = tmp_path / "rewards.jsonl"
    rewards.write_text(
        json.dumps({"schema_version": 1, "key": "os/2/1", "domain": "os", "generation": 0, "reward": 4.5}) + "\n"
    )
    for path, kind in (
        (copy, "an awbench run's predictions.jsonl"),
        (rewards, "an awbench rewards file (awbench score --reward)"),
    ):
        result = invoke("import", path, "--run-name", "x", "--output", tmp_path / "results")
        assert refusal(result) == (2, "not_a_reference_file") and f"{path} is {kind}" in result.stderr


# --- Valid files: scored as the reference scores them --------------------------------------------------------


def reference_overall(rows: list[dict]) -> float:
    """The reference script's Overall: the mean total_score of the rows with failed 0.0, on 0..100."""
    totals = [r["total_score"] for r in rows if r.get("failed", 1.0) == 0.0 and r.get("total_score", 0) != 0]
    return (sum(totals) / len(totals) - 1) / 4 * 100


def mixed_rows() -> list[dict]:
    return [
        scored(record("os", 1)),  # 3.6
        scored(record("os", 2), dims={d: 4 for d in DIMENSIONS}),  # 4.0
        judge_failed(record("os", 3)),  # left out
        no_generation(record("os", 4)),  # left out
        scored(record("web", 1), dims={d: 3 for d in DIMENSIONS}),  # 3.0
        scored(record("web", 2), dims={**{d: 2 for d in DIMENSIONS}, "quality": 0}),  # 2.0: quality missing
        scored(record("web", 3, turns=2), dims={d: 5 for d in DIMENSIONS}),  # 5.0
    ]


def test_a_judged_file_scores_as_the_reference_scores_it(tmp_path, out):
    path = tmp_path / "judged.jsonl"
    rows = mixed_rows()
    path.write_bytes(lines_of(rows))
    result = invoke("import", path, "--run-name", "back", "--judge-model", "gpt-x", "--output", out)
    assert result.exit_code == 0, result.output
    assert warnings_of(result.output) == [
        f"warning: {path}:6: quality: 0, the reference's mark of a missing or unusable score: left out of its means "
        "and of the strict score"
    ]
    assert f"imported 7 predictions and 6 judgments into {out / 'back'}" in result.output
    assert (
        "2 rows failed (failed 1.0: 1 without a generation, 1 the judge could not score): left out of the scores, "
        "as the reference leaves them out (failure policy exclude)"
    ) in result.output
    assert "Overall: partial (2 of 7 domains)" in result.output  # no Overall: two domains of seven

    scores = json.loads((out / "back" / "scores.json").read_text())
    assert (scores["overall"], scores["overall_micro"], scores["partial"]) == (None, None, "partial (2 of 7 domains)")
    assert scores["failure_policy"] == "exclude"
    os_, web = scores["domains"]["os"], scores["domains"]["web"]
    assert (os_["n"], os_["failed"], os_["unscored"], os_["scored"]) == (4, 1, 1, 2)
    assert os_["score"] == pytest.approx(70.0) and web["score"] == pytest.approx(100 * (10 / 3 - 1) / 4)
    assert web["dimensions"]["quality"] == pytest.approx(75.0)  # (3 + 5) / 2: the 0 is left out, as the reference does
    reference = scores["reference"]  # what eval.py prints for this file
    assert reference["overall_printed"] == pytest.approx(reference_overall(rows)) == pytest.approx(63.0)
    assert reference["domains"]["os"]["score"] == pytest.approx(70.0) and reference["domains"]["os"]["valid"] == 2
    assert reference["domains"]["web"]["dimensions"]["quality"] == pytest.approx(75.0)
    assert reference["overall"] is None and reference["differing"] == 0

    run = RunStore(out / "back")
    (evaluation,) = run.evaluations()
    info = evaluation.read_info()
    assert info.kind == "llm" and info.settings.model == "gpt-x" and info.described["protocol"] == "imported"
    assert info.described["source"] == str(path.resolve())
    assert run.read_manifest().primary_judge == evaluation.id
    judgments = evaluation.judgments.load()
    assert judgments[("os/3/1", 0)].status == "failed" and judgments[("os/3/1", 0)].error == "Judge scoring failed"
    assert ("os/4/1", 0) not in judgments  # never judged by the reference: no generation
    assert run.predictions.load()[("os/4/1", 0)].error == "No model generation"
    partial = judgments[("web/2/1", 0)]
    assert partial.status == "partial" and set(partial.dimensions) == set(DIMENSIONS) - {"quality"}

    again = invoke("score", "back", "--output", out)  # reloading the samples from the imported file
    assert json.loads((out / "back" / "scores.json").read_text())["domains"] == scores["domains"], again.output
    board = invoke("leaderboard", "--output", out)
    # two domains of seven: the domains are shown, no Overall, marked partial
    assert board.exit_code == 0 and "back" in board.output and "partial (2 of 7 domains)" in board.output, board.output
    assert "58.33" in board.output and "70.00" in board.output and "64.17" not in board.output
    minimum = invoke("score", "back", "--failure-policy", "minimum", "--output", out)
    assert minimum.exit_code == 1  # the row without a generation then scores 0, as awbench's own runs count it
    assert json.loads((out / "back" / "scores.json").read_text())["domains"]["os"]["score"] == pytest.approx(
        (75 + 65 + 0) / 3
    )


@pytest.mark.parametrize(
    "encode",
    [
        pytest.param(lambda data: b"\xef\xbb\xbf" + data, id="byte-order-mark"),
        pytest.param(lambda data: data.replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param(lambda data: data.rstrip(b"\n"), id="no-final-newline"),
        pytest.param(lambda data: b"\n\n" + data.replace(b"\n", b"\n\n"), id="blank-lines"),
    ],
)
def test_encoding_marks_and_line_ends_are_accepted(tmp_path, out, encode):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(encode(lines_of(mixed_rows())))
    result = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert result.exit_code == 0, result.output
    assert json.loads((out / "r" / "scores.json").read_text())["reference"]["overall_printed"] == pytest.approx(63.0)


def test_suspicious_rows_import_with_a_warning_each(tmp_path, out):
    rows = [
        {**scored(record("os", 1)), "total_score": 4.2},  # not the dimensions' mean
        {**judge_failed(record("os", 2)), "total_score": 3.0, "format": 4},  # scores in a failed row
        {**scored(record("os", 3)), "total_score": 3.6000001, "format": 5.0},  # rounding, a whole float
        {**scored(record("os", 4)), "note": "an extra field", "meta": {"run": 1}},  # unknown fields are kept
        scored(record("os", 5), gen="<think>only a plan</think>"),  # nothing left to predict
    ]
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(rows))
    result = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert result.exit_code == 0, result.output
    assert warnings_of(result.output) == [
        f"warning: {path}:1: total_score: 4.2 is not 3.6, the mean of the dimension scores: the dimensions are used",
        f"warning: {path}:2: failed: 1.0, yet the row has scores (total_score, format): they are left out, as the "
        "reference leaves failed rows out",
        f"warning: {path}:5: gen: holds no prediction once its thinking is removed: awbench counts it as a failed "
        "generation, where the reference scored it",
    ]
    scores = json.loads((out / "r" / "scores.json").read_text())
    assert scores["domains"]["os"]["score"] == pytest.approx(65.0)
    assert (scores["domains"]["os"]["unscored"], scores["domains"]["os"]["failed"]) == (1, 1)
    assert json.loads((out / "r" / "run.json").read_text())["config"]["data"]["source"] == str(path.resolve())


def test_an_unknown_judge_is_recorded_as_imported_with_a_note(tmp_path, out):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    result = invoke("import", path, "--run-name", "r", "--output", out)
    assert result.exit_code == 0, result.output
    assert (
        f"the judge that scored {path} is not known: recorded as 'imported'; give it with --judge-model"
        in result.output
    )
    (evaluation,) = RunStore(out / "r").evaluations()
    assert evaluation.read_info().settings.model == "imported"


def test_a_predictions_file_with_an_empty_generation_imports_and_is_judged_later(tmp_path, out):
    rows = [
        {**record("os", 1), "gen": "<think>plan</think><predicted_observation>os 1 output 1</predicted_observation>"},
        {**record("os", 2), "gen": ""},
    ]
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(lines_of(rows))
    result = invoke("import", path, "--run-name", "p", "--judge-model", "j", "--output", out)
    assert result.exit_code == 0, result.output
    assert (
        f"imported 2 predictions and 0 judgments into {out / 'p'}" in result.output and "overall" not in result.output
    )
    assert (
        f"--judge-model j is not used: {path} has no scores (a predictions.jsonl); judge the run with `awbench judge`"
    ) in result.output.splitlines()
    assert not (out / "p" / "judges").exists()
    predictions = RunStore(out / "p").predictions.load()
    assert predictions[("os/1/1", 0)].prediction == "os 1 output 1" and predictions[("os/2/1", 0)].status == "empty"
    judged = invoke("judge", "p", "--judge", "rules", "--output", out)
    assert judged.exit_code == 1, judged.output  # one of two failed: over the tolerated rate, as `score` says
    assert invoke("score", "p", "--output", out).exit_code == 1
    scores = json.loads((out / "p" / "scores.json").read_text())
    assert scores["failure_policy"] == "minimum" and scores["domains"]["os"]["failed"] == 1


# --- No half-made runs ---------------------------------------------------------------------------------------


def test_an_error_while_writing_leaves_nothing_and_does_not_block_the_next_import(tmp_path, out, monkeypatch):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))

    def disk_full(self, manifest):
        raise OSError(28, "No space left on device", str(self.manifest_path))

    with monkeypatch.context() as patch:
        patch.setattr(RunStore, "write_manifest", disk_full)
        result = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert result.exit_code == 2 and "No space left on device" in result.output and "Traceback" not in result.output
    assert not out.exists()  # made for the import, removed with the staging directory
    retry = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert retry.exit_code == 0, retry.output
    assert [p.name for p in out.iterdir()] == ["r"]


def test_an_existing_run_is_replaced_only_with_overwrite(tmp_path, out):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    assert invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out).exit_code == 0
    again = invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out)
    assert refusal(again) == (2, "run_exists")
    path.write_bytes(lines_of(three_rows()[:2]))
    replaced = invoke("import", path, "--run-name", "r", "--judge-model", "j2", "--output", out, "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert [p.name for p in out.iterdir()] == ["r"]  # nothing left aside
    assert len(RunStore(out / "r").predictions.load()) == 2
    assert RunStore(out / "r").evaluations()[0].read_info().settings.model == "j2"


def test_a_run_in_use_is_not_replaced(tmp_path, out):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    assert invoke("import", path, "--run-name", "r", "--judge-model", "j", "--output", out).exit_code == 0
    before = (out / "r" / "run.json").read_bytes()
    with RunStore(out / "r").locked():  # as a running `awbench judge r` holds it
        result = invoke("import", path, "--run-name", "r", "--judge-model", "j2", "--output", out, "--overwrite")
    assert refusal(result) == (2, "run_locked")
    assert (out / "r" / "run.json").read_bytes() == before
    assert [p.name for p in out.iterdir()] == ["r"]


def test_a_directory_that_is_not_a_run_is_never_replaced(tmp_path, out):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    (out / "r").mkdir(parents=True)
    (out / "r" / "notes.txt").write_text("mine")
    result = invoke("import", path, "--run-name", "r", "--output", out, "--overwrite")
    assert refusal(result) == (2, "not_a_run") and str(out / "r") in result.stderr
    assert [p.name for p in (out / "r").iterdir()] == ["notes.txt"] and len(list(out.iterdir())) == 1
    (out / "r" / "notes.txt").unlink()  # an empty directory is taken
    assert invoke("import", path, "--run-name", "r", "--output", out).exit_code == 0


@pytest.mark.parametrize("name", ["a/b", "..", ".hidden", ""])
def test_a_run_name_must_be_a_plain_name(tmp_path, out, name):
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    result = invoke("import", path, "--run-name", name, "--output", out)
    assert refusal(result) == (2, "bad_option") and result.stderr.startswith("error: --run-name: ")
    assert_nothing_imported(out)


@pytest.mark.parametrize("name", ["a\nb", "a\tb", "a\x7fb", "a\x85b", "a\u2028b", "a\u2029b"])
def test_a_run_name_must_be_printable(tmp_path, out, name):
    """The same check as `awbench run --run-name` (awbench.config.check_run_name)."""
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(three_rows()))
    result = invoke("import", path, "--run-name", name, "--output", out)
    assert refusal(result) == (2, "bad_option") and f"U+{ord(name[1]):04X} at position 1" in result.stderr
    assert_nothing_imported(out)


# --- Export --------------------------------------------------------------------------------------------------


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line]


def test_export_of_a_rules_only_run_writes_predictions_and_says_why_not_judged(awbench_run, tmp_path):
    official = tmp_path / "official"
    result = invoke("export", awbench_run, "--official", official)
    assert result.exit_code == 0, result.output
    assert f"wrote {official / 'predictions.jsonl'}" in result.output
    assert (
        "judged.jsonl not written: run o has no LLM-judge scores, and the reference format holds five rubric "
        "scores per sample (rule scores have none)"
    ) in result.output.splitlines()
    assert sorted(p.name for p in official.iterdir()) == ["predictions.jsonl"]
    rows = read_rows(official / "predictions.jsonl")
    assert all(
        set(row)
        == {"task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns", "gen"}
        for row in rows
    )
    assert all(row["gen"] == row["response"][row["turn_idx"] - 1] for row in rows)  # the oracle

    (official / "judged.jsonl").write_text("{}\n")  # from something else
    result = invoke("export", awbench_run, "--official", official)
    assert (
        f"{official / 'judged.jsonl'} was left as it was: it is not from this export; remove it, so that it is "
        "not read with the new predictions.jsonl"
    ) in result.output.splitlines()
    assert (official / "judged.jsonl").read_text() == "{}\n"


def test_a_prediction_stored_once_is_exported_whole_as_gen(awbench_run, tmp_path):
    """The oracle's answers are their own predictions, so predictions.jsonl leaves `raw` out; the reference's
    `gen` (the raw answer) is the prediction then, and a run written with both texts exports the same."""
    lines = (awbench_run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert lines and all("raw" not in json.loads(line) for line in lines)
    truths = {f"{r['id']}/{r['turn_idx']}": r["response"][-1] for r in read_rows(sample_dir() / "os_test.jsonl")}

    def exported_gens(run: Path, official: Path) -> dict[str, str]:
        assert invoke("export", run, "--official", official).exit_code == 0
        return {f"{r['id']}/{r['turn_idx']}": r["gen"] for r in read_rows(official / "predictions.jsonl")}

    assert exported_gens(awbench_run, tmp_path / "new") == truths
    older = tmp_path / "results" / "older"
    shutil.copytree(awbench_run, older)
    with_both = [json.dumps({**json.loads(line), "raw": json.loads(line)["prediction"]}) for line in lines]
    (older / "predictions.jsonl").write_text("\n".join(with_both) + "\n", encoding="utf-8")
    assert exported_gens(older, tmp_path / "old") == truths


def test_failed_generations_export_what_the_model_answered_as_gen(awbench_run, tmp_path):
    """The reference's inference stage keeps any answer the model gave, cut off, stopped by the content filter or
    empty once its thinking is removed; only a request that got no answer has gen "" (and is not judged by its
    judge stage)."""
    run = tmp_path / "results" / "failures"
    shutil.copytree(awbench_run, run)
    records = [json.loads(line) for line in (run / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    answers = [
        ("truncated", "<think>plan</think>half of an obser", "half of an obser"),
        ("empty", "<think>only a plan</think>  ", ""),
        ("error", "<predicted_observation>filtered</predicted_observation>", ""),  # finish_reason content_filter
        ("error", None, ""),
    ]
    changed = {}
    for record, (status, raw, prediction) in zip(records, answers):
        record.update(status=status, raw=raw, prediction=prediction, error="why")
        changed[f"{record['key'].split('/', 1)[1]}"] = raw or ""
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert invoke("export", run, "--official", tmp_path / "official").exit_code == 0
    gens = {f"{r['id']}/{r['turn_idx']}": r["gen"] for r in read_rows(tmp_path / "official" / "predictions.jsonl")}
    assert {key: gens[key] for key in changed} == changed


def test_export_onto_a_file_or_into_a_run_is_refused(awbench_run, tmp_path):
    target = tmp_path / "official"
    target.write_text("keep me")
    result = invoke("export", awbench_run, "--official", target)
    assert refusal(result) == (2, "not_a_directory") and f"--official {target}" in result.stderr
    assert target.read_text() == "keep me"
    before = (awbench_run / "predictions.jsonl").read_bytes()
    result = invoke("export", awbench_run, "--official", awbench_run)
    assert refusal(result) == (2, "output_in_run")
    assert (awbench_run / "predictions.jsonl").read_bytes() == before
    beneath = invoke("export", awbench_run, "--official", target / "sub")
    assert beneath.exit_code == 2 and "Traceback" not in beneath.output and str(target / "sub") in beneath.output


def test_import_then_export_gives_back_the_reference_rows(tmp_path, out):
    rows = mixed_rows()
    rows[0]["extra"] = {"kept": True}
    path = tmp_path / "judged.jsonl"
    path.write_bytes(lines_of(rows))
    assert invoke("import", path, "--run-name", "back", "--judge-model", "j", "--output", out).exit_code == 0
    official = tmp_path / "official"
    result = invoke("export", "back", "--official", official, "--output", out)
    assert result.exit_code == 0, result.output
    assert "2 of 7 samples have no score from judge" in result.output
    exported = read_rows(official / "judged.jsonl")
    compared = (
        "gen",
        "failed",
        "total_score",
        *DIMENSIONS,
        "strengths",
        "weaknesses",
        "judge_raw_output",
        "error_message",
    )
    for original, written in zip(rows, exported):
        assert {k: written.get(k) for k in compared} == {k: original.get(k) for k in compared}, original["id"]
        assert {k: v for k, v in written.items() if k not in compared and k != "extracted_output"} == {
            k: v for k, v in original.items() if k not in compared and k != "extracted_output"
        }
    assert all(isinstance(row[d], int) for row in exported if row["failed"] == 0.0 for d in DIMENSIONS)
    predictions = read_rows(official / "predictions.jsonl")
    assert all(
        set(row) - {"extra"}
        == {"task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns", "gen"}
        for row in predictions
    )
    assert (
        invoke(
            "import", official / "judged.jsonl", "--run-name", "again", "--judge-model", "j", "--output", out
        ).exit_code
        == 0
    )
    first, second = (json.loads((out / name / "scores.json").read_text()) for name in ("back", "again"))
    assert second["overall"] == pytest.approx(first["overall"]) and second["domains"] == first["domains"]


def test_export_of_an_llm_run_writes_only_what_the_format_holds(tmp_path):
    data = write_data(tmp_path / "data", {"mcp": [2, 1], "search": [1, 1]})
    grades: dict[str, Grade] = {
        "mcp/m0/1": 4,
        "mcp/m0/2": [{d: 5 for d in DIMENSIONS}, {d: 2 for d in DIMENSIONS}],
        "mcp/m1/1": None,
    }  # search: no predictions at all
    store = make_run(tmp_path / "results", "llm", data, grades)
    official = tmp_path / "official"
    result = invoke("export", store.path, "--official", official)
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if not line.startswith("wrote ")]
    assert notes == [
        "3 of 5 samples have no score from judge llm-llm: written as failed (failed 1.0) with the reason in "
        "error_message",
        "judged.jsonl holds one verdict per sample, the first scored one (judge llm-llm gave up to 2): the reference "
        "format holds one; awbench's scores are their mean",
    ]
    rows = {f"{r['task']}/{r['id']}/{r['turn_idx']}": r for r in read_rows(official / "judged.jsonl")}
    assert rows["mcp/m0/2"]["format"] == 5 and rows["mcp/m0/2"]["total_score"] == 5  # the first verdict, not 3.5
    assert rows["mcp/m0/1"]["total_score"] == 4 and rows["mcp/m0/1"]["failed"] == 0.0
    assert rows["mcp/m1/1"] == {
        **rows["mcp/m1/1"],
        "gen": "",
        "failed": 1.0,
        "error_message": "No model generation (error: HTTP 500)",
    }
    assert "total_score" not in rows["mcp/m1/1"]
    assert rows["search/s0/1"]["error_message"] == "No model generation (the run has no prediction for this sample)"


def test_export_of_k_generations_writes_generation_0_with_a_note(tmp_path):
    results = tmp_path / "results"
    made = invoke(
        "run",
        "--model",
        "baseline:oracle",
        "--judge",
        "rules",
        "--data",
        "sample",
        "--domains",
        "os",
        "--generations",
        "2",
        "--run-name",
        "k",
        "--output",
        results,
    )
    assert made.exit_code == 0, made.output
    official = tmp_path / "official"
    result = invoke("export", "k", "--official", official, "--output", results)
    assert result.exit_code == 0, result.output
    assert (
        "only generation 0 of each sample's 2 generations was exported: the reference format holds one per sample"
    ) in result.output.splitlines()
    rows = read_rows(official / "predictions.jsonl")
    assert len(rows) == len(RunStore(results / "k").predictions.load()) // 2

"""Text safety and clear errors under fuzzing: the four places where outside text enters awbench.

- the dataset loader (`read_source`, `load_samples`) on generated JSONL files: documented error `DataError`
  (a source that cannot be used at all); everything wrong with a record is a `Problem`, never an exception;
- the generation parser (`extract_prediction`, `prediction_record`): pure, documented to never raise;
- the verdict parser (`parse_verdict`, `verdict_record`): documented to never raise;
- the importer (`import_reference`) on generated reference-format files: documented errors `DataError` and
  `StoreError`.

And whatever they produce can be written: `model_dump_json()` works on every record (a lone surrogate, which
a JSON `\\ud800` escape decodes to, is the usual reason it would not).

Examples are derandomized (the same inputs on every run, so CI is stable) and bounded (EXAMPLES). The
`edge_case` targets are inputs that once made the loader or the importer raise (deep nesting, huge integers,
lone surrogates, fields of the wrong type): each is a test of its own.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from awbench.config import DataSettings
from awbench.data.dataset import load_samples, read_source
from awbench.data.problems import DataError, Problem
from awbench.domains import DIMENSIONS, DOMAINS
from awbench.interop.reference import import_reference
from awbench.judging.llm.verdict_parsing import parse_verdict
from awbench.judging.llm.verdict_records import verdict_record
from awbench.records import Generation, PredictionRecord, Usage, VerdictRecord
from awbench.run.store import StoreError
from awbench.world_model.parsing import extract_prediction
from awbench.world_model.predictions import prediction_record

pytestmark = pytest.mark.slow  # fuzzing: thousands of generated inputs

EXAMPLES = {
    "loader": 150,
    "extract": 500,
    "prediction_record": 300,
    "parse_verdict": 400,
    "verdict_record": 200,
    "importer": 80,
    "edge_case": 20,
}


def fuzz(target: str):
    return settings(
        max_examples=EXAMPLES[target],
        database=None,
        deadline=None,
        derandomize=True,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# --- Strategies -------------------------------------------------------------------------------------------------

SURROGATE = st.integers(0xD800, 0xDFFF).map(chr)


def texts(max_size: int = 30, surrogates: bool = False) -> st.SearchStrategy[str]:
    """Any text (st.text never makes lone surrogates; with `surrogates`, some are mixed in)."""
    if not surrogates:
        return st.text(max_size=max_size)
    return st.lists(st.one_of(st.characters(), SURROGATE), max_size=max_size).map("".join)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | texts(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts(8), children, max_size=4),
    max_leaves=12,
)


def sometimes_wrong(good: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly a value of the right type, sometimes any JSON value."""
    return st.one_of(good, good, good, JSON_VALUES)


TASKS = st.sampled_from([*DOMAINS, "OS", "terminal_bench", "swe-bench", "nope"])
RECORDS = st.fixed_dictionaries(
    {
        "task": sometimes_wrong(TASKS),
        "id": sometimes_wrong(st.one_of(st.integers(), texts(8))),
        "prompt": sometimes_wrong(st.lists(texts(), min_size=1, max_size=3)),
        "response": sometimes_wrong(st.lists(texts(), min_size=1, max_size=3)),
        "turn_idx": sometimes_wrong(st.integers(-1, 4)),
    },
    optional={
        "current_prompt": sometimes_wrong(texts()),
        "system_str": sometimes_wrong(texts()),
        "total_turns": sometimes_wrong(st.integers(0, 5)),
        "gen": JSON_VALUES,
        "extra": JSON_VALUES,
    },
)


def torn(data: bytes, cut: int) -> bytes:
    return data[: cut % (len(data) + 1)]


LINES = st.one_of(
    RECORDS.map(lambda r: json.dumps(r, ensure_ascii=False).encode()),
    RECORDS.map(lambda r: json.dumps(r).encode()),  # \\uXXXX escapes
    st.tuples(RECORDS.map(lambda r: json.dumps(r).encode()), st.integers(0, 200)).map(lambda t: torn(*t)),
    JSON_VALUES.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=60),
    texts().map(str.encode),
)
FILES = st.tuples(st.lists(LINES, max_size=6), st.sampled_from([b"\n", b"\r\n"]), st.booleans(), st.booleans()).map(
    lambda t: (b"\xef\xbb\xbf" if t[2] else b"") + t[1].join(t[0]) + (b"\n" if t[3] else b"")
)
LAYOUTS = st.sampled_from(["data.jsonl", *(f"{d}_test.jsonl" for d in DOMAINS[:3])])


def load_everything(source: str) -> None:
    """Read, check every record can be written, then load with --skip-invalid: only DataError may come out."""
    try:
        samples, problems = read_source(source)
    except DataError:
        return
    assert all(isinstance(p, Problem) and str(p) for p in problems)
    for sample in samples:
        sample.record.model_dump_json()
        assert sample.key and sample.hash
    try:
        loaded = load_samples(DataSettings(source=source, skip_invalid=True))
    except DataError:
        return
    assert len(loaded.samples) <= len(samples) and loaded.fingerprint


def write_source(layout: str, data: bytes, root: Path) -> str:
    if layout == "data.jsonl":
        (root / layout).write_bytes(data)
        return str(root / layout)
    (root / "dir").mkdir()
    (root / "dir" / layout).write_bytes(data)
    return str(root / "dir")


# --- The dataset loader -----------------------------------------------------------------------------------------


@fuzz("loader")
@given(layout=LAYOUTS, data=FILES)
@example(
    layout="os_test.jsonl",
    data=b'{"task": "web", "id": 1, "prompt": ["a"], "response": ["b"], "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 1}\n',
)
@example(layout="data.jsonl", data=b"\xef\xbb\xbf\xff\xfe\n{\n[1]\nnull\n")
def test_loader_reports_problems_and_never_raises_anything_else(layout: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as root:
        load_everything(write_source(layout, data, Path(root)))


def nested(depth: int, opener: str) -> bytes:
    closer = {"[": "]", '{"a": ': "}"}[opener]
    return (
        '{"task": "os", "id": 1, "prompt": ["a"], "response": ["b"], "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 1, "x": '
        + opener * depth
        + "1"
        + closer * depth
        + "}\n"
    ).encode()


@fuzz("edge_case")
@given(depth=st.integers(1_000, 40_000), opener=st.sampled_from(["[", '{"a": ']))
@example(depth=100_000, opener="[")
def test_loader_on_deeply_nested_lines(depth: int, opener: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        load_everything(write_source("data.jsonl", nested(depth, opener), Path(root)))


@fuzz("edge_case")
@given(digits=st.integers(4_301, 20_000), field=st.sampled_from(["id", "turn_idx", "extra"]))
@example(digits=5_000, field="id")
def test_loader_on_huge_integers(digits: int, field: str) -> None:
    record = '{"task": "os", "id": 1, "prompt": ["a"], "response": ["b"], "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 1, "extra": 0}'
    line = record.replace(f'"{field}": 1' if field != "extra" else '"extra": 0', f'"{field}": {"7" * digits}')
    with tempfile.TemporaryDirectory() as root:
        load_everything(write_source("data.jsonl", line.encode() + b"\n", Path(root)))


@fuzz("edge_case")
@given(
    field=st.sampled_from(["id", "prompt", "response", "system_str", "current_prompt"]),
    text=texts(10),
    surrogate=SURROGATE,
)
@example(field="id", text="", surrogate="\ud800")
def test_loader_on_lone_surrogates(field: str, text: str, surrogate: str) -> None:
    value = text + surrogate
    record = {
        "task": "os",
        "id": 1,
        "prompt": ["a"],
        "response": ["b"],
        "current_prompt": "a",
        "system_str": "",
        "turn_idx": 1,
        "total_turns": 1,
    }
    record[field] = [value] if field in ("prompt", "response") else value
    if field == "current_prompt":
        record["prompt"] = [value]
    with tempfile.TemporaryDirectory() as root:
        load_everything(write_source("data.jsonl", json.dumps(record).encode() + b"\n", Path(root)))


# --- The generation parser --------------------------------------------------------------------------------------

GENERATION_PIECES = [
    "<think>",
    "</think>",
    "<THINK>",
    "</Think>",
    "<predicted_observation>",
    "</predicted_observation>",
    "<PREDICTED_OBSERVATION>",
    "**Environment Observation:**",
    "\n",
    "```",
    " ",
    "<final_evaluation>",
]
GENERATIONS = st.lists(st.one_of(st.sampled_from(GENERATION_PIECES), texts(20, surrogates=True)), max_size=12).map(
    "".join
)
SAMPLE = read_source("sample")[0][0]


@fuzz("extract")
@given(text=GENERATIONS)
@example(text="<think>" * 500 + "x")
@example(text="</predicted_observation><predicted_observation>")
def test_extract_prediction_never_raises(text: str) -> None:
    prediction = extract_prediction(text)
    assert isinstance(prediction, str) and prediction == prediction.strip()
    if "<" not in text and ">" not in text:
        assert prediction == text.strip()


@fuzz("prediction_record")
@given(
    text=st.none() | GENERATIONS,
    reasoning=st.none() | texts(20, surrogates=True),
    finish_reason=st.none() | st.sampled_from(["stop", "length", "content_filter", ""]) | texts(8, surrogates=True),
    error=st.none() | texts(30, surrogates=True),
    note=st.none() | texts(20, surrogates=True),
    transient=st.booleans(),
    overlength=st.booleans(),
    generation=st.integers(0, 3),
    dropped=st.integers(0, 5),
    tokens=st.none() | st.integers(0, 10**6),
)
@example(
    text="ok",
    reasoning=None,
    finish_reason="st\ud800op",
    error=None,
    note=None,
    transient=False,
    overlength=False,
    generation=0,
    dropped=0,
    tokens=None,
)
@example(
    text="",
    reasoning=None,
    finish_reason="stop",
    error=None,
    note="empty \udfff",
    transient=False,
    overlength=False,
    generation=0,
    dropped=0,
    tokens=None,
)
def test_prediction_record_is_always_writable(
    text, reasoning, finish_reason, error, note, transient, overlength, generation, dropped, tokens
) -> None:
    produced = Generation(
        key=SAMPLE.key,
        generation=generation,
        text=text,
        reasoning=reasoning,
        finish_reason=finish_reason,
        error=error,
        transient=transient,
        note=note,
        overlength=overlength,
        dropped_turns=dropped,
        usage=Usage(prompt_tokens=tokens),
        latency_s=0.1,
    )
    record = prediction_record(SAMPLE, produced)
    assert PredictionRecord.model_validate_json(record.model_dump_json()) == record
    if overlength:
        assert record.status == "overlength"
    elif error:
        assert record.status == "error"
    assert not record.transient or record.status == "error"
    assert record.status != "ok" or (record.prediction.strip() and not record.error)
    assert record.failed == (record.status != "ok")


# --- The verdict parser -----------------------------------------------------------------------------------------

SCORE_VALUES = st.one_of(
    st.integers(-3, 9), st.floats(), st.sampled_from(["4/5", "five", "3.5", " 2", ""]), JSON_VALUES
)
VERDICT_OBJECTS = st.fixed_dictionaries(
    {
        "scores": st.one_of(
            st.dictionaries(st.sampled_from([*DIMENSIONS, "Format", "QUALITY", "other"]), SCORE_VALUES, max_size=6),
            JSON_VALUES,
        )
    },
    optional={"strengths": JSON_VALUES, "weaknesses": JSON_VALUES},
).map(json.dumps)
VERDICT_PIECES = [
    "<final_evaluation>",
    "</final_evaluation>",
    "<think>",
    "</think>",
    "```json\n",
    "```\n",
    "\n```",
    "{",
    "}",
    '"scores": ',
    '{"format": 5}',
    ": ",
    ", ",
    "> ",
    "\n",
    "...",
]
VERDICTS = st.lists(
    st.one_of(st.sampled_from(VERDICT_PIECES), VERDICT_OBJECTS, texts(20, surrogates=True)), max_size=10
).map("".join)


@fuzz("parse_verdict")
@given(raw=VERDICTS, prediction=st.one_of(texts(40, surrogates=True), VERDICTS))
@example(raw='<final_evaluation>{"scores": {"format": ' + "9" * 5000 + "}}", prediction="")
@example(raw="{" * 10_000, prediction="{" * 10_000)
def test_parse_verdict_never_raises(raw: str, prediction: str) -> None:
    parsed = parse_verdict(raw, prediction)
    assert parsed.status in ("complete", "partial", "unparsed")
    assert set(parsed.scores) <= set(DIMENSIONS)
    assert all(type(v) is int and 1 <= v <= 5 for v in parsed.scores.values())
    assert (parsed.status == "complete") == (set(parsed.scores) == set(DIMENSIONS))
    assert parsed.status == "complete" or parsed.reason


@fuzz("verdict_record")
@given(
    content=st.none() | VERDICTS,
    reasoning=st.none() | texts(30, surrogates=True),
    finish_reason=st.none() | st.sampled_from(["stop", "length"]) | texts(6, surrogates=True),
    seed=st.none() | st.integers(0, 2**31 - 1),
    prediction=texts(40, surrogates=True),
)
def test_verdict_record_is_always_writable(content, reasoning, finish_reason, seed, prediction) -> None:
    record = verdict_record(content, reasoning, finish_reason, seed, prediction)
    assert VerdictRecord.model_validate_json(record.model_dump_json()) == record
    assert finish_reason != "length" or record.status == "truncated"


# --- The importer -----------------------------------------------------------------------------------------------

BENCHMARK_ROW = {
    "task": "os",
    "id": 1,
    "prompt": ["ls"],
    "response": ["a.txt"],
    "current_prompt": "ls",
    "system_str": "",
    "turn_idx": 1,
    "total_turns": 1,
}
NUMBERS = st.one_of(st.integers(-2, 8), st.floats(), st.booleans())
TEXT_LISTS = st.one_of(st.none(), st.lists(texts(15), max_size=3))
JUDGED_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "total_score": NUMBERS,
        **{d: NUMBERS for d in DIMENSIONS},
        "failed": st.sampled_from([0.0, 1.0, 0, 1, True]),
        "strengths": TEXT_LISTS,
        "weaknesses": TEXT_LISTS,
        "extracted_output": texts(),
        "judge_raw_output": st.none() | texts(),
        "error_message": st.none() | texts(),
    },
)
REFERENCE_ROWS = st.lists(
    st.tuples(st.integers(1, 3), st.integers(1, 2), st.one_of(texts(40), st.just("")), JUDGED_FIELDS),
    min_size=1,
    max_size=4,
)


def reference_file(rows: list[tuple[int, int, str, dict]], root: Path, ensure_ascii: bool = False) -> Path:
    lines = []
    for i, (turns, turn, gen, judged) in enumerate(rows):
        turn = min(turn, turns)
        record = {
            "task": "os",
            "id": i,
            "prompt": [f"cmd {t}" for t in range(turns)],
            "response": [f"out {t}" for t in range(turns)],
            "turn_idx": turn,
        }
        lines.append(json.dumps({**record, "gen": gen, **judged}, ensure_ascii=ensure_ascii))
    path = root / "judged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def import_everything(path: Path, root: Path) -> None:
    """Import twice (the second is refused: the run exists), then score: only DataError and StoreError may come out."""
    from awbench.run import pipeline

    try:
        store = import_reference(path, "imported", root / "results", None, None).store
    except (DataError, StoreError):
        return
    for record in store.predictions.load().values():
        record.model_dump_json()
    for evaluation in store.evaluations():
        for judgment in evaluation.judgments.load().values():
            judgment.model_dump_json()
    pipeline.score(store, pipeline.run_samples(store))
    with pytest.raises(StoreError, match="exists already"):
        import_reference(path, "imported", root / "results", None, None)


@fuzz("importer")
@given(rows=REFERENCE_ROWS)
@example(rows=[(1, 1, "", {"failed": 1.0, "error_message": None})])
@example(rows=[(2, 2, "<think>x</think>out 1", {d: 4 for d in DIMENSIONS} | {"failed": 0.0, "total_score": 4.0})])
def test_importer_raises_only_documented_errors_on_well_typed_files(rows) -> None:
    with tempfile.TemporaryDirectory() as root:
        import_everything(reference_file(rows, Path(root)), Path(root))


@fuzz("importer")
@given(data=FILES)
def test_importer_raises_only_documented_errors_on_arbitrary_files(data: bytes) -> None:
    """Files that are not valid benchmark data at all: the loader's DataError, or the importer's own."""
    if b'"gen"' in data:
        return  # rows with a `gen` field of any type are the edge cases below
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "judged.jsonl").write_bytes(data)
        import_everything(Path(root) / "judged.jsonl", Path(root))


def one_row(**fields: object) -> list[tuple[int, int, str, dict]]:
    gen = fields.pop("gen", "prediction")
    return [(1, 1, gen, {"failed": 0.0, **{d: 3 for d in DIMENSIONS}, **fields})]  # type: ignore[list-item]


@fuzz("edge_case")
@given(
    field=st.sampled_from(["gen", "judge_raw_output", "error_message", "strengths"]),
    value=st.one_of(
        st.integers(),
        st.lists(st.integers(), min_size=1, max_size=2),
        st.dictionaries(texts(3), st.integers(), min_size=1),
    ),
)
@example(field="gen", value=5)
def test_importer_on_fields_of_the_wrong_type(field: str, value: object) -> None:
    if field == "strengths":
        value = [value]
    extra = {"failed": 1.0} if field == "error_message" else {}
    with tempfile.TemporaryDirectory() as root:
        import_everything(reference_file(one_row(**{field: value}, **extra), Path(root)), Path(root))


@fuzz("edge_case")
@given(value=st.text(st.characters(categories=["L"]), min_size=1, max_size=8))
@example(value="no")
def test_importer_on_a_failed_flag_that_is_not_a_number(value: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        import_everything(reference_file(one_row(failed=value), Path(root)), Path(root))


@fuzz("edge_case")
@given(field=st.sampled_from(["strengths", "weaknesses"]), value=st.one_of(st.integers(1), st.floats(min_value=0.5)))
@example(field="strengths", value=5)
def test_importer_on_strengths_that_are_a_number(field: str, value: object) -> None:
    with tempfile.TemporaryDirectory() as root:
        import_everything(reference_file(one_row(**{field: value}), Path(root)), Path(root))


@fuzz("edge_case")
@given(
    field=st.sampled_from(["strengths", "weaknesses", "judge_raw_output", "error_message"]),
    text=texts(8),
    surrogate=SURROGATE,
)
@example(field="strengths", text="", surrogate="\ud800")
def test_importer_on_lone_surrogates(field: str, text: str, surrogate: str) -> None:
    value = [text + surrogate] if field in ("strengths", "weaknesses") else text + surrogate
    extra = {"failed": 1.0} if field == "error_message" else {}
    with tempfile.TemporaryDirectory() as root:
        path = reference_file(one_row(**{field: value}, **extra), Path(root), ensure_ascii=True)  # as \\u escapes
        import_everything(path, Path(root))

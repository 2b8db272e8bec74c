"""Benchmark data: reading sources (with the Hub), validation messages, keys, selection, fingerprints and data info."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from awbench.analysis.data_info import data_info
from awbench.config import DataSettings
from awbench.data.dataset import load_samples, read_source, resolve_source
from awbench.data.problems import DataError, Problem
from awbench.data.selection import select
from awbench.domains import DOMAINS, PUBLISHED_STATS
from awbench.records import BenchmarkRecord, Sample
from awbench.resources import sample_dir


def rec(domain: str = "mcp", id: Any = 1, turn_idx: Any = 1, turns: int = 2, **fields: Any) -> dict:
    prompt = [f"act {id} {i}" for i in range(1, turns + 1)]
    record = {
        "task": domain,
        "id": id,
        "prompt": prompt,
        "response": [f"obs {id} {i}" for i in range(1, turns + 1)],
        "current_prompt": prompt[turn_idx - 1] if isinstance(turn_idx, int) and 1 <= turn_idx <= turns else "",
        "system_str": f"system {domain}",
        "turn_idx": turn_idx,
        "total_turns": turns,
    }
    record.update(fields)
    return record


def write(path: Path, *lines: dict | str | bytes) -> Path:
    """Each line as given: a dict as JSON (non-ASCII kept raw), a str or bytes verbatim."""
    raw = []
    for line in lines:
        if isinstance(line, dict):
            line = json.dumps(line, ensure_ascii=False)
        raw.append(line if isinstance(line, bytes) else line.encode())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(part + b"\n" for part in raw))
    return path


def problems_of(path: Path) -> list[str]:
    return [str(p) for p in read_source(str(path))[1]]


def sample(domain: str, id: int | str, turn_idx: int = 1, turns: int = 2) -> Sample:
    record = BenchmarkRecord.model_validate(rec(domain, id, turn_idx, turns))
    return Sample(key=record.base_key(), record=record, origin="test")


# --- Problem ---------------------------------------------------------------------------------------------


def test_problem_str_omits_missing_parts():
    assert str(Problem("data/x_test.jsonl", 12, "turn_idx", "bad")) == "data/x_test.jsonl:12: turn_idx: bad"
    assert str(Problem("data/x_test.jsonl", None, None, "no records")) == "data/x_test.jsonl: no records"
    assert str(Problem("f", 3, None, "m", "warning")) == "f:3: m"


# --- One message per kind of bad input -------------------------------------------------------------------

BAD_LINES = [
    pytest.param(
        '{"task": "mcp",', "1: invalid JSON: Expecting property name enclosed in double quotes (column 16)", id="json"
    ),
    pytest.param({k: v for k, v in rec().items() if k != "id"}, "1: id: missing field", id="missing-field"),
    pytest.param(rec(turn_idx="3"), "1: turn_idx: expected int, got str", id="turn_idx-str"),
    pytest.param(rec(prompt="act"), "1: prompt: expected list, got str", id="prompt-not-list"),
    pytest.param(rec(prompt=["a", 2]), "1: prompt.1: expected str, got int", id="prompt-item"),
    pytest.param(rec(id=1.5), "1: id: expected int or str, got float", id="id-union"),
    pytest.param(rec(system_str=None), "1: system_str: expected str, got null", id="null"),
    pytest.param(rec(turn_idx=0), "1: turn_idx: turn_idx 0 is outside 1..len(prompt)=2", id="turn_idx-0"),
    pytest.param(rec(turn_idx=3), "1: turn_idx: turn_idx 3 is outside 1..len(prompt)=2", id="turn_idx-big"),
    pytest.param(
        rec(turn_idx=2, response=["only one"]),
        "1: response: response has 1 turns, fewer than turn_idx 2",
        id="response-short",
    ),
    pytest.param(
        rec(domain="cooking"),
        "1: task: unknown domain 'cooking'; expected one of mcp, search, terminal, swe, android, web, os",
        id="unknown-domain",
    ),
    pytest.param("[1, 2]", "1: expected a JSON object, got list", id="not-an-object"),
    pytest.param(
        rec(domain="android"), "1: task: domain 'android' does not match the file name mcp_test.jsonl", id="mismatch"
    ),
]


@pytest.mark.parametrize(("line", "expected"), BAD_LINES)
def test_bad_line_message(tmp_path, line, expected):
    path = write(tmp_path / "mcp_test.jsonl", line)
    samples, problems = read_source(str(path))
    assert samples == []
    assert [str(p) for p in problems] == [f"{path}:{expected}"]
    assert problems[0].severity == "error"


def test_non_utf8_bytes_name_line_and_offset(tmp_path):
    first = json.dumps(rec(id=1)).encode()
    path = write(tmp_path / "mcp_test.jsonl", first, b'{"task": "mcp\xff"}')
    offset = len(first) + 1 + len(b'{"task": "mcp')
    assert problems_of(path) == [f"{path}:2: not valid UTF-8: byte 0xff at byte offset {offset}"]


def test_empty_file_has_no_records(tmp_path):
    path = tmp_path / "mcp_test.jsonl"
    path.write_text("\n  \n")
    assert problems_of(path) == [f"{path}: no records"]


def test_prefixed_task_uses_last_segment(tmp_path):
    path = write(tmp_path / "terminal_test.jsonl", rec("benchmarks/terminal", id=4))
    samples, problems = read_source(str(path))
    assert [s.key for s in samples] == ["terminal/4/1"] and problems == []


def test_every_problem_is_reported_and_valid_records_kept(tmp_path):
    path = write(
        tmp_path / "mcp_test.jsonl",
        rec(id=1),
        "not json",
        rec(id=2, turn_idx=0),
        rec(id=3),
        {"task": "mcp"},
    )
    samples, problems = read_source(str(path))
    assert [s.key for s in samples] == ["mcp/1/1", "mcp/3/1"]
    assert [(p.line, p.field) for p in problems] == [
        (2, None),
        (3, "turn_idx"),
        (5, "id"),
        (5, "prompt"),
        (5, "response"),
        (5, "current_prompt"),
        (5, "system_str"),
        (5, "turn_idx"),
        (5, "total_turns"),
    ]


# Every field of the released files' schema (data/sample/README.md), in the README's order.
REQUIRED_FIELDS = ["task", "id", "prompt", "response", "current_prompt", "system_str", "turn_idx", "total_turns"]


def test_the_required_fields_are_the_schema_of_the_bundled_sample(sample_path):
    assert list(BenchmarkRecord.model_fields) == REQUIRED_FIELDS
    assert all(field.is_required() for field in BenchmarkRecord.model_fields.values())
    for path in sorted(sample_path.glob("*_test.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
            assert list(json.loads(line)) == REQUIRED_FIELDS


@pytest.mark.parametrize("name", REQUIRED_FIELDS)
def test_a_missing_field_is_an_error_naming_file_line_and_field(tmp_path, name):
    missing = {k: v for k, v in rec(id=2).items() if k != name}
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1), missing)
    samples, problems = read_source(str(path))
    assert [s.key for s in samples] == ["mcp/1/1"]
    assert [(str(p), p.severity) for p in problems] == [(f"{path}:2: {name}: missing field", "error")]
    with pytest.raises(DataError) as refused:
        load_samples(DataSettings(source=str(path)))
    assert [str(p) for p in refused.value.problems] == [f"{path}:2: {name}: missing field"]
    loaded = load_samples(DataSettings(source=str(path), skip_invalid=True))
    assert ([s.key for s in loaded.samples], loaded.skipped) == (["mcp/1/1"], 1)


def test_three_bad_lines_give_three_problems(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", "{", rec(turn_idx="1"), "7")
    assert len(problems_of(path)) == 3


def test_current_prompt_mismatch_is_a_warning(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1, turn_idx=2, current_prompt="something else"))
    samples, problems = read_source(str(path))
    assert len(samples) == 1
    assert [str(p) for p in problems] == [
        f"{path}:1: current_prompt: current_prompt differs from prompt[1]; the prompt entry is evaluated"
    ]
    assert problems[0].severity == "warning"


# --- Keys ------------------------------------------------------------------------------------------------


def test_duplicate_keys_get_suffixes_and_notes(tmp_path):
    path = write(
        tmp_path / "android_test.jsonl",
        rec("android", 5, 3, turns=4),
        rec("android", 6, 1),
        rec("android", 5, 3, turns=4, system_str="other"),
        rec("android", 5, 3, turns=5),
    )
    samples, problems = read_source(str(path))
    assert [s.key for s in samples] == ["android/5/3", "android/6/1", "android/5/3#2", "android/5/3#3"]
    assert [s.origin for s in samples] == [f"{path}:{n}" for n in (1, 2, 3, 4)]
    assert [str(p) for p in problems] == [
        f"{path}:3: duplicate key android/5/3: also at line 1; evaluated as android/5/3#2",
        f"{path}:4: duplicate key android/5/3: also at line 1; evaluated as android/5/3#3",
    ]
    assert {p.severity for p in problems} == {"note"}  # expected and handled: not repeated on every run


def test_duplicate_in_another_file_names_that_file(tmp_path):
    write(tmp_path / "mcp_test.jsonl", rec(id=1))
    other = write(tmp_path / "extra_test.jsonl", rec(id=1))
    samples, problems = read_source(str(tmp_path))
    assert [(s.key, s.repeats) for s in samples] == [("mcp/1/1", 1)]  # what eval.py counts twice
    assert [str(p) for p in problems] == [
        f"{other}:1: repeats {tmp_path}/mcp_test.jsonl:1 (sample mcp/1/1): taken once, where the "
        "reference's eval.py counts every row (its numbers will differ)"
    ]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x85\u2028\u2029"])
def test_unicode_line_separators_stay_inside_strings(tmp_path, separator):
    text = f"result one{separator}result two"
    path = write(tmp_path / "search_test.jsonl", rec("search", 1, response=[text, "b"]), rec("search", 2))
    assert separator.encode() in path.read_bytes()  # written raw, not escaped
    samples, problems = read_source(str(path))
    assert problems == []
    assert [s.key for s in samples] == ["search/1/1", "search/2/1"]
    assert samples[0].record.response[0] == text


# --- Sources ---------------------------------------------------------------------------------------------


def test_directory_reads_domain_order_then_others(tmp_path):
    write(tmp_path / "zzz_test.jsonl", rec("web", 9))
    write(tmp_path / "android_test.jsonl", rec("android", 1))
    write(tmp_path / "mcp_test.jsonl", rec("mcp", 1), rec("mcp", 2))
    write(tmp_path / "aaa_test.jsonl", rec("os", 3))
    write(tmp_path / "notes.jsonl", rec("mcp", 99))  # not a *_test.jsonl file
    samples, problems = read_source(str(tmp_path))
    assert problems == []
    assert [s.key for s in samples] == ["mcp/1/1", "mcp/2/1", "android/1/1", "os/3/1", "web/9/1"]
    assert samples[0].origin == f"{tmp_path}/mcp_test.jsonl:1"
    assert resolve_source(str(tmp_path)) == str(tmp_path.resolve())


def test_single_file(tmp_path):
    path = write(tmp_path / "os_test.jsonl", rec("os", "a-1"), rec("os", 7, turn_idx=2))
    samples, _ = read_source(str(path))
    assert [s.key for s in samples] == ["os/a-1/1", "os/7/2"]
    assert resolve_source(str(path)) == str(path.resolve())


def test_directory_without_files_is_a_data_error(tmp_path):
    write(tmp_path / "readme.jsonl", rec())
    with pytest.raises(DataError, match=f"no \\*_test.jsonl files in directory {tmp_path}$") as e:
        read_source(str(tmp_path))
    assert e.value.problems == []


@pytest.mark.parametrize("source", ["./no/such/dir", "/no/such/file_test.jsonl", "~/no/such", "hf:./no/such"])
def test_missing_path_is_not_looked_up_on_the_hub(source):
    with pytest.raises(DataError, match=r"^no such file or directory: "):
        read_source(source)


def test_sample_source_is_the_bundled_folder():
    if not list(sample_dir().glob("*_test.jsonl")):
        pytest.skip("the bundled sample (data/sample/*_test.jsonl) has not been written yet")
    assert resolve_source("sample") == str(sample_dir())
    samples, problems = read_source("sample")
    assert samples
    assert samples[0].origin.startswith(str(sample_dir()))
    # Clean: the one repeated Android key (on purpose, as in the released file) is all there is to say.
    assert [(p.severity, p.message) for p in problems] == [
        ("note", "duplicate key android/4/3: also at line 3; evaluated as android/4/3#2")
    ]


@pytest.fixture
def offline_hub(tmp_path, monkeypatch):
    """A Hub that cannot be reached, and an empty cache under tmp_path."""
    import datasets
    import huggingface_hub

    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    # Both libraries read these at import, so the environment alone no longer reaches them in this process.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HOME", str(home))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setattr(datasets.config, "HF_CACHE_HOME", str(home))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", home / "datasets")
    monkeypatch.setattr(datasets.config, "HF_MODULES_CACHE", home / "modules")
    monkeypatch.setattr(datasets.config, "DOWNLOADED_DATASETS_PATH", home / "datasets" / "downloads")
    monkeypatch.setattr(datasets.config, "EXTRACTED_DATASETS_PATH", home / "datasets" / "downloads" / "extracted")
    return home


def test_hub_path_loads_through_datasets(tmp_path, offline_hub):
    # `id` is an int in one file and a string in another, which Arrow alone cannot put in one column.
    data = tmp_path / "bench"
    write(data / "android_test.jsonl", rec("android", 5, 2, current_prompt="changed"), rec("android", 5, 2))
    write(
        data / "mcp_test.jsonl",
        rec("x/mcp", "abc", response=["line\u2028sep", "b"]),
        rec("mcp", 7),
        rec("mcp", 8, total_turns=None),
    )
    samples, problems = read_source(f"hf:{data}")
    label = f"hf:{data}[test]"
    assert [(s.key, s.origin) for s in samples] == [
        ("android/5/2", f"{label}:row 0"),
        ("android/5/2#2", f"{label}:row 1"),
        ("mcp/abc/1", f"{label}:row 2"),
        ("mcp/7/1", f"{label}:row 3"),
    ]
    assert [str(p) for p in problems] == [
        f"{label}:0: current_prompt: current_prompt differs from prompt[1]; the prompt entry is evaluated",
        f"{label}:4: total_turns: missing field",  # Arrow's null for a field a row does not have
        f"{label}:1: duplicate key android/5/2: also at row 0; evaluated as android/5/2#2",
    ]
    # Values keep their own types, so the records (and their hashes) equal those read from the files.
    from_files, _ = read_source(str(data))
    assert {s.key: s.hash for s in samples} == {s.key: s.hash for s in from_files}
    assert samples[2].record.response[0] == "line\u2028sep"
    assert (offline_hub / "datasets").is_dir()  # datasets cached under HF_HOME
    assert resolve_source(f"hf:{data}") == f"hf:{data}"


def test_hub_rows_are_validated_like_file_rows(tmp_path, offline_hub):
    data = tmp_path / "bench"
    missing_id = {k: v for k, v in rec(id=4).items() if k != "id"}
    write(data / "mcp_test.jsonl", rec(id=1), rec(id=2, turn_idx=9), rec(id=3, domain="cooking"), missing_id)
    samples, problems = read_source(f"hf:{data}")
    assert [s.key for s in samples] == ["mcp/1/1"]
    assert [str(p) for p in problems] == [
        f"hf:{data}[test]:1: turn_idx: turn_idx 9 is outside 1..len(prompt)=2",
        f"hf:{data}[test]:2: task: unknown domain 'cooking'; expected one of {', '.join(DOMAINS)}",
        f"hf:{data}[test]:3: id: missing field",
    ]


def test_hub_schema_matches_the_record_model():
    import datasets

    from awbench.data.hub import _hub_features

    assert list(_hub_features(datasets)) == list(BenchmarkRecord.model_fields)


def test_offline_hub_suggests_local_data(offline_hub):
    with pytest.raises(DataError) as e:
        read_source("nobody-here/no-such-benchmark")
    message = str(e.value)
    assert message.startswith(
        "Cannot load the dataset 'nobody-here/no-such-benchmark': HF_HUB_OFFLINE is set and no copy is cached under "
        "HF_HOME ("
    )
    assert (
        "Unset HF_HUB_OFFLINE to download it, set HF_HOME to where a copy is cached, or give instead a local "
        "directory of {domain}_test.jsonl files, or `sample` for the small sample bundled with awbench."
    ) in message
    assert "--data" not in message  # `awbench data info` has no --data option
    assert "\n" not in message


# --- Selection -------------------------------------------------------------------------------------------


def make(sizes: dict[str, int]) -> list[Sample]:
    """Domains interleaved, so that keeping the original order is visible."""
    out = []
    for i in range(max(sizes.values())):
        out += [sample(d, i) for d, n in sizes.items() if i < n]
    return out


def keys(samples: list[Sample]) -> list[str]:
    return [s.key for s in samples]


def test_select_domains_and_unknown_domain():
    samples = make({"mcp": 2, "os": 2, "web": 1})
    assert keys(select(samples, DataSettings(domains=["os", "WEB"]))) == ["os/0/1", "web/0/1", "os/1/1"]
    with pytest.raises(DataError) as e:
        select(samples, DataSettings(domains=["os", "cooking"]))
    assert str(e.value) == "unknown domain cooking; valid domains: mcp, search, terminal, swe, android, web, os"


def test_select_limit_per_domain_in_read_order():
    samples = make({"mcp": 3, "os": 1})
    assert keys(select(samples, DataSettings(limit=2))) == ["mcp/0/1", "os/0/1", "mcp/1/1"]
    assert select(samples, DataSettings(limit=0)) == []


def test_select_ids_by_id_key_or_domain_id():
    samples = make({"mcp": 3, "os": 3}) + [Sample("mcp/1/1#2", sample("mcp", 1).record, "test")]
    assert keys(select(samples, DataSettings(ids=["2"]))) == ["mcp/2/1", "os/2/1"]
    assert keys(select(samples, DataSettings(ids=["os/1", "mcp/0/1"]))) == ["mcp/0/1", "os/1/1"]
    assert keys(select(samples, DataSettings(ids=["mcp/1/1#2"]))) == ["mcp/1/1#2"]
    assert select(samples, DataSettings(ids=["nothing"])) == []


def test_selection_order_domains_ids_limit_sample():
    samples = make({"mcp": 5, "os": 5})
    settings = DataSettings(domains=["mcp"], ids=["1", "2", "3", "os/4"], limit=2)
    assert keys(select(samples, settings)) == ["mcp/1/1", "mcp/2/1"]


def test_stratified_sample_is_proportional_ordered_and_seeded():
    samples = make({"mcp": 50, "search": 30, "android": 20})
    chosen = select(samples, DataSettings(sample=10, seed=3))
    counts = {d: sum(s.domain == d for s in chosen) for d in ("mcp", "search", "android")}
    assert counts == {"mcp": 5, "search": 3, "android": 2}
    position = {s.key: i for i, s in enumerate(samples)}
    assert [position[s.key] for s in chosen] == sorted(position[s.key] for s in chosen)
    assert keys(select(samples, DataSettings(sample=10, seed=3))) == keys(chosen)
    assert keys(select(samples, DataSettings(sample=10, seed=4))) != keys(chosen)


def test_stratified_sample_largest_remainder_and_one_per_domain():
    samples = make({"mcp": 97, "search": 2, "os": 1})
    count = lambda chosen: [sum(s.domain == d for s in chosen) for d in ("mcp", "search", "os")]
    assert count(select(samples, DataSettings(sample=3))) == [1, 1, 1]
    assert count(select(samples, DataSettings(sample=2))) == [2, 0, 0]
    assert count(select(samples, DataSettings(sample=50))) == [48, 1, 1]
    even = select(make({"mcp": 3, "os": 3, "web": 3}), DataSettings(sample=4))
    assert [sum(s.domain == d for s in even) for d in ("mcp", "os", "web")] == [2, 1, 1]  # tie: first seen
    assert len(select(samples, DataSettings(sample=500))) == 100


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=len(DOMAINS)), n=st.integers(0, 40))
def test_stratified_sample_sizes_always_add_up(sizes, n):
    by_domain = dict(zip(DOMAINS, sizes, strict=False))
    chosen = select(make(by_domain), DataSettings(sample=n, seed=n))
    counts = {d: sum(s.domain == d for s in chosen) for d in by_domain}
    assert len(chosen) == min(n, sum(sizes))
    assert all(counts[d] <= size for d, size in by_domain.items())
    if n >= len(by_domain):
        assert all(counts.values())


# --- load_samples ----------------------------------------------------------------------------------------


def test_load_samples_raises_on_errors_unless_skip_invalid(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1), "{", rec(id=2, turn_idx=0), rec(id=1, system_str="x"))
    with pytest.raises(DataError) as e:
        load_samples(DataSettings(source=str(path)))
    assert [str(p) for p in e.value.problems] == [
        f"{path}:2: invalid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{path}:3: turn_idx: turn_idx 0 is outside 1..len(prompt)=2",
    ]
    assert "--skip-invalid" in str(e.value)

    loaded = load_samples(DataSettings(source=str(path), skip_invalid=True))
    assert keys(loaded.samples) == ["mcp/1/1", "mcp/1/1#2"]
    assert loaded.skipped == 2
    assert loaded.source == str(path.resolve())
    assert [(p.line, p.severity) for p in loaded.problems] == [(2, "error"), (3, "error"), (4, "note")]


def test_load_samples_warns_about_ids_that_match_nothing(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1))
    loaded = load_samples(DataSettings(source=str(path), ids=["1", "nope"]))
    assert keys(loaded.samples) == ["mcp/1/1"]
    assert [str(p) for p in loaded.problems] == [f"{path.resolve()}: ids: 'nope' matches no sample"]
    # a misspelt key gets the closest names an id may be given by (id, key, domain/id)
    loaded = load_samples(DataSettings(source=str(path), ids=["mcp/1/2"]))
    assert [str(p) for p in loaded.problems] == [
        f"{path.resolve()}: ids: 'mcp/1/2' matches no sample; did you mean 'mcp/1/1' or 'mcp/1'?"
    ]


def test_fingerprint_follows_records_and_selection(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1), rec(id=2))
    base = load_samples(DataSettings(source=str(path))).fingerprint
    assert load_samples(DataSettings(source=str(path))).fingerprint == base
    assert load_samples(DataSettings(source=str(path), limit=1)).fingerprint != base
    write(path, rec(id=1), rec(id=2, system_str="changed"))
    assert load_samples(DataSettings(source=str(path))).fingerprint != base


# --- data_info -------------------------------------------------------------------------------------------


def info_fixture() -> list[Sample]:
    trajectory = {"task": "mcp", "id": 1, "prompt": ["p1", "p22"], "response": ["r1", "r22"], "system_str": "sys"}
    records = [
        {**trajectory, "current_prompt": "p1", "turn_idx": 1, "total_turns": 2},  # sys + p1 = 5 chars
        {**trajectory, "current_prompt": "p22", "turn_idx": 2, "total_turns": 2},  # sys + p1 + r1 + p22 = 10 chars
        {
            "task": "android",
            "id": 2,
            "prompt": ["xxxxx"],
            "response": ["y"],
            "current_prompt": "xxxxx",
            "system_str": "",
            "turn_idx": 1,
            "total_turns": 1,
        },  # 5 chars
    ]
    out = []
    for r in records:
        record = BenchmarkRecord.model_validate(r)
        out.append(Sample(record.base_key(), record, "test"))
    return out


def test_data_info_numbers():
    info = data_info(info_fixture(), "somewhere")
    assert info.source == "somewhere" and not info.is_full_benchmark
    mcp, android = info.domains
    assert mcp.model_dump() == {
        "domain": "mcp",
        "samples": 2,
        "trajectories": 1,
        "avg_turns": 1.5,
        "avg_total_turns": 2.0,
        "avg_context_chars": 7.5,
        "max_context_chars": 10,
        "avg_context_tokens": None,
        "published_samples": 286,
        "published_avg_turns": 23.1,
    }
    assert (android.domain, android.samples, android.avg_total_turns, android.avg_context_chars) == (
        "android",
        1,
        1.0,
        5.0,
    )
    assert (android.published_samples, android.published_avg_turns) == (200, 37.8)
    total = info.total
    assert (total.domain, total.samples, total.trajectories, total.max_context_chars) == ("total", 3, 2, 10)
    assert total.avg_turns == pytest.approx(4 / 3)
    assert total.avg_context_chars == pytest.approx(20 / 3)
    assert (total.published_samples, total.published_avg_turns) == (2170, 22.8)


def test_full_benchmark_needs_every_published_count():
    samples = [sample(d, i) for d in DOMAINS for i in range(PUBLISHED_STATS[d][0])]
    assert data_info(samples, "x").is_full_benchmark
    assert not data_info(samples[1:], "x").is_full_benchmark


def tiny_tokenizer(directory: Path, chat_template: str | None, need_jinja2: bool = True) -> str:
    """A word-level tokenizer saved to `directory`; the test is skipped without the `tokens` extra."""
    reason = "needs the tokens extra: pip install '.[tokens]'"
    pytest.importorskip("tokenizers", reason=reason)
    pytest.importorskip("transformers", reason=reason)
    if chat_template and need_jinja2:
        pytest.importorskip("jinja2", reason=f"a chat template {reason}")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.WordLevelTrainer(special_tokens=["[UNK]"])
    tokenizer.train_from_iterator(["system user assistant sys p1 p22 r1"], trainer=trainer)
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]")
    wrapped.chat_template = chat_template
    wrapped.save_pretrained(directory)
    return str(directory)


def test_data_info_tokens_with_chat_template(tmp_path):
    template = (
        "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}assistant{% endif %}"
    )
    info = data_info(info_fixture(), "x", tokenizer=tiny_tokenizer(tmp_path, template))
    # "system sys user p1 assistant" = 5; "... assistant r1 user p22 assistant" = 9; "user xxxxx assistant" = 3
    assert [d.avg_context_tokens for d in info.domains] == [7.0, 3.0]
    assert info.total.avg_context_tokens == pytest.approx(17 / 3)


def test_data_info_tokens_without_chat_template(tmp_path):
    info = data_info(info_fixture(), "x", tokenizer=tiny_tokenizer(tmp_path, None))
    # The joined contents: "sys p1" = 2, "sys p1 r1 p22" = 4, "xxxxx" = 1
    assert [d.avg_context_tokens for d in info.domains] == [3.0, 1.0]


def test_tokenizer_that_cannot_load_offline_is_a_data_error(tmp_path, offline_hub):
    pytest.importorskip("transformers", reason="needs the tokens extra: pip install '.[tokens]'")
    with pytest.raises(DataError) as e:
        data_info(info_fixture(), "x", tokenizer="nobody-here/no-such-tokenizer")
    assert str(e.value) == (
        f"cannot load tokenizer 'nobody-here/no-such-tokenizer': HF_HUB_OFFLINE is set and no copy is cached under "
        f"HF_HOME ({huggingface_hub.constants.HF_HOME}). Unset HF_HUB_OFFLINE to download it, set HF_HOME to where a "
        f"copy is cached, or pass --tokenizer PATH with a local tokenizer directory."
    )

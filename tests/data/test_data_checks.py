"""Benchmark data, the stricter checks: text that is not valid Unicode, deep nesting, repeated JSON keys, turn
counts, empty actions and ground truths; local paths told apart from Hub ids; the Hub and the tokenizer
failing at once without a network; the optional `tokens` extra; and the sample hash, computed once."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from refusals import refusal
from test_dataset import info_fixture, rec, tiny_tokenizer, write
from typer.testing import CliRunner

from awbench import records
from awbench.analysis.data_info import data_info
from awbench.cli import app
from awbench.config import DataSettings
from awbench.data import dataset, json_lines
from awbench.data.dataset import load_samples, read_source
from awbench.data.json_lines import MAX_NESTING
from awbench.data.problems import DataError
from awbench.records import BenchmarkRecord, Sample, content_hash, record_hash

ROOT = Path(__file__).resolve().parents[2]
NOT_UNICODE = "not valid Unicode, so it cannot be written as UTF-8"
TOO_DEEP = "nested more than 100 levels deep (arrays and objects within each other)"
TOKENS = "pip install 'awbench[tokens]'"


def line_with(extra: str, **fields) -> str:
    """rec(**fields) as a JSON line (non-ASCII escaped, so lone surrogates stay escapes) with `extra`
    (", key: value" text) added at the end of the object."""
    return json.dumps(rec(**fields))[:-1] + extra + "}"


def deep(n: int) -> str:
    return "[" * n + "]" * n


# --- Errors: one message each --------------------------------------------------------------------------

ERRORS = [
    pytest.param(
        json.dumps(rec(response=["obs 1 1", "ab\ud800c"])),
        [rf"1: response.1: a lone surrogate \ud800 at character 2: {NOT_UNICODE}"],
        id="surrogate-in-response",
    ),
    pytest.param(
        json.dumps(rec(system_str="\udfff")),
        [rf"1: system_str: a lone surrogate \udfff at character 0: {NOT_UNICODE}"],
        id="surrogate-alone",
    ),
    pytest.param(
        json.dumps(rec(gen={"meta": ["ok", {"note": "x\udc80"}]})),
        [rf"1: gen.meta.1.note: a lone surrogate \udc80 at character 1: {NOT_UNICODE}"],
        id="surrogate-in-extra",
    ),
    pytest.param(
        json.dumps(rec(gen={"k\udc80": "v"})),
        [rf"1: gen: key 'k\udc80' has a lone surrogate \udc80 at character 1: {NOT_UNICODE}"],
        id="surrogate-in-key",
    ),
    pytest.param(
        json.dumps(rec(domain="mcp\ud800", system_str="sys")),
        [
            r"1: task: unknown domain 'mcp\ud800'; expected one of mcp, search, terminal, swe, android, web, os",
            rf"1: task: a lone surrogate \ud800 at character 3: {NOT_UNICODE}",
        ],
        id="surrogate-and-invalid",
    ),
    pytest.param(line_with(f', "deep": {deep(5000)}'), [f"1: {TOO_DEEP}"], id="deep-5000"),
    pytest.param(line_with(f', "deep": {deep(500)}'), [f"1: deep: {TOO_DEEP}"], id="deep-500"),
    pytest.param(line_with(f', "deep": {deep(MAX_NESTING)}'), [f"1: deep: {TOO_DEEP}"], id="deep-100"),
    pytest.param(
        line_with(', "turn_idx": 1'),
        ["1: turn_idx: duplicate JSON key 'turn_idx': given 2 times in one object"],
        id="duplicate-key",
    ),
    pytest.param(
        line_with(', "gen": {"a": 1, "a": 2, "a": 3}'),
        ["1: gen.a: duplicate JSON key 'a': given 3 times in one object"],
        id="duplicate-key-nested",
    ),
    pytest.param(
        line_with(', "gen": [{"x": 1}, {"x": 1, "x": 2}]'),
        ["1: gen.1.x: duplicate JSON key 'x': given 2 times in one object"],
        id="duplicate-key-in-list",
    ),
    pytest.param(
        json.dumps(rec(total_turns=0)),
        ["1: total_turns: total_turns 0 is below 1; a trajectory has at least one turn"],
        id="total_turns-0",
    ),
    pytest.param(
        json.dumps(rec(total_turns=-3)),
        ["1: total_turns: total_turns -3 is below 1; a trajectory has at least one turn"],
        id="total_turns-negative",
    ),
    pytest.param(
        json.dumps(rec(prompt=["", "act 1 2"], current_prompt="")),
        ["1: prompt.0: the current action is empty"],
        id="empty-action",
    ),
    pytest.param(
        json.dumps(rec(turn_idx=2, prompt=["act 1 1", " \n\t"], current_prompt=" \n\t")),
        ["1: prompt.1: the current action is empty"],
        id="whitespace-action",
    ),
    pytest.param(
        json.dumps(rec(prompt=["### Turn 1\n**Action:**\n  \n", "a"], current_prompt="### Turn 1\n**Action:**\n  \n")),
        ["1: prompt.0: the current action is empty apart from its heading"],
        id="heading-only-action",
    ),
]


@pytest.mark.parametrize(("line", "expected"), ERRORS)
def test_error_message(tmp_path, line, expected):
    path = write(tmp_path / "mcp_test.jsonl", line)
    samples, problems = read_source(str(path))
    assert samples == []
    assert [str(p) for p in problems] == [f"{path}:{message}" for message in expected]
    assert {p.severity for p in problems} == {"error"}


def test_nesting_up_to_the_limit_is_read(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", line_with(f', "deep": {deep(MAX_NESTING - 1)}'))
    samples, problems = read_source(str(path))
    assert len(samples) == 1 and problems == []


def test_long_runs_of_whitespace_are_checked_in_linear_time(tmp_path):
    spaces = " " * 200_000  # a backtracking pattern would take hours over these
    action = f"### Turn 1{spaces}**Action:**{spaces}x{spaces}"
    path = write(tmp_path / "mcp_test.jsonl", rec(prompt=[action], response=[spaces + "y"], current_prompt=action))
    samples, problems = read_source(str(path))
    assert len(samples) == 1 and problems == []


def test_an_earlier_empty_action_is_not_the_current_one(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(prompt=["act", ""], response=["obs", ""], current_prompt="act"))
    samples, problems = read_source(str(path))
    assert len(samples) == 1 and problems == []


# --- Warnings ------------------------------------------------------------------------------------------

WARNINGS = [
    pytest.param(
        rec(turn_idx=2, total_turns=1), "1: total_turns: total_turns 1 is less than turn_idx 2", id="total-below-turn"
    ),
    pytest.param(
        rec(response=["", "b"]),
        "1: response.0: the ground truth (the current turn's observation) is empty",
        id="empty-ground-truth",
    ),
    pytest.param(
        rec(turn_idx=2, response=["a", "**Environment Observation:**\n \n"]),
        "1: response.1: the ground truth (the current turn's observation) is empty apart from the "
        "**Environment Observation:** marker",
        id="marker-only-ground-truth",
    ),
]


@pytest.mark.parametrize(("record", "expected"), WARNINGS)
def test_warning_message(tmp_path, record, expected):
    path = write(tmp_path / "mcp_test.jsonl", record)
    samples, problems = read_source(str(path))
    assert len(samples) == 1  # suspicious, not wrong: evaluated all the same
    assert [(str(p), p.severity) for p in problems] == [(f"{path}:{expected}", "warning")]


def test_hub_rows_get_the_text_check(monkeypatch):
    row = rec(response=["obs", "x\ud800"])
    monkeypatch.setattr(dataset, "load_hub_dataset", lambda ref: {"test": [row, rec(id=2)]})
    samples, problems = read_source("hf:someone/bench")
    assert [s.key for s in samples] == ["mcp/2/1"]
    assert [str(p) for p in problems] == [
        rf"hf:someone/bench[test]:0: response.1: a lone surrogate \ud800 at character 1: {NOT_UNICODE}"
    ]


def test_data_with_surrogates_cannot_start_a_run(tmp_path):
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1), json.dumps(rec(id=2, response=["\ud800", "b"])))
    with pytest.raises(DataError) as e:
        load_samples(DataSettings(source=str(path)))
    assert [p.line for p in e.value.problems] == [2]
    assert load_samples(DataSettings(source=str(path), skip_invalid=True)).skipped == 1


# --- Both JSON readers say the same -------------------------------------------------------------------


def test_fast_and_standard_json_readers_agree(tmp_path, monkeypatch, sample_path):
    if json_lines._fast_loads is None:
        pytest.skip("jiter (installed with openai) is not available, so there is one reader only")
    lines: list[dict | str | bytes] = [
        rec(id=1, response=['line\u2028sep \U0001f600 \\ " \x7f', "b"]),
        json.dumps(rec(id=2, response=["\\u00e9 \ud83d\ude00", "b"])),  # escapes, and a surrogate pair
        json.dumps(rec(id=3, response=["\ud800", "b"])),
        line_with(', "turn_idx": 1', id=4),
        line_with(f', "deep": {deep(150)}', id=5),
        line_with(f', "deep": {deep(2000)}', id=6),
        '{"task": "mcp", "id": 7, "prompt": ["a"], "response": ["b"], "current_prompt": "a", "system_str": "", "turn_idx": 1, "total_turns": 1, "x": NaN, "y": 1e400}',
        "[1, 2]",
        '{"task": "mcp",',
        b'{"task": "mcp\xff"}',
        '{"task": "mcp", "id": 8, "prompt": ["a\tb"], "response": ["b"], "current_prompt": "a\tb", "system_str": "", "turn_idx": 1, "total_turns": 1}',
        rec(id=9, turn_idx=2, current_prompt="x"),
    ]
    path = write(tmp_path / "mcp_test.jsonl", "\ufeff" + json.dumps(rec(id=0)), *lines)

    def read(source):
        samples, problems = read_source(source)
        return repr([(s.key, s.hash, s.record.model_dump()) for s in samples]), problems  # repr: NaN != NaN

    fast = read(str(path)), read(str(sample_path))
    monkeypatch.setattr(json_lines, "_fast_loads", None)
    assert (read(str(path)), read(str(sample_path))) == fast
    assert [s.key for s in read_source(str(path))[0]] == ["mcp/0/1", "mcp/1/1", "mcp/2/1", "mcp/7/1", "mcp/9/2"]


# --- The sample hash ----------------------------------------------------------------------------------


def old_hash(record: BenchmarkRecord) -> str:
    """`Sample.hash` as it was computed before it was stored: run data fingerprints depend on it."""
    return content_hash(record.model_dump(mode="json", include=set(BenchmarkRecord.model_fields)))


text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


@settings(max_examples=200, deadline=None)
@given(
    task=st.sampled_from(["mcp", "x/os", "Web "]),
    id=st.one_of(st.integers(-(2**70), 2**70), text),
    turns=st.lists(st.tuples(text, text), min_size=1, max_size=4),
    current_prompt=text,
    system_str=text,
    total_turns=st.integers(1, 2**40),
    extra=st.dictionaries(text, text, max_size=2),
)
def test_record_hash_is_the_hash_of_the_canonical_json(task, id, turns, current_prompt, system_str, total_turns, extra):
    fields = dict(
        task=task,
        id=id,
        prompt=[p for p, _ in turns],
        response=[r for _, r in turns],
        current_prompt=current_prompt,
        system_str=system_str,
        turn_idx=len(turns),
        total_turns=total_turns,
    )
    record = BenchmarkRecord.model_validate({**{f"x{k}": v for k, v in extra.items()}, **fields})
    assert record_hash(record) == old_hash(record)


def test_fast_json_strings_are_exact_for_every_character():
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert records._json_string is records._fast_json_string  # the fast way passed its own check
    assert records._fast_json_string(everything) == json.dumps(everything, ensure_ascii=False).encode()


def test_record_hash_refuses_a_lone_surrogate_like_content_hash():
    record = BenchmarkRecord(
        task="os",
        id=1,
        prompt=["a\ud800"],
        response=["b"],
        current_prompt="a",
        system_str="",
        turn_idx=1,
        total_turns=1,
    )
    for hash_of in (record_hash, old_hash):
        with pytest.raises(UnicodeEncodeError):
            hash_of(record)


def test_hash_is_computed_once_per_sample_and_unchanged(monkeypatch, sample_path):
    calls = []
    original = records.record_hash

    def counting(record, encoded=None):
        calls.append(record)
        return original(record, encoded)

    monkeypatch.setattr(dataset, "record_hash", counting)
    monkeypatch.setattr(records, "record_hash", counting)
    loaded = load_samples(DataSettings(source="sample"))
    assert [s.hash for s in loaded.samples] == [s.hash for s in loaded.samples]  # read twice, not recomputed
    assert len(calls) == len(loaded.samples)
    assert [s.hash for s in loaded.samples] == [old_hash(s.record) for s in loaded.samples]
    assert loaded.fingerprint == content_hash([[s.key, old_hash(s.record)] for s in loaded.samples])


def test_sample_made_without_a_hash_computes_it():
    record = BenchmarkRecord(
        task="os", id=1, prompt=["a"], response=["b"], current_prompt="a", system_str="", turn_idx=1, total_turns=1
    )
    assert Sample(key="os/1/1", record=record, origin="x").hash == old_hash(record)


# --- Memory: a record of N MB is validated within 3 N -----------------------------------------------------

# Validates one file in a fresh interpreter; prints its peak resident memory in bytes and the sample's hash.
# VmHWM, not ru_maxrss: that keeps the peak of the process before `exec` (pytest's, here).
VALIDATE_ONE = """
import re, sys
from awbench.data.dataset import read_source
samples, problems = read_source(sys.argv[1])
assert len(samples) == 1 and problems == [], problems
with open("/proc/self/status") as status:
    peak_kib = int(re.search(r"VmHWM:\\s*(\\d+) kB", status.read()).group(1))
print(peak_kib * 1024, samples[0].hash)
"""

LONG_TEXTS = {  # one line of terminal output, or of Chinese text, repeated: JSON escapes (\n) in both
    "ascii": "drwxr-xr-x  2 root root 4096 Dec  3 03:31 build\n",
    "cjk": "\u6587\u4ef6\u5939\u4e2d\u7684\u6570\u636e\u5df2\u4fdd\u5b58\n",
}


def validated_in_a_fresh_process(path: Path) -> tuple[int, str]:
    result = subprocess.run([sys.executable, "-c", VALIDATE_ONE, str(path)], capture_output=True, text=True, check=True)
    peak, digest = result.stdout.split()
    return int(peak), digest


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="peak memory is read from Linux's /proc")
@pytest.mark.parametrize("text", sorted(LONG_TEXTS))
def test_a_50_mb_record_is_validated_within_three_times_its_size(tmp_path, text):
    """It took six times: the file read whole, the line copied out of it, each string's JSON form kept for
    the hash, the observation stripped. Against the same process validating a 1 KB record."""
    unit = LONG_TEXTS[text]
    big = rec("terminal", turn_idx=2, response=["obs 1 1", unit * (50_000_000 // len(unit.encode()))])
    path = write(tmp_path / "big" / "terminal_test.jsonl", big)
    size = path.stat().st_size
    baseline, _ = validated_in_a_fresh_process(write(tmp_path / "small" / "terminal_test.jsonl", rec("terminal")))
    peak, digest = validated_in_a_fresh_process(path)
    assert 50_000_000 <= size < 52_000_000  # with the escapes
    print(f"{text}: {size} bytes, {(peak - baseline) / size:.2f} times that over the baseline")
    assert peak - baseline < 3 * size, f"{(peak - baseline) / size:.2f} times the record"
    assert digest == content_hash({k: v for k, v in big.items() if k in BenchmarkRecord.model_fields})


def test_a_long_string_is_hashed_in_pieces_as_it_would_be_whole(monkeypatch):
    """Pieces of 7 characters, so escapes, non-ASCII and astral characters fall on every side of a cut."""
    monkeypatch.setattr(records, "HASHED_PIECE", 7)
    texts = ["", "short", 'a\n"b\\c\u2028d\x00e\u00e9\U0001f600' * 5, "\U0001f600" * 15, "x" * 14]
    for text in texts:
        record = BenchmarkRecord.model_validate(rec(response=["obs", text], turn_idx=2))
        assert record_hash(record, {}) == record_hash(record) == old_hash(record), text
    refused = BenchmarkRecord.model_validate(rec(response=["obs", "a" * 20 + "\ud800"], turn_idx=2))
    with pytest.raises(UnicodeEncodeError):
        record_hash(refused)


def test_a_long_line_is_read_by_the_standard_reader_with_the_same_checks(tmp_path, monkeypatch):
    """Past `LONG_LINE` bytes a line is parsed from its text alone; what it finds is what jiter's path finds."""
    monkeypatch.setattr(json_lines, "LONG_LINE", 100)
    long_text = "y" * 300
    path = write(
        tmp_path / "mcp_test.jsonl",
        rec(id=1, response=["obs", long_text], turn_idx=2),
        line_with(', "turn_idx": 1', id=2, response=["obs", long_text]),
        json.dumps(rec(id=3, response=["obs", long_text + "\ud800"], turn_idx=2)),
        b'{"task": "mcp", "id": 4, "prompt": ["' + b"z" * 200 + b'\xff"]}',
    )
    samples, problems = read_source(str(path))
    offset = path.read_bytes().index(b"\xff")
    assert [s.key for s in samples] == ["mcp/1/2"] and samples[0].record.response[1] == long_text
    assert [str(p) for p in problems] == [
        f"{path}:2: turn_idx: duplicate JSON key 'turn_idx': given 2 times in one object",
        f"{path}:3: response.1: a lone surrogate \\ud800 at character 300: {NOT_UNICODE}",
        f"{path}:4: not valid UTF-8: byte 0xff at byte offset {offset}",
    ]


# --- Local paths and Hub ids ---------------------------------------------------------------------------


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A working directory with data/AgentWorldBench/ in it, as a user's checkout might have."""
    write(tmp_path / "data" / "AgentWorldBench" / "mcp_test.jsonl", rec())
    monkeypatch.chdir(tmp_path)
    return tmp_path


MISSING = [
    pytest.param(
        "sampel",
        "no such file or directory: sampel; did you mean 'sample', the sample bundled with awbench? (For a Hugging "
        "Face dataset of this name, pass hf:sampel)",
        id="sample-typo",
    ),
    pytest.param(
        "Samples",
        "no such file or directory: Samples; did you mean 'sample', the sample bundled with awbench? (For a Hugging "
        "Face dataset of this name, pass hf:Samples)",
        id="sample-variant",
    ),
    pytest.param(
        "./data/AgentWorldBnch",
        "no such file or directory: ./data/AgentWorldBnch; did you mean './data/AgentWorldBench'?",
        id="dot-path-typo",
    ),
    pytest.param(
        "data/AgentWorldBnch",
        "no such file or directory: data/AgentWorldBnch; did you mean 'data/AgentWorldBench'? (taken for a path "
        "since data/ is a local directory; for the Hugging Face dataset data/AgentWorldBnch, pass "
        "hf:data/AgentWorldBnch)",
        id="owner-is-a-local-directory",
    ),
    pytest.param(
        "data/AgentWorldBench/mcp_tset.jsonl",
        "no such file or directory: data/AgentWorldBench/mcp_tset.jsonl; did you mean "
        "'data/AgentWorldBench/mcp_test.jsonl'?",
        id="file-typo",
    ),
    pytest.param("mcp_test.jsonl", "no such file or directory: mcp_test.jsonl", id="jsonl-name"),
    pytest.param("a/b/c", "no such file or directory: a/b/c", id="three-parts"),
    pytest.param("C:\\bench", "no such file or directory: C:\\bench", id="backslash"),
    pytest.param("~/no/such/bench", "no such file or directory: ~/no/such/bench", id="home"),
]


@pytest.mark.parametrize(("source", "message"), MISSING)
def test_missing_local_path_is_reported_at_once(checkout, monkeypatch, source, message):
    monkeypatch.setattr(dataset, "load_hub_dataset", lambda ref: pytest.fail(f"{ref} was looked up on the Hub"))
    with pytest.raises(DataError) as e:
        read_source(source)
    assert str(e.value) == message


@pytest.mark.parametrize("source", ["Qwen/AgentWorldBench", "squad", "hf:data/AgentWorldBnch", "hf:sampel"])
def test_hub_ids_go_to_the_hub(checkout, monkeypatch, source):
    asked = []

    def load_hub_dataset(ref):
        asked.append(ref)
        return {"test": [rec()]}

    monkeypatch.setattr(dataset, "load_hub_dataset", load_hub_dataset)
    samples, _ = read_source(source)
    assert asked == [source.removeprefix("hf:")] and len(samples) == 1


# --- Without a network: fail at once -------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unreachable_hub(tmp_path, monkeypatch):
    """HF_ENDPOINT on a closed 127.0.0.1 port, HF_HUB_OFFLINE not set, an empty cache under tmp_path; every
    sleep (a retry's backoff) recorded instead of slept. Returns (endpoint, HF_HOME, the sleeps)."""
    import datasets
    import huggingface_hub

    endpoint = f"http://127.0.0.1:{closed_port()}"
    home = tmp_path / "hf-home"
    constants = huggingface_hub.constants
    for module, name, value in [
        (constants, "ENDPOINT", endpoint),
        (constants, "HF_HUB_OFFLINE", False),
        (constants, "HF_HOME", str(home)),
        (constants, "HF_HUB_CACHE", str(home / "hub")),
        (datasets.config, "HF_ENDPOINT", endpoint),
        (datasets.config, "HUB_DATASETS_URL", endpoint + "/datasets/{repo_id}/resolve/{revision}/{path}"),
        (datasets.config, "HF_HUB_OFFLINE", False),
        (datasets.config, "HF_CACHE_HOME", str(home)),
        (datasets.config, "HF_DATASETS_CACHE", home / "datasets"),
        (datasets.config, "HF_MODULES_CACHE", home / "modules"),
        (datasets.config, "DOWNLOADED_DATASETS_PATH", home / "datasets" / "downloads"),
        (datasets.config, "EXTRACTED_DATASETS_PATH", home / "datasets" / "downloads" / "extracted"),
    ]:
        monkeypatch.setattr(module, name, value)
    sleeps: list[float] = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    yield endpoint, home, sleeps
    assert constants.HF_HUB_OFFLINE is False and datasets.config.HF_HUB_OFFLINE is False  # put back


def test_unreachable_hub_fails_on_the_first_try(unreachable_hub):
    endpoint, home, sleeps = unreachable_hub
    with pytest.raises(DataError) as e:
        read_source("nobody-here/no-such-benchmark")
    message = str(e.value)
    assert message.startswith(
        f"Cannot load the dataset 'nobody-here/no-such-benchmark': the Hugging Face Hub ({endpoint}) cannot be "
        f"reached (ConnectError: "
    )
    assert message.endswith(
        f") and no copy is cached under HF_HOME ({home}). Set HF_HOME to where a copy is cached (HF_HUB_OFFLINE=1 "
        f"then skips asking the Hub), or give instead a local directory of {{domain}}_test.jsonl files, or `sample` "
        f"for the small sample bundled with awbench."
    )
    assert sleeps == []  # no retry, no backoff


def test_unreachable_hub_tokenizer_fails_on_the_first_try(unreachable_hub):
    pytest.importorskip("transformers", reason="needs the tokens extra: pip install '.[tokens]'")
    endpoint, home, sleeps = unreachable_hub
    with pytest.raises(DataError) as e:
        data_info(info_fixture(), "x", tokenizer="nobody-here/no-such-tokenizer")
    message = str(e.value)
    assert message.startswith(
        f"cannot load tokenizer 'nobody-here/no-such-tokenizer': the Hugging Face Hub ({endpoint}) cannot be "
        f"reached (ConnectError: "
    )
    assert message.endswith(
        f") and no copy is cached under HF_HOME ({home}). Set HF_HOME to where a copy is cached (HF_HUB_OFFLINE=1 "
        f"then skips asking the Hub), or pass --tokenizer PATH with a local tokenizer directory."
    )
    assert sleeps == []


def test_the_command_line_fails_fast_without_a_hub(tmp_path):
    """The environment variables as a user sets them, read by a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{closed_port()}", HF_HOME=str(tmp_path / "hf-home"))
    command = [sys.executable, "-c", "from awbench.cli import main; main()", "data", "validate", "nobody-here/bench"]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "cannot be reached" in result.stderr and "give instead a local directory" in result.stderr
    assert "Retrying" not in result.stderr and "Traceback" not in result.stderr


def test_missing_tokenizer_directory(tmp_path):
    with pytest.raises(DataError) as e:
        data_info(info_fixture(), "x", tokenizer=str(tmp_path / "no-such-tokenizer"))
    assert (
        str(e.value)
        == f"no such tokenizer directory: {tmp_path}/no-such-tokenizer (a Hub tokenizer is named owner/name)"
    )


# --- The optional `tokens` extra ------------------------------------------------------------------------


def test_tokenizer_without_transformers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    with pytest.raises(DataError) as e:
        data_info(info_fixture(), "x", tokenizer="Qwen/Qwen3-8B")
    assert str(e.value) == f"counting tokens (--tokenizer) needs transformers, which is not installed: {TOKENS}"


def test_chat_template_without_jinja2_names_the_extra(tmp_path, monkeypatch):
    template = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
    directory = tiny_tokenizer(tmp_path, template, need_jinja2=False)
    monkeypatch.setitem(sys.modules, "jinja2", None)
    with pytest.raises(DataError) as e:
        data_info(info_fixture(), "x", tokenizer=directory)
    assert str(e.value) == f"tokenizer {directory!r} has a chat template, which needs jinja2 to apply: {TOKENS}"


def test_pyproject_tokens_extra_is_part_of_dev():
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # awbench's own dependency before 3.11
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {r.split(">=")[0] for r in extras["tokens"]} == {"transformers", "tokenizers", "jinja2"}
    assert "awbench[tokens]" in extras["dev"]


# --- The command line ----------------------------------------------------------------------------------

runner = CliRunner()


def test_validate_prints_new_problems_without_a_traceback(tmp_path):
    path = write(
        tmp_path / "mcp_test.jsonl",
        json.dumps(rec(id=1, response=["\ud800", "b"])),
        line_with(', "id": 2', id=2),
        line_with(f', "deep": {deep(3000)}', id=3),
        rec(id=4, response=["", "b"]),
    )
    result = runner.invoke(app, ["data", "validate", str(path)])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit) and "Traceback" not in result.output
    assert rf"error: {path}:1: response.0: a lone surrogate \ud800 at character 0" in result.output
    assert f"error: {path}:2: id: duplicate JSON key 'id': given 2 times in one object" in result.output
    assert f"error: {path}:3: {TOO_DEEP}" in result.output
    assert f"warning: {path}:4: response.0: the ground truth" in result.output
    assert result.output.rstrip().endswith("1 valid sample; 3 errors; 1 warning")


def test_info_says_how_repeated_keys_are_evaluated_and_what_was_left_out(tmp_path):
    result = runner.invoke(app, ["data", "info", "sample"])
    assert result.exit_code == 0, result.output
    assert (
        "note: 1 sample key repeats (android/4/3, on 2 rows); every row is evaluated, the repeats as "
        "android/4/3#2 and so on"
    ) in result.output
    path = write(tmp_path / "mcp_test.jsonl", rec(id=1), rec(id=2, total_turns=0), rec(id=3, response=["", "b"]))
    result = runner.invoke(app, ["data", "info", str(path)])
    assert result.exit_code == 0, result.output
    assert f"1 invalid record left out, 1 warning: `awbench data validate {path}` lists them" in result.output


def test_info_tokenizer_without_transformers_is_one_line_and_exit_2(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    result = runner.invoke(app, ["data", "info", "sample", "--tokenizer", "Qwen/Qwen3-8B"])
    assert refusal(result) == (2, "missing_extra") and result.stderr.count("\n") == 1
    assert "needs transformers" in result.stderr and TOKENS in result.stderr


def test_a_run_does_not_repeat_the_duplicate_key_note(tmp_path):
    out = tmp_path / "results"
    result = runner.invoke(
        app, ["run", "--model", "baseline:oracle", "--judge", "rules", "--data", "sample", "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "android/4/3" not in result.output and "key repeats" not in result.output  # data info's note

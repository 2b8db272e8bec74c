import asyncio
import fcntl
import json
import os
import socket
import subprocess

import pytest

from awbench import files
from awbench.files import JsonlTable, StoreError, write_atomic
from awbench.records import PredictionRecord
from awbench.run.store import RunLock, RunLocked, RunStore, resolve_run


def _record(key, prediction="x"):
    return PredictionRecord(key=key, domain="mcp", sample_hash="h", status="ok", prediction=prediction)


def test_append_then_load_keeps_the_last_record_per_key(tmp_path):
    table = JsonlTable(tmp_path / "p.jsonl", PredictionRecord, lambda r: r.key)
    with table.appender() as append:
        append(_record("a", "first"))
        append(_record("b"))
        assert len(table.load()) == 2  # flushed per record: a reader sees them while the writer runs
    with table.appender() as append:
        append(_record("a", "second"))
    loaded = table.load()
    assert list(loaded) == ["a", "b"]
    assert loaded["a"].prediction == "second"


def test_load_skips_blank_lines_and_names_the_line_of_a_bad_record(tmp_path):
    path = tmp_path / "p.jsonl"
    good = _record("a").model_dump_json().encode()
    path.write_bytes(good + b"\n \t\n\n" + good.replace(b'"status":"ok"', b'"status":"fine"') + b"\n")
    table = JsonlTable(path, PredictionRecord, lambda r: r.key)
    with pytest.raises(StoreError, match=rf"^{path}:4: status: Input should be "):
        table.load()
    path.write_bytes(good + b"\n \t\n\n" + _record("b").model_dump_json().encode() + b"\r\n")
    assert list(table.load()) == ["a", "b"]


def test_load_keeps_what_keep_makes_of_each_record(tmp_path):
    table = JsonlTable(tmp_path / "p.jsonl", PredictionRecord, lambda r: r.key)
    with table.appender() as append:
        append(_record("a", "long text"))
        append(_record("b", "more text"))
    seen = []

    def keep(record):
        seen.append(record.prediction)
        return record.model_copy(update={"prediction": ""})

    loaded = table.load(keep=keep)
    assert seen == ["long text", "more text"]
    assert {key: r.prediction for key, r in loaded.items()} == {"a": "", "b": ""}


def _fsyncs(monkeypatch, path):
    """The fsync calls made on `path` from now on (each still made)."""
    calls = []
    real = os.fsync

    def spy(fd):
        if os.path.samefile(f"/proc/self/fd/{fd}", path):
            calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return calls


def test_records_that_stop_coming_are_fsynced_within_the_interval(tmp_path, monkeypatch):
    """In async code a record written within FSYNC_INTERVAL_S of the last fsync is fsynced by a timer, not only
    when the next record comes or the writer leaves."""
    monkeypatch.setattr(files, "FSYNC_INTERVAL_S", 0.2)
    table = JsonlTable(tmp_path / "p.jsonl", PredictionRecord, lambda r: r.key)
    table.path.touch()
    calls = _fsyncs(monkeypatch, table.path)

    async def write_then_wait():
        with table.appender() as append:
            append(_record("a"))
            append(_record("b"))
            written = len(calls)
            await asyncio.sleep(0.5)  # the loop runs the timer (due by 0.2 s) before this sleep ends
            return written, len(calls)

    assert asyncio.run(write_then_wait()) == (0, 1)
    assert len(calls) == 2  # and once more on leaving


def test_outside_async_code_records_are_fsynced_on_leaving(tmp_path, monkeypatch):
    table = JsonlTable(tmp_path / "p.jsonl", PredictionRecord, lambda r: r.key)
    table.path.touch()
    calls = _fsyncs(monkeypatch, table.path)
    with table.appender() as append:
        append(_record("a"))
        append(_record("b"))
        assert calls == []
    assert len(calls) == 1


def test_a_torn_last_line_is_ignored_by_readers_and_cut_off_by_the_next_writer(tmp_path):
    path = tmp_path / "p.jsonl"
    table = JsonlTable(path, PredictionRecord, lambda r: r.key)
    with table.appender() as append:
        append(_record("a"))
        append(_record("b"))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 20])  # a crash in the middle of writing "b"
    assert list(table.load()) == ["a"]
    assert path.read_bytes() == whole[: len(whole) - 20]  # reading never writes
    with table.appender() as append:
        append(_record("c"))  # appending after the repair gives clean lines
    assert list(table.load()) == ["a", "c"]
    assert path.read_bytes().count(b"\n") == 2


def test_a_file_of_one_torn_line_is_emptied_by_the_next_writer(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"key": "a", "dom')
    table = JsonlTable(path, PredictionRecord, lambda r: r.key)
    assert table.load() == {}
    with table.appender() as append:
        append(_record("b"))
    assert list(table.load()) == ["b"] and path.read_bytes().count(b"\n") == 1


def test_atomic_writes_leave_no_temporary_file_and_ordinary_permissions(tmp_path):
    import os

    target = tmp_path / "scores.json"
    write_atomic(target, "{}\n")
    write_atomic(target, '{"a": 1}\n')
    assert target.read_text() == '{"a": 1}\n' and [p.name for p in tmp_path.iterdir()] == ["scores.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~mask


def test_a_second_holder_of_a_run_is_refused_with_the_first_named(tmp_path):
    first = RunLock(tmp_path)
    first.acquire()
    try:
        with pytest.raises(RunLocked, match=rf"in use by process {os.getpid()} on {socket.gethostname()} \(started "):
            RunLock(tmp_path).acquire()
    finally:
        first.release()
    assert not (tmp_path / ".lock").exists()
    again = RunLock(tmp_path)
    again.acquire()
    again.release()


def test_a_lock_left_by_a_dead_process_is_taken_over_with_a_note(tmp_path):
    (tmp_path / ".lock").write_text('{"pid": 999999, "host": "gone", "started_at": "2026-01-01T00:00:00"}\n')
    lock = RunLock(tmp_path)
    lock.acquire()
    assert lock.taken_over == "process 999999 on gone (started 2026-01-01T00:00:00)"
    assert json.loads((tmp_path / ".lock").read_text())["pid"] == os.getpid()
    lock.release()


def test_the_holder_of_a_run_is_read_without_taking_the_lock(tmp_path, monkeypatch):
    """`awbench ls` says who holds a run: the live holder on this host, or one on another host (which cannot be
    checked from here); nobody when the file is missing, empty or left by a process that died. It never calls
    flock: a run starting at that moment would be refused."""
    assert RunLock(tmp_path).holder() is None
    lock = RunLock(tmp_path)
    lock.acquire()
    try:

        def no_flock(*args):
            raise AssertionError("holder() took a lock")

        with monkeypatch.context() as patch:
            patch.setattr(fcntl, "flock", no_flock)
            described = RunLock(tmp_path).holder()
        assert described is not None and described.startswith(
            f"process {os.getpid()} on {socket.gethostname()} (started "
        )
    finally:
        lock.release()
    dead = _dead_pid()
    (tmp_path / ".lock").write_text(json.dumps({"pid": dead, "host": socket.gethostname(), "started_at": "t0"}))
    assert RunLock(tmp_path).holder() is None
    (tmp_path / ".lock").write_text(json.dumps({"pid": dead, "host": "gpu-elsewhere", "started_at": "t0"}))
    assert RunLock(tmp_path).holder() == f"process {dead} on gpu-elsewhere (started t0)"
    (tmp_path / ".lock").write_text("")
    assert RunLock(tmp_path).holder() is None


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_corrupt_line_in_the_middle_names_file_and_line(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(_record("a").model_dump_json() + "\n{not json}\n" + _record("b").model_dump_json() + "\n")
    with pytest.raises(StoreError, match=r"p\.jsonl:2: "):
        JsonlTable(path, PredictionRecord, lambda r: r.key).load()


def test_resolve_run_by_name_or_path(tmp_path):
    run = tmp_path / "results" / "my-run"
    run.mkdir(parents=True)
    (run / "run.json").write_text("{}")
    assert resolve_run("my-run", tmp_path / "results").path == run
    assert resolve_run(str(run), tmp_path / "elsewhere").path == run
    with pytest.raises(StoreError, match="no run 'nope'"):
        resolve_run("nope", tmp_path / "results")


def test_a_misspelt_run_gets_the_closest_names(tmp_path):
    results = tmp_path / "results"
    for name in ("qwen-aw-35b__gpt-5.2", "qwen-aw-35b__rules", "baseline-oracle__rules"):
        (results / name).mkdir(parents=True)
        (results / name / "run.json").write_text("{}")
    (results / "notes").mkdir()  # not a run: never suggested
    with pytest.raises(StoreError) as error:
        resolve_run("qwen-aw-35b__gpt5.2", results)
    assert str(error.value) == (
        f"no run 'qwen-aw-35b__gpt5.2': neither qwen-aw-35b__gpt5.2 nor {results / 'qwen-aw-35b__gpt5.2'} "
        "holds a run.json; did you mean 'qwen-aw-35b__gpt-5.2' or 'qwen-aw-35b__rules'?"
    )
    # given as a path, the runs beside it are suggested as paths
    with pytest.raises(StoreError, match=rf"; did you mean '{results / 'baseline-oracle__rules'}'\?$"):
        resolve_run(str(results / "baseline-orcle__rules"), tmp_path / "elsewhere")
    with pytest.raises(StoreError) as error:
        resolve_run("notes", results)
    assert "did you mean" not in str(error.value)  # nothing close: no suggestion, but what is there
    assert str(error.value).endswith(
        f"holds a run.json; the runs under {results}: baseline-oracle__rules, qwen-aw-35b__gpt-5.2, qwen-aw-35b__rules"
    )


def test_reading_a_directory_without_run_json_says_so(tmp_path):
    with pytest.raises(StoreError, match=r"has no run.json"):
        RunStore(tmp_path).read_manifest()


def test_a_run_of_schema_1_is_migrated_by_a_command_that_writes_never_by_one_that_reads(tmp_path):
    """A run written before evaluations existed (one judgments.jsonl, run.json's `judges` by kind): reading it
    changes nothing and says how to migrate it; `awbench score`, which writes to the run, moves it into the run of
    today: the same judge id, records, judge.json settings and scores; the old file kept aside."""
    from typer.testing import CliRunner

    from awbench.cli import app
    from awbench.judging.rules.score import RULES_VERSION

    made = CliRunner().invoke(
        app,
        [
            "run",
            "--model",
            "baseline:oracle",
            "--judge",
            "rules",
            "--data",
            "sample",
            "--limit",
            "1",
            "--output",
            str(tmp_path),
            "--run-name",
            "r",
        ],
    )
    assert made.exit_code == 0, made.output
    run = tmp_path / "r"
    evaluation = run / "judges" / f"rules-v{RULES_VERSION}"
    records = (evaluation / "judgments.jsonl").read_bytes()
    scores = (evaluation / "scores.json").read_text()
    now = json.loads((run / "run.json").read_text())
    # Back to schema 1: the records at the top, no evaluations, the judges described by kind.
    (run / "judgments.jsonl").write_bytes(records)
    for child in evaluation.iterdir():
        child.unlink()
    evaluation.rmdir()
    (run / "judges").rmdir()
    old = {
        **now,
        "schema_version": 1,
        "primary_judge": None,
        "primary_described": {},
        "judges": {"rules": {"rules_version": RULES_VERSION}},
    }
    (run / "run.json").write_text(json.dumps(old))
    before = {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in run.rglob("*") if path.is_file()}

    with pytest.raises(StoreError, match=r"in the layout of an earlier awbench .*`awbench score .*/r` moves it"):
        RunStore(run).read_manifest()
    shown = CliRunner().invoke(app, ["show", str(run)])
    assert shown.exit_code == 2 and "awbench score" in shown.stderr
    assert {path: (path.read_bytes(), path.stat().st_mtime_ns) for path in run.rglob("*") if path.is_file()} == before

    scored = CliRunner().invoke(app, ["score", str(run)])
    assert scored.exit_code == 0, scored.output
    manifest = RunStore(run).read_manifest()
    assert manifest.schema_version == 2 and manifest.primary_judge == f"rules-v{RULES_VERSION}"
    assert (evaluation / "judgments.jsonl").read_bytes() == records and (
        evaluation / "scores.json"
    ).read_text() == scores
    info = json.loads((evaluation / "judge.json").read_text())
    assert info["id"] == f"rules-v{RULES_VERSION}" and info["kind"] == "rules" and info["settings"]["kind"] == "rules"
    assert info["described"] == {"rules_version": RULES_VERSION}
    assert not (run / "judgments.jsonl").exists() and (run / "judgments.jsonl.migrated").read_bytes() == records
    assert "judges" not in json.loads((run / "run.json").read_text())

import pytest

from awbench.records import PredictionRecord
from awbench.store import JsonlTable, RunStore, StoreError, resolve_run


def _record(key, prediction="x"):
    return PredictionRecord(key=key, domain="mcp", sample_hash="h", status="ok", prediction=prediction)


def test_append_then_load_keeps_the_last_record_per_key(tmp_path):
    table = JsonlTable(tmp_path / "p.jsonl", PredictionRecord, lambda r: r.key)
    table.append(_record("a", "first"))
    table.append(_record("b"))
    table.append(_record("a", "second"))
    loaded = table.load()
    assert list(loaded) == ["a", "b"]
    assert loaded["a"].prediction == "second"


def test_a_torn_last_line_is_dropped_and_the_file_repaired(tmp_path):
    path = tmp_path / "p.jsonl"
    table = JsonlTable(path, PredictionRecord, lambda r: r.key)
    table.append(_record("a"))
    table.append(_record("b"))
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 20])  # a crash in the middle of writing "b"
    assert list(table.load()) == ["a"]
    table.append(_record("c"))  # appending after the repair gives clean lines
    assert list(table.load()) == ["a", "c"]
    assert path.read_bytes().count(b"\n") == 2


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


def test_reading_a_directory_without_run_json_says_so(tmp_path):
    with pytest.raises(StoreError, match="has no run.json"):
        RunStore(tmp_path).read_manifest()

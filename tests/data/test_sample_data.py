"""Checks of the bundled AgentWorldBench sample (data/sample/), independent of the awbench package."""

from __future__ import annotations

import collections
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"
DOMAINS = ("mcp", "search", "terminal", "swe", "android", "web", "os")
GENERATED = ("terminal", "swe")
HANDWRITTEN = tuple(d for d in DOMAINS if d not in GENERATED)
FIELDS = {
    "task": str,
    "id": int,
    "prompt": list,
    "response": list,
    "current_prompt": str,
    "system_str": str,
    "turn_idx": int,
    "total_turns": int,
}
MARKER = "**Environment Observation:**\n"

# Observations that are fully determined by the actions and the sandbox's fixed setup, so a fresh run of
# generate_sandbox.py must reproduce them exactly: (domain, trajectory id, turn).
DETERMINISTIC_TURNS = [
    ("terminal", 42, 1),  # printf ... > input.txt && cat input.txt
    ("terminal", 42, 3),  # python3 wc.py input.txt
    ("terminal", 17, 4),  # status-code counts of the pre-existing (seeded) logs
    ("terminal", 17, 7),  # cat of a missing file + exit code
    ("swe", 5, 1),  # git log of the fixed-date history + git status
    ("swe", 5, 6),  # reproduce_issue.py output
    ("swe", 5, 9),  # git diff (blob hashes depend on content only)
    ("swe", 9, 3),  # str_replace with an old_str that does not match
    ("swe", 9, 8),  # the CLI's JSON output after the edits
]


def read_records(domain: str, folder: Path = SAMPLE) -> list[dict]:
    text = (folder / f"{domain}_test.jsonl").read_text(encoding="utf-8")
    lines = text.split("\n")  # JSONL is split on "\n" only: U+2028/U+2029/U+0085 may occur inside strings
    assert lines[-1] == "", "file must end with a newline"
    assert all(line.strip() for line in lines[:-1]), "no blank lines inside the file"
    return [json.loads(line) for line in lines[:-1]]


@pytest.fixture(scope="module")
def records() -> dict[str, list[dict]]:
    return {domain: read_records(domain) for domain in DOMAINS}


def observation(recs: list[dict], traj_id: int, turn: int) -> str:
    for rec in recs:
        if rec["id"] == traj_id and rec["turn_idx"] >= turn:
            return rec["response"][turn - 1]
    raise KeyError((traj_id, turn))


@pytest.mark.parametrize("domain", DOMAINS)
def test_file_exists(domain):
    assert (SAMPLE / f"{domain}_test.jsonl").is_file()


def test_readme_and_scripts_exist():
    for name in ("README.md", "generate_sandbox.py", "build_handwritten.py"):
        assert (SAMPLE / name).is_file(), name


@pytest.mark.parametrize("domain", DOMAINS)
def test_record_fields_and_types(records, domain):
    for rec in records[domain]:
        assert set(rec) == set(FIELDS)
        for field, typ in FIELDS.items():
            assert type(rec[field]) is typ, (field, type(rec[field]))
        assert all(type(p) is str for p in rec["prompt"])
        assert all(type(r) is str for r in rec["response"])


@pytest.mark.parametrize("domain", DOMAINS)
def test_task_names_domain(records, domain):
    for rec in records[domain]:
        assert rec["task"].endswith("/" + domain)
        assert rec["task"].rsplit("/", 1)[-1] == domain


@pytest.mark.parametrize("domain", DOMAINS)
def test_turn_structure(records, domain):
    for rec in records[domain]:
        t = rec["turn_idx"]
        assert 1 <= t <= len(rec["prompt"]) == len(rec["response"])
        assert t <= rec["total_turns"]
        assert rec["current_prompt"] == rec["prompt"][t - 1]
        for i, prompt in enumerate(rec["prompt"], 1):
            assert prompt.startswith(f"### Turn {i}\n**Action:**\n"), prompt[:40]
            assert prompt.split("\n", 2)[2].strip(), "empty action"
        for response in rec["response"]:
            assert response.startswith(MARKER)
            assert response[len(MARKER) :].strip(), "empty observation"


@pytest.mark.parametrize("domain", DOMAINS)
def test_system_prompt(records, domain):
    for rec in records[domain]:
        assert "<predicted_observation>" in rec["system_str"]
        assert len(rec["system_str"]) > 300


@pytest.mark.parametrize("domain", DOMAINS)
def test_trajectories_share_prefixes(records, domain):
    keys = collections.Counter((r["id"], r["turn_idx"]) for r in records[domain])
    by_id = collections.defaultdict(list)
    for rec in records[domain]:
        by_id[rec["id"]].append(rec)
    for recs in by_id.values():
        assert len({r["system_str"] for r in recs}) == 1
        assert len({r["total_turns"] for r in recs}) == 1
        for a, b in itertools.combinations(sorted(recs, key=lambda r: r["turn_idx"]), 2):
            ta, tb = a["turn_idx"], b["turn_idx"]
            assert a["prompt"] == b["prompt"][:ta]
            assert a["response"][: ta - 1] == b["response"][: ta - 1]
            if ta < tb and keys[(a["id"], ta)] == 1:
                assert a["response"][ta - 1] == b["response"][ta - 1]
            if ta == tb:  # the one re-captured Android row: same history, different last observation
                assert a["response"][-1] != b["response"][-1]


@pytest.mark.parametrize("domain", DOMAINS)
def test_enough_records_and_trajectories(records, domain):
    recs = records[domain]
    assert len(recs) >= 8
    assert len({r["id"] for r in recs}) >= 2
    assert any(r["turn_idx"] == 1 for r in recs)
    assert sum(r["turn_idx"] > 1 for r in recs) >= len(recs) // 2
    per_traj = collections.Counter(r["id"] for r in recs)
    assert sum(n >= 2 for n in per_traj.values()) >= 2, "at least two multi-record trajectories"


@pytest.mark.parametrize("domain", DOMAINS)
def test_duplicate_keys(records, domain):
    counts = collections.Counter((r["id"], r["turn_idx"]) for r in records[domain])
    duplicated = {key: n for key, n in counts.items() if n > 1}
    if domain == "android":
        assert len(duplicated) == 1 and list(duplicated.values()) == [2]
    else:
        assert duplicated == {}


def test_search_has_unicode_line_separators(records):
    raw = (SAMPLE / "search_test.jsonl").read_text(encoding="utf-8")
    assert "\u2028" in raw
    assert "\u2029" in raw or "\u0085" in raw
    # splitting on every Unicode line break would break records apart; "\n" must be the only separator
    assert len(raw.splitlines()) > len(raw.split("\n")) - 1
    texts = [obs for rec in records["search"] for obs in rec["response"]]
    assert any("\u2028" in t for t in texts)
    assert any(("\u2029" in t or "\u0085" in t) for t in texts)


def test_total_size_stays_small():
    total = sum((SAMPLE / f"{d}_test.jsonl").stat().st_size for d in DOMAINS)
    assert total < 512_000, total


def test_handwritten_builder_reproduces_committed_files(tmp_path):
    subprocess.run(
        [sys.executable, str(SAMPLE / "build_handwritten.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    for domain in HANDWRITTEN:
        assert (tmp_path / f"{domain}_test.jsonl").read_bytes() == (SAMPLE / f"{domain}_test.jsonl").read_bytes(), (
            domain
        )


def test_sandbox_generator_reproduces_committed_files(tmp_path, records):
    subprocess.run(
        [sys.executable, str(SAMPLE / "generate_sandbox.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    for domain in GENERATED:
        fresh = read_records(domain, tmp_path)
        committed = records[domain]
        assert [(r["id"], r["turn_idx"]) for r in fresh] == [(r["id"], r["turn_idx"]) for r in committed]
        assert [r["prompt"] for r in fresh] == [r["prompt"] for r in committed]
        assert [r["system_str"] for r in fresh] == [r["system_str"] for r in committed]
        assert [r["total_turns"] for r in fresh] == [r["total_turns"] for r in committed]
        # every observation must at least be produced (runtime metadata may differ)
        assert [len(r["response"]) for r in fresh] == [len(r["response"]) for r in committed]
    for domain, traj_id, turn in DETERMINISTIC_TURNS:
        fresh = read_records(domain, tmp_path)
        assert observation(fresh, traj_id, turn) == observation(records[domain], traj_id, turn), (domain, traj_id, turn)

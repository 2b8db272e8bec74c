"""Benchmark records in: read a source (a JSONL file, a directory of them, the bundled sample or a Hugging
Face dataset), validate every record, give each a key and select a subset (`awbench.selection`).

Record-level problems are collected, never raised one at a time, so a user sees everything wrong with a
file at once; only source-level failures (nothing to read at all) raise `DataError` straight away.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from awbench.config import DataSettings
from awbench.data_problems import DataError, Problem
from awbench.domains import DOMAINS, FILE_SUFFIX, domain_of_task
from awbench.hub import load_hub_dataset
from awbench.records import BenchmarkRecord, Sample, content_hash
from awbench.resources import sample_dir
from awbench.selection import select, unmatched_ids

SAMPLE_SOURCE = "sample"
HUB_PREFIX = "hf:"


@dataclass
class LoadedData:
    samples: list[Sample]
    problems: list[Problem]
    source: str
    fingerprint: str
    skipped: int


@dataclass
class _Entry:
    """A valid record and where it was read, before it gets its key."""

    record: BenchmarkRecord
    path: str
    line: int
    origin: str
    unit: str  # "line" or "row", for messages that point at another entry


@dataclass
class _Read:
    entries: list[_Entry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# --- Sources -----------------------------------------------------------------------------------------------


def resolve_source(source: str) -> str:
    """The source as `read_source` will read it: an absolute path, or `hf:` and the dataset reference."""
    kind, location = _classify(source)
    return location if kind != "hub" else HUB_PREFIX + location


def read_source(source: str) -> tuple[list[Sample], list[Problem]]:
    """Every valid record with its key, and every problem found, in read order."""
    kind, location = _classify(source)
    if kind == "hub":
        read = _read_hub(location)
    else:
        # Messages name files as the user spelled the source, not as resolved.
        path = sample_dir() if source == SAMPLE_SOURCE else Path(source).expanduser()
        read = _Read()
        for file in _directory_files(path) if kind == "dir" else [path]:
            part = _read_file(file)
            read.entries += part.entries
            read.problems += part.problems
    samples, duplicates = _assign_keys(read.entries)
    return samples, read.problems + duplicates


def _classify(source: str) -> tuple[Literal["dir", "file", "hub"], str]:
    if source == SAMPLE_SOURCE:
        return "dir", str(sample_dir())
    if source.startswith(HUB_PREFIX):
        ref = os.path.expanduser(source[len(HUB_PREFIX) :])
        if _looks_like_path(ref) and not os.path.exists(ref):
            raise DataError(f"no such file or directory: {ref}")
        return "hub", ref
    path = Path(source).expanduser()
    if path.is_dir():
        return "dir", str(path.resolve())
    if path.exists():
        return "file", str(path.resolve())
    if _looks_like_path(source):
        raise DataError(f"no such file or directory: {source}")
    return "hub", source


def _looks_like_path(text: str) -> bool:
    return "/" in text and text.startswith((".", "/", "~"))


def _directory_files(directory: Path) -> list[Path]:
    """`*_test.jsonl` files in the published domain order, then any others by name."""
    files = [p for p in directory.glob(f"*{FILE_SUFFIX}") if p.is_file()]
    if not files:
        raise DataError(f"no *{FILE_SUFFIX} files in directory {directory}")
    rank = {domain: i for i, domain in enumerate(DOMAINS)}
    return sorted(files, key=lambda p: (rank.get(_file_domain(p), len(rank)), p.name))


def _file_domain(path: Path) -> str | None:
    return path.name[: -len(FILE_SUFFIX)] if path.name.endswith(FILE_SUFFIX) else None


# --- JSONL files -------------------------------------------------------------------------------------------


def _read_file(path: Path) -> _Read:
    label = str(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise DataError(f"cannot read {label}: {e.strerror or e}") from None
    expected_domain = _file_domain(path)
    if expected_domain not in DOMAINS:
        expected_domain = None
    read = _Read()
    offset = 0
    # Split on "\n" only: records carry U+2028, U+0085 and other characters that str.splitlines breaks on.
    for number, raw in enumerate(data.split(b"\n"), start=1):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        obj, problem = _parse_line(raw, number, start, label)
        if problem is not None:
            read.problems.append(problem)
            continue
        entry, problems = _validate(obj, label, number, f"{label}:{number}", "line", expected_domain)
        read.problems += problems
        if entry is not None:
            read.entries.append(entry)
    if not read.entries and not read.problems:
        read.problems.append(Problem(label, None, None, "no records"))
    return read


def _parse_line(raw: bytes, number: int, start: int, label: str) -> tuple[Any, Problem | None]:
    try:
        # A byte-order mark may open the file; json.loads rejects it.
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
        message = f"not valid UTF-8: byte 0x{raw[e.start]:02x} at byte offset {start + e.start}"
        return None, Problem(label, number, None, message)
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        return None, Problem(label, number, None, f"invalid JSON: {e.msg} (column {e.colno})")
    if not isinstance(obj, dict):
        return None, Problem(label, number, None, f"expected a JSON object, got {_type_name(obj)}")
    return obj, None


# --- Hugging Face datasets ---------------------------------------------------------------------------------


def _read_hub(ref: str) -> _Read:
    read = _Read()
    for split, rows in load_hub_dataset(ref).items():
        label = f"{HUB_PREFIX}{ref}[{split}]"
        for number, row in enumerate(rows):
            # Arrow has no "absent": a field missing from a row comes back as null. Treat null as absent so
            # optional fields take their defaults, as they do for file records.
            obj = {k: v for k, v in row.items() if v is not None}
            entry, problems = _validate(obj, label, number, f"{label}:row {number}", "row", None)
            read.problems += problems
            if entry is not None:
                read.entries.append(entry)
    return read


# --- Validation --------------------------------------------------------------------------------------------

# Pydantic's type errors for the record's field types, said the short way: "expected int, got str".
_EXPECTED = {"int_type": "int", "string_type": "str", "list_type": "list"}


def _validate(
    obj: dict[str, Any], path: str, line: int, origin: str, unit: str, expected_domain: str | None
) -> tuple[_Entry | None, list[Problem]]:
    problems: list[Problem] = []
    task = obj.get("task")
    domain = domain_of_task(task) if isinstance(task, str) else None
    if expected_domain and domain in DOMAINS and domain != expected_domain:
        message = f"domain {domain!r} does not match the file name {Path(path).name}"
        problems.append(Problem(path, line, "task", message))
    try:
        record = BenchmarkRecord.model_validate(obj)
    except ValidationError as e:
        return None, _validation_problems(e, path, line) + problems
    if problems:
        return None, problems
    if record.current_prompt is not None and record.current_prompt != record.action:
        message = f"current_prompt differs from prompt[{record.turn_idx - 1}]; the prompt entry is evaluated"
        problems.append(Problem(path, line, "current_prompt", message, "warning"))
    return _Entry(record, path, line, origin, unit), problems


def _validation_problems(error: ValidationError, path: str, line: int) -> list[Problem]:
    by_field: dict[str | None, list[dict[str, Any]]] = {}
    for err in error.errors(include_url=False):
        by_field.setdefault(_error_field(err), []).append(dict(err))
    problems = []
    for name, errors in by_field.items():
        expected = [_EXPECTED.get(err["type"], "") for err in errors]
        if all(expected):
            # A union (`id: int | str`) fails once per member; one message names them all.
            message = f"expected {' or '.join(expected)}, got {_type_name(errors[0]['input'])}"
            problems.append(Problem(path, line, name, message))
        else:
            problems += [Problem(path, line, name, _error_message(err)) for err in errors]
    return problems


def _error_field(err: Mapping[str, Any]) -> str | None:
    loc = err["loc"]
    if not loc:
        # A whole-record check; its message starts with the field it is about.
        first_word = _error_message(err).split(" ", 1)[0]
        return first_word if first_word in BenchmarkRecord.model_fields else None
    # Strings after the field name are union members ("int", "str"), not part of the path.
    return ".".join([str(loc[0])] + [str(part) for part in loc[1:] if isinstance(part, int)])


def _error_message(err: Mapping[str, Any]) -> str:
    if err["type"] == "missing":
        return "missing field"
    if err["type"] == "value_error":
        return str(err["ctx"]["error"])
    return str(err["msg"])


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


# --- Keys --------------------------------------------------------------------------------------------------


def _assign_keys(entries: list[_Entry]) -> tuple[list[Sample], list[Problem]]:
    """`{domain}/{id}/{turn_idx}`; repeats get `#2`, `#3`... in read order, so every sample stays addressable."""
    first: dict[str, _Entry] = {}
    seen: dict[str, int] = {}
    samples, problems = [], []
    for entry in entries:
        base = entry.record.base_key()
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base}#{seen[base]}"
        if base in first:
            other = first[base]
            where = f"{other.unit} {other.line}" if other.path == entry.path else other.origin
            message = f"duplicate key {base}: also at {where}; evaluated as {key}"
            problems.append(Problem(entry.path, entry.line, None, message, "warning"))
        else:
            first[base] = entry
        samples.append(Sample(key=key, record=entry.record, origin=entry.origin))
    return samples, problems


# --- Loading -----------------------------------------------------------------------------------------------


def load_samples(settings: DataSettings) -> LoadedData:
    """Read and select. Any invalid record is an error unless `skip_invalid`, which leaves it out."""
    source = resolve_source(settings.source)
    samples, problems = read_source(settings.source)
    errors = [p for p in problems if p.severity == "error"]
    bad_records = {(p.path, p.line) for p in errors if p.line is not None}
    if errors and not settings.skip_invalid:
        raise DataError(
            f"{settings.source}: {len(errors)} error(s) in the data; fix them, or pass --skip-invalid to leave "
            f"the invalid records out",
            problems=errors,
        )
    selected = select(samples, settings)
    problems += unmatched_ids(samples, settings.ids or [], source)
    fingerprint = content_hash([[s.key, s.hash] for s in selected])
    return LoadedData(selected, problems, source, fingerprint, skipped=len(bad_records))

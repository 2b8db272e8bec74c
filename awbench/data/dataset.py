"""Benchmark records in: read a source (a JSONL file, a directory of them, the bundled sample or a Hugging
Face dataset), validate every record, give each a key and select a subset (`awbench.data.selection`).

Record-level problems are collected, never raised one at a time, so a user sees everything wrong with a
file at once; only source-level failures (nothing to read at all) raise `DataError` straight away. An
"error" refuses the record, a "warning" is shown on every run, a "note" (a repeated sample key, expected
and evaluated) only by `awbench data validate | info`. The README's Data section lists every check.

Loading the full benchmark (about 400 MB) takes about as long as a plain `json.loads` loop over its lines
(`bench/load_speed.py`): lines are read by jiter where it can, and each sample's hash is computed once,
while its text is checked, without `json.dumps` (`awbench.records.record_hash`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from awbench.config import DataSettings
from awbench.data.hub import load_hub_dataset
from awbench.data.json_lines import parse_line, type_name, value_problems
from awbench.data.problems import DataError, Problem
from awbench.data.selection import select, unmatched_ids
from awbench.domains import DOMAINS, FILE_SUFFIX, OBSERVATION_MARKER, domain_of_task
from awbench.files import open_input
from awbench.records import BenchmarkRecord, Sample, content_hash, record_hash
from awbench.resources import sample_dir
from awbench.suggest import close_names, suggestion

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
    hash: str
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
        if ref.startswith((".", "/", "~", "\\")) and not os.path.exists(ref):
            raise DataError(f"no such file or directory: {ref}")
        return "hub", ref
    path = Path(source).expanduser()
    if path.is_dir():
        return "dir", str(path.resolve())
    if path.exists():
        return "file", str(path.resolve())
    missing = _missing_path(source)
    if missing:
        raise DataError(missing)
    return "hub", source


# A Hugging Face Hub id: `owner/name`, each of letters, digits, "-", "_" and "." (or a bare legacy `name`).
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*")


def _missing_path(source: str) -> str | None:
    """The message for a source that does not exist and is taken for a local path, so that it is never
    looked up on the Hub; None for what may be a Hub id. A local path is one that

    - starts with ".", "/", "~" or "\\", or ends in ".jsonl" or ".json";
    - has a path separator but is not of the Hub id form `owner/name` (so `a/b/c`, `a\\b`, `C:/x`);
    - is of that form, but `owner` is a local directory (`data/AgentWorldBnch` beside a `data/` folder);
    - is a single word close to `sample`, the bundled sample (`sampel`, `Sample`, `samples`).

    `hf:NAME` always means the Hub, for a dataset whose id would be taken for a path.
    """
    message = f"no such file or directory: {source}"
    if source.startswith((".", "/", "~", "\\")) or source.lower().endswith((".jsonl", ".json")):
        return message + _did_you_mean(source)
    if "/" in source or "\\" in source:
        if not _HUB_ID.fullmatch(source):
            return message + _did_you_mean(source)
        owner = source.split("/", 1)[0]
        if Path(owner).is_dir():
            return (
                f"{message}{_did_you_mean(source)} (taken for a path since {owner}/ is a local directory; for "
                f"the Hugging Face dataset {source}, pass hf:{source})"
            )
        return None
    if close_names(source.lower(), [SAMPLE_SOURCE], n=1, cutoff=0.8):
        return (
            f"{message}; did you mean 'sample', the sample bundled with awbench? (For a Hugging Face dataset "
            f"of this name, pass hf:{source})"
        )
    return None


def _did_you_mean(source: str) -> str:
    """ "; did you mean './data/AgentWorldBench'?" when the missing name's folder has a close one."""
    trimmed = source.rstrip("/\\") or source
    folder, name = os.path.split(trimmed)
    try:
        names = os.listdir(os.path.expanduser(folder or "."))
    except OSError:
        return ""
    return suggestion([os.path.join(folder, close) for close in close_names(name, names, n=1, cutoff=0.8)])


def _directory_files(directory: Path) -> list[Path]:
    """`*_test.jsonl` files in the published domain order, then any others by name; a FIFO, a device or a link
    leading nowhere of that name too, which reading refuses (`open_input`) rather than leave its domain out."""
    files = [p for p in directory.glob(f"*{FILE_SUFFIX}") if not p.is_dir()]
    if not files:
        raise DataError(f"no *{FILE_SUFFIX} files in directory {directory}")
    rank: dict[str | None, int] = {domain: i for i, domain in enumerate(DOMAINS)}
    return sorted(files, key=lambda p: (rank.get(_file_domain(p), len(rank)), p.name))


def _file_domain(path: Path) -> str | None:
    return path.name[: -len(FILE_SUFFIX)] if path.name.endswith(FILE_SUFFIX) else None


# --- JSONL files -------------------------------------------------------------------------------------------


def _read_file(path: Path) -> _Read:
    label = str(path)
    expected_domain = _file_domain(path)
    if expected_domain not in DOMAINS:
        expected_domain = None
    read = _Read()
    shared: dict[str, str] = {}
    encoded: dict[str, bytes] = {}
    number, offset = 0, 0  # the line's number, and the byte offset of the next line
    try:
        with open_input(path, buffering=READ_BUFFER) as file:
            # Line by line, so that the file is never held whole; a binary file splits on "\n" only, as it
            # must: records carry U+2028, U+0085 and other characters that str.splitlines breaks on. The line
            # keeps its "\n" (JSON whitespace; cutting it off would copy the line), and no other reference to
            # it is kept (as enumerate's tuple would), so the parser may drop it before it builds the record
            # (a long line: `parse_line`).
            for raw in file:
                number += 1
                start, offset = offset, offset + len(raw)
                if raw.isspace():
                    continue
                line, raw = [raw], b""
                obj, parse_problems = parse_line(line, number, start, label)
                read.problems += parse_problems
                if obj is None:
                    continue
                _share_turns(obj, shared)
                if (
                    len(encoded) > ENCODED_KEPT
                ):  # the turns of the trajectories read last are what the next records repeat
                    encoded.clear()
                entry, problems = _validate(obj, label, number, f"{label}:{number}", "line", expected_domain, encoded)
                read.problems += problems
                if entry is not None and not parse_problems:
                    read.entries.append(entry)
    except OSError as e:
        raise DataError(f"cannot read {label}: {e.strerror or e}") from None
    if not read.entries and not read.problems:
        read.problems.append(Problem(label, None, None, "no records"))
    return read


ENCODED_KEPT = 4096  # JSON forms of turn strings kept for hashing the next records: a few trajectories' worth
READ_BUFFER = 1 << 20  # lines of tens of kB are read four times as fast as with the default 8 kB


def _share_turns(obj: dict[str, Any], shared: dict[str, str]) -> None:
    """The turns of one trajectory repeat in each of its evaluated samples (every record holds the history so
    far): one string object for each distinct text, so the data is held in memory about once, not once per
    sample."""
    for name in ("prompt", "response"):
        turns = obj.get(name)
        if type(turns) is list:
            obj[name] = [shared.setdefault(t, t) if type(t) is str else t for t in turns]
    if type(obj.get("system_str")) is str:
        obj["system_str"] = shared.setdefault(obj["system_str"], obj["system_str"])


# --- Hugging Face datasets ---------------------------------------------------------------------------------


def _read_hub(ref: str) -> _Read:
    read = _Read()
    for split, rows in load_hub_dataset(ref).items():
        label = f"{HUB_PREFIX}{ref}[{split}]"
        for number, row in enumerate(rows):
            # Arrow has no "absent": a field missing from a row comes back as null. Treat null as absent, so
            # that a missing field is reported as missing, as it is for file records.
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
    obj: dict[str, Any],
    path: str,
    line: int,
    origin: str,
    unit: str,
    expected_domain: str | None,
    encoded: dict[str, bytes] | None = None,
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
        return None, _validation_problems(e, path, line) + problems + value_problems(obj.items(), path, line)
    problems += value_problems((record.model_extra or {}).items(), path, line)
    try:
        # Encoding every string (as hashing does) is what finds text that is not valid Unicode: the fields
        # are looked through one by one only when that fails.
        digest = record_hash(record, encoded)
    except UnicodeEncodeError:
        digest = ""
        fields = [(name, getattr(record, name)) for name in BenchmarkRecord.model_fields]
        problems += value_problems(fields, path, line)
    problems += _content_problems(record, path, line)
    if not digest or any(p.severity == "error" for p in problems):
        return None, problems
    return _Entry(record, digest, path, line, origin, unit), problems


# The heading the released files open each action with.
_ACTION_HEADING = re.compile(r"(?:### Turn \d+\s*)?\*\*Action:\*\*")
_NOT_SPACE = re.compile(r"\S")  # the whitespace str.strip removes


def _content_problems(record: BenchmarkRecord, path: str, line: int) -> list[Problem]:
    """What a valid record may still get wrong about its current turn."""
    problems = []
    turn = record.turn_idx - 1
    action, observation = record.action, record.ground_truth
    start = _text_start(action)
    heading = None if start is None else _ACTION_HEADING.match(action, start)
    if start is None or (heading and _text_start(action, heading.end()) is None):
        message = "the current action is empty" + ("" if start is None else " apart from its heading")
        problems.append(Problem(path, line, f"prompt.{turn}", message))
    start = _text_start(observation)
    if start is None or (
        observation.startswith(OBSERVATION_MARKER, start)
        and _text_start(observation, start + len(OBSERVATION_MARKER)) is None
    ):
        message = "the ground truth (the current turn's observation) is empty"
        message += "" if start is None else f" apart from the {OBSERVATION_MARKER} marker"
        problems.append(Problem(path, line, f"response.{turn}", message, "warning"))
    if record.total_turns < record.turn_idx:
        message = f"total_turns {record.total_turns} is less than turn_idx {record.turn_idx}"
        problems.append(Problem(path, line, "total_turns", message, "warning"))
    if record.current_prompt != record.action:
        message = f"current_prompt differs from prompt[{turn}]; the prompt entry is evaluated"
        problems.append(Problem(path, line, "current_prompt", message, "warning"))
    return problems


def _text_start(text: str, position: int = 0) -> int | None:
    """Where the first character after `position` that is not whitespace is; None if there is none. Searched
    rather than stripped, so that a long text is not copied."""
    found = _NOT_SPACE.search(text, position)
    return None if found is None else found.start()


def _validation_problems(error: ValidationError, path: str, line: int) -> list[Problem]:
    by_field: dict[str | None, list[dict[str, Any]]] = {}
    for err in error.errors(include_url=False):
        by_field.setdefault(_error_field(err), []).append(dict(err))
    problems = []
    for name, errors in by_field.items():
        expected = [_EXPECTED.get(err["type"], "") for err in errors]
        if all(expected):
            # A union (`id: int | str`) fails once per member; one message names them all.
            message = f"expected {' or '.join(expected)}, got {type_name(errors[0]['input'])}"
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


# --- Keys --------------------------------------------------------------------------------------------------


def _assign_keys(entries: list[_Entry]) -> tuple[list[Sample], list[Problem]]:
    """`{domain}/{id}/{turn_idx}`; repeats of a key with another record get `#2`, `#3`... in read order, so every
    sample stays addressable. A row alike in every field to an earlier one (files joined with an overlap) is the
    same sample: taken once, with a warning, and counted in the sample's `repeats` (the reference's eval.py
    counts every row)."""
    first: dict[str, _Entry] = {}
    alike: dict[tuple[str, str], _Entry] = {}  # (key, record hash) -> its first row
    seen: dict[str, int] = {}
    places: dict[tuple[str, str], int] = {}  # (key, record hash) -> its first row's place in `samples`
    samples: list[Sample] = []
    problems: list[Problem] = []
    for entry in entries:
        base = entry.record.base_key()
        earlier = alike.setdefault((base, entry.hash), entry)
        if earlier is not entry and earlier.record.model_extra == entry.record.model_extra:
            message = (
                f"repeats {_where(earlier, entry)} (sample {base}): taken once, where the reference's eval.py "
                "counts every row (its numbers will differ)"
            )
            problems.append(Problem(entry.path, entry.line, None, message, "warning"))
            place = places[base, entry.hash]
            samples[place] = replace(samples[place], repeats=samples[place].repeats + 1)
            continue
        seen[base] = seen.get(base, 0) + 1
        key = base if seen[base] == 1 else f"{base}#{seen[base]}"
        if base in first:
            message = f"duplicate key {base}: also at {_where(first[base], entry)}; evaluated as {key}"
            # Expected (the released Android file has one) and handled: every row is evaluated.
            problems.append(Problem(entry.path, entry.line, None, message, "note"))
        else:
            first[base] = entry
        places.setdefault((base, entry.hash), len(samples))
        samples.append(Sample(key=key, record=entry.record, origin=entry.origin, hash=entry.hash))
    return samples, problems


def _where(other: _Entry, entry: _Entry) -> str:
    """Where `other` was read, as a message about `entry` names it: its line (or row) in the same file."""
    return f"{other.unit} {other.line}" if other.path == entry.path else other.origin


def conflicting_rows(samples: list[Sample], label: str) -> list[Problem]:
    """The rows of a file another tool wrote about the benchmark (a benchmark record and the tool's fields on each
    line: the reference script's predictions.jsonl and judged.jsonl) that repeat a sample with other values of
    the tool's fields (another generation or verdict): which to take is not known, an error naming both lines
    (`origin`: `path:line`). A sample is its key and benchmark fields: the Android file's repeated key is two
    samples, their records differ; a row alike in every field the loader takes once (`_assign_keys`)."""
    first: dict[tuple[str, str], Sample] = {}
    problems = []
    for sample in samples:
        base = sample.record.base_key()
        earlier = first.setdefault((base, sample.hash), sample)
        if earlier is sample:
            continue
        ours, theirs = sample.record.model_extra or {}, earlier.record.model_extra or {}
        differ = sorted(k for k in ours.keys() | theirs.keys() if ours.get(k, ...) != theirs.get(k, ...))
        line, earlier_line = (int(s.origin.rsplit(":", 1)[1]) for s in (sample, earlier))
        message = (
            f"sample {base} is on line {earlier_line} too, with other values ({', '.join(differ)}): which to "
            "take is not known; remove the row that is not wanted"
        )
        problems.append(Problem(label, line, None, message))
    return problems


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

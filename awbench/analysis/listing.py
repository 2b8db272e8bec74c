"""`awbench ls`: the runs under some directories, each with its model, judges, state, Overall and finish time,
read from run.json, scores.json and .lock only (no records, no data), so that it is quick on a results
directory of any size; or, given one run, its sample keys with their status, read from its records."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from awbench.records import SCHEMA_VERSION, JudgmentRecord, PredictionRecord
from awbench.run.scoring import GenKey
from awbench.run.store import RunLock, RunManifest, RunStore, StoreError, closest_runs, named_by_awbench

RunState = Literal["running", "complete", "incomplete", "not scored"]


class RunEntry(BaseModel):
    run: str  # the run's directory name
    path: str
    model: str
    judges: list[str]  # judge ids, the primary first
    state: RunState  # running: a live process holds the run; otherwise its primary judge's scores.json says
    judged: int | None  # generations of the selection with a final outcome (scores.json), None when not scored
    selected: int | None
    holder: str | None  # running: the process that holds the run's lock
    overall: float | None  # the primary judge's Overall (macro), as `awbench score` prints it
    finished_at: datetime | None
    partial: str | None = None  # "partial (2 of 7 domains)": no Overall
    stopped: str | None = None  # incomplete: why judging stopped ("stopped by --max-cost"), when known

    def state_label(self) -> str:
        """ "running (process 12 on host, started ...)", "complete", "incomplete (11 of 65 judged)" (", stopped by
        --max-cost" inside the brackets when it was), "not scored"."""
        if self.state == "running":
            return f"running ({self.holder})"
        if self.state == "incomplete":
            return f"incomplete ({self.judged} of {self.selected} judged{', ' + self.stopped if self.stopped else ''})"
        return self.state


class RunList(BaseModel):
    """What `awbench ls --format json` prints."""

    schema_version: int = SCHEMA_VERSION
    runs: list[RunEntry]


def locate_runs(given: Iterable[str], output: Path) -> list[Path]:
    """What the analysis commands take: runs and directories of runs, each as a path or as a name under
    `output` (a path that exists wins); nothing given means `output`."""
    given = list(given)
    if not given:
        return [output]
    found = []
    for item in given:
        path, under_output = Path(item), output / item
        if path.is_dir():
            found.append(path)
        elif under_output.is_dir():
            found.append(under_output)
        else:
            raise StoreError(
                f"no run or directory of runs {item!r}: neither {path} nor {under_output} is a directory"
                + closest_runs(item, output),
                key="unknown_run",
            )
    return found


def run_dirs(root: Path) -> list[Path]:
    """The runs in `root`: the run itself, or every run below it, in path order; StoreError when `root` is no
    directory (a --output that does not exist holds no runs, and saying so would hide the mistyped path)."""
    if not root.is_dir():
        raise StoreError(f"{root} is not a directory")
    if (root / "run.json").exists():
        return [root]
    return [manifest.parent for manifest in sorted(root.rglob("run.json"))]


def run_entry(store: RunStore) -> RunEntry:
    manifest = store.read_manifest()
    scores = store.read_scores()
    holder = RunLock(store.path).holder()
    completeness = scores.completeness if scores else None
    state: RunState = (
        "running"
        if holder
        else "not scored"
        if completeness is None
        else "complete"
        if completeness.complete
        else "incomplete"
    )
    return RunEntry(
        run=store.name,
        path=str(store.path),
        model=manifest.config.model.model,
        judges=[evaluation.id for evaluation in store.evaluations(manifest)],
        state=state,
        judged=completeness.judged if completeness else None,
        selected=completeness.selected if completeness else None,
        holder=holder,
        overall=scores.overall if scores else None,
        finished_at=manifest.finished_at,
        partial=scores.partial if scores else None,
        stopped=scores.stopped if scores else None,
    )


def list_runs(roots: Iterable[Path]) -> tuple[RunList, list[str]]:
    """Every run under `roots` (each once), and notes on the directories that could not be read, and why."""
    entries: dict[Path, RunEntry] = {}
    notes: list[str] = []
    for root in roots:
        for run_dir in run_dirs(root):
            where = run_dir.resolve()
            if where in entries:
                continue
            if not named_by_awbench(where.name):
                notes.append(f"skipped {where.parent}: a run named {where.name!r} was not written by awbench")
                continue
            try:
                entries[where] = run_entry(RunStore(run_dir))
            except StoreError as error:
                notes.append(f"skipped {run_dir}: {error}")
    return RunList(runs=list(entries.values())), notes


# --- One run's samples ---------------------------------------------------------------------------------------

SampleStatus = Literal["pending", "predicted", "scored", "failed"]
SAMPLE_STATUSES: tuple[SampleStatus, ...] = ("scored", "failed", "predicted", "pending")


class SampleEntry(BaseModel):
    key: str
    # failed: a generation failed or went unscored; scored: every generation has a score; predicted: not judged
    # yet; pending: no generation predicted yet (the run was stopped, or is still running)
    status: SampleStatus


class SampleKeyList(BaseModel):
    """What `awbench ls RUN --format json` prints: every sample of the run's selection, in key order."""

    schema_version: int = SCHEMA_VERSION
    run: str
    judge: str | None  # the evaluation whose judgments say scored or failed: the run's primary
    samples: list[SampleEntry]


def sample_statuses(
    keys: Iterable[str], predictions: Mapping[GenKey, PredictionRecord], judgments: Mapping[GenKey, JudgmentRecord]
) -> list[SampleEntry]:
    """Each sample's status over its generations, in natural key order (`os/2/10` after `os/2/9`); a sample of
    `keys` with no prediction is pending."""
    statuses: dict[str, SampleStatus] = dict.fromkeys(keys, "pending")
    for gen_key, prediction in predictions.items():
        judgment = judgments.get(gen_key)
        if prediction.failed or (judgment is not None and judgment.score is None):
            status: SampleStatus = "failed"
        else:
            status = "scored" if judgment is not None else "predicted"
        before = statuses.get(prediction.key)
        if before in (None, "pending") or before == status or status == "failed":
            statuses[prediction.key] = status
        elif before != "failed":  # one generation scored, another not judged yet
            statuses[prediction.key] = "predicted"
    return [SampleEntry(key=key, status=statuses[key]) for key in sorted(statuses, key=_natural)]


def _natural(key: str) -> list[tuple[int, int | str]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", key) if part]


def list_samples(store: RunStore, manifest: RunManifest, keys: Iterable[str]) -> SampleKeyList:
    """`keys`: the run's selection (`run.json`'s data, reloaded: `analysis.runs.run_sample_keys`)."""
    primary = next(iter(store.evaluations(manifest)), None)
    judgments = primary.judgments.load() if primary is not None else {}
    return SampleKeyList(
        run=store.name,
        judge=primary.id if primary is not None else None,
        samples=sample_statuses(keys, store.predictions.load(), judgments),
    )

"""`awbench ls`: the runs under some directories, each with its model, judges, state, Overall and finish time.
Read from run.json, scores.json and .lock only (no records, no data), so that it is quick on a results
directory of any size."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from awbench.records import SCHEMA_VERSION
from awbench.run.scoring import ScoresFile
from awbench.run.store import RunLock, RunStore, StoreError, closest_runs, named_by_awbench

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

    def state_label(self) -> str:
        """ "running (process 12 on host, started ...)", "complete", "incomplete (11 of 65 judged)", "not scored"."""
        if self.state == "running":
            return f"running ({self.holder})"
        if self.state == "incomplete":
            return f"incomplete ({self.judged} of {self.selected} judged)"
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
                + closest_runs(item, output)
            )
    return found


def run_dirs(root: Path) -> list[Path]:
    """The runs in `root`: the run itself, or every run below it, in path order."""
    if (root / "run.json").exists():
        return [root]
    return [manifest.parent for manifest in sorted(root.rglob("run.json"))]


def run_entry(store: RunStore) -> RunEntry:
    manifest = store.read_manifest()
    raw = store.read_scores_json()
    try:
        scores = ScoresFile.model_validate(raw) if raw else None
    except ValidationError as error:
        first = error.errors()[0]
        raise StoreError(f"{store.scores_path}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
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

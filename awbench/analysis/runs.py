"""Finished runs on disk: finding the scored ones, and reading a whole run once (`RunData`: records, samples,
every judge evaluation) with the per-sample points and intervals behind its numbers. Shared by
`leaderboard`, `compare`, `show` and `report`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from awbench.analysis.listing import run_dirs
from awbench.analysis.options import OVERALL
from awbench.analysis.stats import Clustered, bootstrap_means, interval, too_few, too_few_overall
from awbench.config import DataSettings
from awbench.data.dataset import LoadedData, load_samples
from awbench.domains import DIMENSIONS, DOMAINS
from awbench.records import JudgeKind, JudgmentRecord, PredictionRecord, Sample
from awbench.run.pipeline import run_samples
from awbench.run.scoring import (
    Completeness,
    FailurePolicy,
    GenKey,
    Point,
    ScoresFile,
    resume_advice,
    sample_points,
    score_table,
    variance_components,
)
from awbench.run.store import JudgeInfo, RunManifest, RunStore, StoreError, match_judge, named_by_awbench
from awbench.run.variance import VarianceComponents

Points = dict[str, list[Point]]
Intervals = dict[str, dict[str, tuple[float, float]]]  # per domain and overall: column -> (low, high)


def discover_runs(paths: Iterable[Path]) -> tuple[list[RunStore], list[str]]:
    """Scored runs under the given directories (or the runs themselves), and notes on what was skipped."""
    found: dict[Path, RunStore] = {}
    notes: list[str] = []
    for root in paths:
        for run_dir in run_dirs(root):
            if not (run_dir / "scores.json").exists():
                notes.append(f"skipped {run_dir}: no scores.json yet; {resume_advice(run_dir)}")
                continue
            where = run_dir.resolve()
            if not named_by_awbench(where.name):
                # Refused rather than shown: a report puts the name in front of whoever reads it.
                raise StoreError(
                    f"{where.parent}: the run {where.name!r} is not named as awbench names runs (printable, "
                    "no '/', not starting with '.'): it was not written by awbench, and is not read"
                )
            found.setdefault(where, RunStore(run_dir))
    return list(found.values()), notes


@lru_cache(maxsize=4)
def _load(settings_json: str) -> LoadedData:
    return load_samples(DataSettings.model_validate_json(settings_json))


def cached_load(settings: DataSettings) -> LoadedData:
    """Runs on the same data settings share one load: a leaderboard of many runs reads the data once."""
    return _load(settings.model_dump_json())


@dataclass
class Judged:
    """One judge evaluation of a run."""

    info: JudgeInfo
    scores: ScoresFile | None
    judgments: dict[GenKey, JudgmentRecord]

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def kind(self) -> JudgeKind:
        return self.info.kind


@dataclass
class RunData:
    """One run's records, samples and evaluations, each file read once: what statistics, comparisons and
    sample views work from. Evaluations are keyed by judge id, the primary first."""

    store: RunStore
    manifest: RunManifest
    predictions: dict[GenKey, PredictionRecord]
    samples: dict[str, Sample]
    evaluations: dict[str, Judged]
    _points: dict[str, Points] = field(default_factory=dict, repr=False)
    _intervals: dict[tuple[str, int, int], Intervals] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.store.name

    @property
    def generations(self) -> int:
        return self.manifest.config.model.generations

    @property
    def policy(self) -> FailurePolicy:
        return self.manifest.config.scoring.failure_policy

    @property
    def primary(self) -> str | None:
        return next(iter(self.evaluations), None)

    def evaluation(self, judge: str | None = None) -> Judged:
        """By judge id, id prefix or kind (`llm`, `rules`) when that is unambiguous; the primary by default."""
        return self.evaluations[match_judge(self.name, {i: e.kind for i, e in self.evaluations.items()}, judge)]

    def prediction(self, key: str, generation: int = 0) -> PredictionRecord | None:
        return self.predictions.get((key, generation))

    def judgment(self, judge: str, key: str, generation: int = 0) -> JudgmentRecord | None:
        return self.evaluation(judge).judgments.get((key, generation))

    def points(self, judge: str) -> Points:
        """The points behind the headline numbers (`scoring.sample_points`), keyed like the samples; `judge`
        as `evaluation` takes it."""
        evaluation = self.evaluation(judge)
        judge_id = evaluation.id
        if judge_id not in self._points:
            keys = [(s.key, s.domain) for s in self.samples.values()]
            self._points[judge_id] = sample_points(
                evaluation.kind, keys, self.predictions, evaluation.judgments, self.policy, self.generations
            )
        return self._points[judge_id]

    def completeness(self, judge: str) -> Completeness:
        """How many generations of the run's selection `judge` (as `evaluation` takes it) has judged, from the
        records themselves (a scores.json may be older)."""
        evaluation = self.evaluation(judge)
        keys = [(s.key, s.domain) for s in self.samples.values()]
        return score_table(
            evaluation.kind, keys, self.predictions, evaluation.judgments, self.policy, self.generations
        ).completeness(evaluation.info.stopped)

    def variance(self, judge: str) -> VarianceComponents | None:
        """The variance components of `judge`'s scores (`awbench.run.variance`), from the records themselves."""
        evaluation = self.evaluation(judge)
        keys = [(s.key, s.domain, self.trajectories[s.key]) for s in self.samples.values()]
        return variance_components(
            evaluation.kind,
            keys,
            self.predictions,
            evaluation.judgments,
            self.policy,
            self.generations,
            self.manifest.config.model.deterministic,
        )

    @cached_property
    def trajectories(self) -> dict[str, str]:
        return {key: sample.record.trajectory_id for key, sample in self.samples.items()}


def run_sample_keys(store: RunStore, manifest: RunManifest) -> list[str]:
    """The keys of a run's selection, in its data's order."""
    return [sample.key for sample in run_samples(store, load=cached_load, manifest=manifest)]


def load_run_data(store: RunStore) -> RunData:
    manifest = store.read_manifest()
    samples = {s.key: s for s in run_samples(store, load=cached_load, manifest=manifest)}
    evaluations = {}
    for evaluation in store.evaluations(manifest):
        evaluations[evaluation.id] = Judged(
            info=evaluation.read_info(),
            scores=evaluation.read_scores(),
            judgments=evaluation.judgments.load(),
        )
    return RunData(
        store=store, manifest=manifest, predictions=store.predictions.load(), samples=samples, evaluations=evaluations
    )


def point_summary(points: Points) -> dict[str, tuple[int, float, dict[str, float]]]:
    """(n, mean score, mean per dimension) per domain, then, when all seven have samples, the macro mean over
    domains as `OVERALL` (with fewer there is no Overall: `domains.partial_label`)."""
    out: dict[str, tuple[int, float, dict[str, float]]] = {}
    for domain in DOMAINS:
        pts = points.get(domain)
        if not pts:
            continue
        dims = {d: float(np.mean(v)) for d in DIMENSIONS if (v := [p[2][d] for p in pts if d in p[2]])}
        out[domain] = (len(pts), float(np.mean([p[1] for p in pts])), dims)
    if len(out) == len(DOMAINS):
        rows = list(out.values())
        dims = {d: float(np.mean(v)) for d in DIMENSIONS if (v := [r[2][d] for r in rows if d in r[2]])}
        out[OVERALL] = (sum(r[0] for r in rows), float(np.mean([r[1] for r in rows])), dims)
    return out


def point_matrix(points: Points, trajectories: dict[str, str]) -> dict[str, Clustered]:
    """Per domain, rows of [score, *dimensions] (NaN where a dimension is missing) with their trajectories."""
    return {
        domain: Clustered.of(
            [[score, *(dims.get(d, np.nan) for d in DIMENSIONS)] for _, score, dims in points[domain]],
            [trajectories[key] for key, _, _ in points[domain]],
        )
        for domain in DOMAINS
        if points.get(domain)
    }


def run_intervals(data: RunData, judge_id: str, resamples: int, seed: int) -> Intervals:
    """95% intervals per domain and overall, for the total ("score") and each dimension. Whole trajectories
    are resampled, each sample with its score as it enters the means (the mean of its K generations and their
    verdicts, whose noise it carries: `stats.bootstrap_means`). A domain with too few trajectories has none, nor
    has the Overall then (`stats.too_few`, `stats.too_few_overall`). Kept in `data`: a report's two leaderboards
    and its run sections ask for the same ones."""
    if (judge_id, resamples, seed) in data._intervals:
        return data._intervals[(judge_id, resamples, seed)]
    matrix = point_matrix(data.points(judge_id), data.trajectories)
    reps = bootstrap_means(matrix, resamples, seed)
    trajectories = {name: len(set(m.clusters)) for name, m in matrix.items()}
    out: Intervals = {}
    for name, rep in reps.items():
        if too_few_overall(trajectories.get(d, 0) for d in DOMAINS) if name == OVERALL else too_few(trajectories[name]):
            continue
        lo, hi = interval(rep)
        out[name] = {col: (float(lo[i]), float(hi[i])) for i, col in enumerate(("score", *DIMENSIONS))}
    data._intervals[(judge_id, resamples, seed)] = out
    return out

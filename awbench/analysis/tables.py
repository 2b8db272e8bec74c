"""Runs as pandas DataFrames, for notebooks: every generation's result, the leaderboard and a paired comparison.

The numbers are those of the commands (`awbench show`, `leaderboard`, `compare`), from the same functions; only
the shape is new. Runs are given as the commands take them: run directories, directories of runs, or RunData
already loaded; runs without scores are left out with a warning (`warnings.warn`), as the commands note them.
pandas is imported here only, so that no command pays for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from awbench.analysis.compare import compare_runs
from awbench.analysis.leaderboard import build_leaderboard
from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL, View
from awbench.analysis.runs import RunData, discover_runs, load_run_data
from awbench.domains import DIMENSIONS
from awbench.run.scoring import generation_outcome, generation_points
from awbench.run.store import RunStore

Runs = str | Path | RunData | Iterable[str | Path | RunData]
SAMPLE_COLUMNS = ["run", "judge", "domain", "key", "trajectory", "turn", "generation", "status", "score"]
SAMPLE_COLUMNS += [*DIMENSIONS, "flags"]


def load_runs(runs: Runs) -> list[RunData]:
    """Every scored run among `runs`, each read once, in the order given (a directory's runs by name)."""
    items = [runs] if isinstance(runs, (str, Path, RunData)) else list(runs)
    loaded: list[RunData] = []
    for item in items:
        if isinstance(item, RunData):
            loaded.append(item)
            continue
        stores, notes = discover_runs([Path(item)])
        for note in notes:
            warnings.warn(note, stacklevel=3)
        loaded += [load_run_data(store) for store in stores]
    return loaded


def _run(run: str | Path | RunData) -> RunData:
    return run if isinstance(run, RunData) else load_run_data(RunStore(Path(run)))


def _stores(runs: Runs) -> tuple[list[RunStore], dict[Path, RunData]]:
    datas = load_runs(runs)
    return [d.store for d in datas], {d.store.path.resolve(): d for d in datas}


def samples(runs: Runs, judge: str | None = None) -> pd.DataFrame:
    """One row per run, sample and generation (by domain, in the data's order): `judge` (the evaluation's id), `domain`,
    `key`, `trajectory`, `turn`, `generation`, `status` (scored, failed, unscored or pending: not judged yet),
    `score` and the five dimensions on 0..100 as they enter the means (a failed generation 0 under the failure
    policy `minimum`, NaN under `exclude`; NaN when unscored or pending, and the dimensions under the rule
    judge), `flags` (the prediction's and the judgment's, comma-separated). `judge`: which evaluation of each
    run, as `--judge` takes it (default: each run's primary)."""
    rows = []
    for data in load_runs(runs):
        evaluation = data.evaluation(judge)
        keys = [(s.key, s.domain) for s in data.samples.values()]
        points = generation_points(
            evaluation.kind, keys, data.predictions, evaluation.judgments, data.policy, data.generations
        )
        for domain_points in points.values():
            for key, per_generation in domain_points:
                record = data.samples[key].record
                for g, point in enumerate(per_generation):
                    prediction, judgment = data.predictions.get((key, g)), evaluation.judgments.get((key, g))
                    flags = [*(prediction.flags if prediction else []), *(judgment.flags if judgment else [])]
                    score, dimensions = point if point is not None else (None, {})
                    rows.append(
                        [data.name, evaluation.id, record.domain, key, record.trajectory_id, record.turn_idx, g]
                        + [generation_outcome(prediction, judgment), score]
                        + [dimensions.get(d) for d in DIMENSIONS]
                        + [", ".join(dict.fromkeys(flags))]
                    )
    frame = pd.DataFrame(rows, columns=SAMPLE_COLUMNS)
    return frame.astype(
        {"turn": "int64", "generation": "int64", "score": "float64", **dict.fromkeys(DIMENSIONS, "float64")}
    )


def leaderboard_table(
    runs: Runs,
    *,
    view: View = "domain",
    scope: str = OVERALL,
    judge: str | None = None,
    ci: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    reference: bool = False,
) -> pd.DataFrame:
    """`awbench leaderboard` as a frame, one row per ranked (or listed) evaluation, its columns those of
    `--format csv` (less its Turing-test columns) with numbers as numbers (NaN where the CSV has an empty field), plus
    `judge_id`, and
    `generations` always: `group`,
    `rank`, `run`, `model`, `judge_id`, `published`, a column per domain (or dimension) and `Overall` (with `ci`,
    `<column> lo` and `<column> hi`), `scored`, `failed`, `unscored`, `generations`, `judge`, `prompts`, `data`,
    `cost_usd`, `source`, `status`."""
    stores, loaded = _stores(runs)
    board = build_leaderboard(
        stores,
        view=view,
        scope=scope,
        judge=judge,
        ci=ci,
        resamples=resamples,
        seed=seed,
        reference=reference,
        loaded=loaded,
    )
    for note in board.notes:
        warnings.warn(note, stacklevel=2)
    rows = []
    for group in board.groups:
        for row in group.rows:
            record: dict[str, object] = {
                "group": group.header,
                "rank": row.rank,
                "run": row.run,
                "model": row.model,
                "judge_id": row.judge_id,
                "published": row.published,
            }
            record |= {board.labels[c]: row.cells[c].value for c in board.columns}
            if board.ci:
                for c in board.columns:
                    record[f"{board.labels[c]} lo"] = row.cells[c].lo
                    record[f"{board.labels[c]} hi"] = row.cells[c].hi
            record |= {
                "scored": row.scored,
                "failed": row.failed,
                "unscored": row.unscored,
                "generations": row.generations,
                "judge": row.judge,
                "prompts": row.prompts,
                "data": row.data,
                "cost_usd": row.cost_usd,
                "source": row.source,
                "status": "; ".join(row.marks()),
            }
            rows.append(record)
    scores = [board.labels[c] + suffix for c in board.columns for suffix in ("", " lo", " hi")]
    frame = pd.DataFrame(rows)
    return frame.astype(
        {c: "float64" for c in [*scores, "cost_usd"] if c in frame}
        | {c: "Int64" for c in ("rank", "scored", "failed", "unscored") if c in frame}
    )


def compare_table(
    a: str | Path | RunData,
    b: str | Path | RunData,
    judge: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """`awbench compare A B`'s paired rows, one per domain and `overall`: `n` samples both scored, `mean_a`,
    `mean_b`, `diff` (A - B) with its 95% bootstrap interval `lo`, `hi`, `a_better` (the share of resamples in
    which A is ahead), `wins`, `ties`, `losses`, `trajectories`, `too_few` (no interval: too few trajectories).
    Indexed by domain. `a` and `b`: run directories, or RunData."""
    comparison = compare_runs(_run(a), _run(b), judge=judge, resamples=resamples, seed=seed)
    for warning in comparison.warnings:
        warnings.warn(warning, stacklevel=2)
    columns = ["n", "mean_a", "mean_b", "diff", "lo", "hi", "a_better", "wins", "ties", "losses"]
    frame = pd.DataFrame(
        [[getattr(row, c) for c in columns] + [row.trajectories, row.too_few] for row in comparison.rows],
        columns=[*columns, "trajectories", "too_few"],
        index=pd.Index([row.name for row in comparison.rows], name="domain"),
    )
    return frame.astype({c: "float64" for c in ("mean_a", "mean_b", "diff", "lo", "hi", "a_better")})

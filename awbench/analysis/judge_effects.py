"""How much the judge decides (`awbench judges`): with two or more LLM judges on the same runs, how alike their
leaderboards rank the runs (Kendall's tau), how far each judge scores above or below the others (its offset, per
domain), and, where a run's model and a judge come from the same family, how much more that judge gives the run
than the other judges' consensus does, beyond its usual offset (a possible self-preference). Intervals resample
whole trajectories of the runs' shared data (`stats.bootstrap_means`); the method is in docs/statistics.md.

A run's score under a judge is the mean of its domain scores over the domains every compared evaluation has (the
Overall, when that is all seven).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import combinations

import numpy as np
from pydantic import BaseModel

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.runs import RunData
from awbench.analysis.stats import (
    MIN_TRAJECTORIES,
    TOO_FEW,
    Clustered,
    bootstrap_means,
    interval,
    too_few,
    too_few_overall,
)
from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.records import SCHEMA_VERSION

# Model families by the start of the model's name (after any `org/`), longest first; any other name's family is its
# leading word. A judge and a candidate of one family may share a style the judge prefers.
FAMILIES: tuple[tuple[str, str], ...] = tuple(
    sorted(
        {
            "gpt": "openai",
            "chatgpt": "openai",
            "o1": "openai",
            "o3": "openai",
            "o4": "openai",
            "claude": "anthropic",
            "gemini": "google",
            "gemma": "google",
            "qwen": "qwen",
            "qwq": "qwen",
            "deepseek": "deepseek",
            "llama": "meta",
            "mistral": "mistral",
            "mixtral": "mistral",
            "ministral": "mistral",
            "codestral": "mistral",
            "glm": "zhipu",
            "chatglm": "zhipu",
            "kimi": "moonshot",
            "moonshot": "moonshot",
            "minimax": "minimax",
            "grok": "xai",
            "phi": "microsoft",
        }.items(),
        key=lambda item: -len(item[0]),
    )
)


def model_family(model: str) -> str:
    """`Qwen/Qwen3-8B` -> qwen, `gpt-5.2-2025-12-11` -> openai, `o3-mini` -> openai, `claude-opus-4-6` ->
    anthropic; an unknown name -> its leading word (`baseline:oracle` -> baseline)."""
    name = model.rsplit("/", 1)[-1].strip().lower()
    word = re.split(r"[^a-z0-9]", name, maxsplit=1)[0]
    for prefix, family in FAMILIES:
        if word.startswith(prefix) and (len(word) == len(prefix) or not word[len(prefix)].isalpha()):
            return family
    return re.sub(r"[0-9.]+$", "", word) or word


class Estimate(BaseModel):
    value: float | None
    lo: float | None = None  # 95% interval; None with too few trajectories to tell
    hi: float | None = None


class RankAgreement(BaseModel):
    """Two judges' rankings of the runs both scored."""

    judge_a: str
    judge_b: str
    runs: int
    tau: Estimate  # Kendall's tau-b: 1 the same order, -1 reversed, 0 unrelated


class SelfPreference(BaseModel):
    """A run scored by a judge of its own family: the judge's score minus the other judges' mean, less the judge's
    mean such difference on the other runs (its usual offset)."""

    judge: str
    run: str
    family: str
    residual: Estimate

    @property
    def clear(self) -> bool:
        return self.residual.lo is not None and self.residual.lo > 0


class JudgeEffects(BaseModel):
    schema_version: int = SCHEMA_VERSION
    judges: dict[str, str]  # judge id -> its model
    runs: dict[str, str]  # run -> its model
    domains: list[str]  # those every compared evaluation has: the runs' scores are their mean
    scores: dict[str, dict[str, float]]  # judge -> run -> that score
    rank_agreement: list[RankAgreement]
    offsets: dict[str, dict[str, Estimate]]  # judge -> domain, then "overall" -> its mean score less the others'
    self_preference: list[SelfPreference]
    notes: list[str] = []


def kendall_tau(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of x and y along the last axis (leading axes: independent cases); NaN where one is constant."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., j] - x[..., i]), np.sign(y[..., j] - y[..., i])
    pairs = len(i)
    untied_x, untied_y = np.count_nonzero(sx, axis=-1), np.count_nonzero(sy, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau: np.ndarray = (sx * sy).sum(axis=-1) / np.sqrt(untied_x * untied_y.astype(float))
    return np.where((untied_x == 0) | (untied_y == 0) | (pairs == 0), np.nan, tau)


Cells = Mapping[tuple[str, str], Mapping[str, Mapping[str, float]]]  # (judge, run) -> domain -> sample key -> score


def judge_effects(
    cells: Cells,
    trajectories: Mapping[str, str],
    judge_models: Mapping[str, str],
    run_models: Mapping[str, str],
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> JudgeEffects | None:
    """The judges' effects from every (judge, run) evaluation's sample scores (`cells`) of runs on the same data
    (`trajectories`: sample key -> trajectory); None with fewer than two judges or two runs."""
    judges = sorted({j for j, _ in cells})
    runs = sorted({r for _, r in cells})
    if len(judges) < 2 or len(runs) < 2:
        return None
    domains = [d for d in DOMAINS if all(cells[c].get(d) for c in cells)]
    if not domains:
        return None
    columns = list(cells)
    points = {d: np.array([np.mean(list(cells[c][d].values())) for c in columns]) for d in domains}
    points[OVERALL] = np.mean(np.stack([points[d] for d in domains]), axis=0)
    counts = {d: len({trajectories[k] for c in columns for k in cells[c][d]}) for d in domains}
    replicates = _resampled(cells, columns, domains, trajectories, resamples, seed)
    told = {d: not too_few(n) for d, n in counts.items()} | {OVERALL: not too_few_overall(counts.values())}

    def estimate(statistic: Statistic, name: str = OVERALL) -> Estimate:
        return _estimate(statistic, points[name], replicates[name] if told[name] else None)

    def offset(judge: str) -> Statistic:
        return lambda scores: _offset(scores, judge, judges, runs, columns)

    def tau(a: list[int], b: list[int]) -> Statistic:
        return lambda scores: kendall_tau(scores[..., a], scores[..., b])

    def preference(judge: str, run: str) -> Statistic:
        return lambda scores: _self_preference(scores, judge, run, judges, runs, columns)

    offsets = {j: {name: estimate(offset(j), name) for name in [*domains, OVERALL]} for j in judges}
    agreement = []
    for a, b in combinations(judges, 2):
        shared = [r for r in runs if (a, r) in cells and (b, r) in cells]
        if len(shared) >= 2:
            ia, ib = [columns.index((a, r)) for r in shared], [columns.index((b, r)) for r in shared]
            agreement.append(RankAgreement(judge_a=a, judge_b=b, runs=len(shared), tau=estimate(tau(ia, ib))))
    preferences = [
        SelfPreference(
            judge=j,
            run=r,
            family=model_family(judge_models[j]),
            residual=estimate(preference(j, r)),
        )
        for j in judges
        for r in runs
        if (j, r) in cells and model_family(judge_models[j]) == model_family(run_models[r])
    ]
    few = [DOMAIN_LABELS[d] for d in domains if not told[d]]
    notes = [f"{TOO_FEW} in {', '.join(few)} (fewer than {MIN_TRAJECTORIES} trajectories): no intervals there"]
    return JudgeEffects(
        judges={j: judge_models[j] for j in judges},
        runs={r: run_models[r] for r in runs},
        domains=domains,
        scores={j: {r: float(points[OVERALL][columns.index((j, r))]) for r in runs if (j, r) in cells} for j in judges},
        rank_agreement=agreement,
        offsets=offsets,
        self_preference=[p for p in preferences if p.residual.value is not None],
        notes=notes if few else [],
    )


def _resampled(
    cells: Cells,
    columns: Sequence[tuple[str, str]],
    domains: Sequence[str],
    trajectories: Mapping[str, str],
    resamples: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """Per domain and over them (`OVERALL`), (resamples, columns): each evaluation's score over resamples of whole
    trajectories, drawn once for every evaluation (they scored the same samples)."""
    clustered = {}
    for d in domains:
        keys = sorted({k for c in columns for k in cells[c][d]})
        rows = [[cells[c][d].get(k, math.nan) for c in columns] for k in keys]
        clustered[d] = Clustered.of(rows, [trajectories[k] for k in keys])
    return bootstrap_means(clustered, resamples, seed)


Statistic = Callable[[np.ndarray], np.ndarray]  # evaluations' scores (last axis, in column order) -> a statistic


def _estimate(statistic: Statistic, point: np.ndarray, replicates: np.ndarray | None) -> Estimate:
    """The statistic of the scores, and its 95% percentile interval over the replicates (none without them, or
    where some resample has no value)."""
    value = float(statistic(point))
    if math.isnan(value):
        return Estimate(value=None)
    found = None if replicates is None else statistic(replicates)
    if found is None or np.isnan(found).any():
        return Estimate(value=value)
    lo, hi = interval(found)
    return Estimate(value=value, lo=float(lo), hi=float(hi))


def _nanmean(values: np.ndarray) -> np.ndarray:
    """The mean over the last axis of the values present; NaN where none is."""
    present = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean: np.ndarray = np.where(present, values, 0.0).sum(axis=-1) / present.sum(axis=-1)
    return mean


def _consensus_gap(
    scores: np.ndarray, judge: str, run: str, judges: Sequence[str], columns: Sequence[tuple[str, str]]
) -> np.ndarray:
    """The judge's score of the run less the other judges' mean (NaN when no other judge scored it)."""
    others = [columns.index((k, run)) for k in judges if k != judge and (k, run) in columns]
    if (judge, run) not in columns or not others:
        return np.full(scores.shape[:-1], np.nan)
    gap: np.ndarray = scores[..., columns.index((judge, run))] - scores[..., others].mean(axis=-1)
    return gap


def _offset(
    scores: np.ndarray, judge: str, judges: Sequence[str], runs: Sequence[str], columns: Sequence[tuple[str, str]]
) -> np.ndarray:
    """The judge's mean gap to the others' consensus over the runs it and another judge scored."""
    return _nanmean(np.stack([_consensus_gap(scores, judge, r, judges, columns) for r in runs], axis=-1))


def _self_preference(
    scores: np.ndarray,
    judge: str,
    run: str,
    judges: Sequence[str],
    runs: Sequence[str],
    columns: Sequence[tuple[str, str]],
) -> np.ndarray:
    """The run's gap less the judge's mean gap on the other runs (NaN without another run to compare with)."""
    usual = _nanmean(np.stack([_consensus_gap(scores, judge, r, judges, columns) for r in runs if r != run], axis=-1))
    residual: np.ndarray = _consensus_gap(scores, judge, run, judges, columns) - usual
    return residual


def run_judge_effects(
    runs: Sequence[RunData], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> JudgeEffects | None:
    """`judge_effects` of the runs' complete LLM evaluations (the rule judge is not an LLM judge's peer); runs on other
    data than the first one's are left out, as are incomplete evaluations, each with a note."""
    cells: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    judge_models: dict[str, str] = {}
    trajectories: dict[str, str] = {}
    notes = []
    first = next((data for data in runs if any(e.kind == "llm" for e in data.evaluations.values())), None)
    for data in runs:
        if first is not None and data.manifest.data_fingerprint != first.manifest.data_fingerprint:
            notes.append(f"left out {data.name}: run on other data than {first.name}, so its samples do not pair")
            continue
        for judge_id, evaluation in data.evaluations.items():
            if evaluation.kind != "llm":
                continue
            if not (completeness := data.completeness(judge_id)).complete:
                notes.append(f"left out {data.name} ({judge_id}): {completeness.label()}")
                continue
            judge_models[judge_id] = evaluation.info.settings.model
            points = data.points(judge_id)
            cells[(judge_id, data.name)] = {d: {key: score for key, score, _ in pts} for d, pts in points.items()}
        trajectories |= data.trajectories
    run_models = {d.name: d.manifest.config.model.model for d in runs}
    effects = judge_effects(cells, trajectories, judge_models, run_models, resamples, seed)
    if effects is not None:
        effects.notes = notes + effects.notes
    return effects

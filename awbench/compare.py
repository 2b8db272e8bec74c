"""Comparisons: run against run (paired, on the samples both scored), judge against judge, verdict against
verdict (repeated judging), and score against prediction length.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel

from awbench.domains import DIMENSIONS, DOMAINS
from awbench.leaderboard import provenance
from awbench.parsing import strip_observation_marker
from awbench.records import SCHEMA_VERSION, JudgeKind
from awbench.runs import RunData
from awbench.scoring import to_100
from awbench.stats import (
    DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL, Clustered, bootstrap_means, interval, krippendorff_alpha_ordinal,
    length_bias, length_ratio, spearman,
)

TIE_TOLERANCE = 1e-9  # scores are means of integers: anything closer is the same verdict


class CompareError(Exception):
    """The two runs cannot be compared; the message says why."""


class Paired(BaseModel):
    """A (domain or overall) paired comparison of A against B on the samples both scored."""

    name: str
    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None  # A - B
    lo: float | None = None
    hi: float | None = None
    a_better: float | None = None  # share of resamples in which A's mean is above B's
    wins: int = 0
    ties: int = 0
    losses: int = 0


class Agreement(BaseModel):
    """How two sets of scores for the same predictions agree."""

    n: int
    alpha: dict[str, float | None]  # ordinal Krippendorff's alpha per dimension
    spearman: float | None  # of the 0..100 totals


class Consistency(BaseModel):
    """Repeated verdicts of one LLM judge on each prediction (`--judge-samples K`, K > 1)."""

    k: int  # the most verdicts any prediction has
    n: int  # predictions with two or more complete verdicts
    sd: dict[str, float]  # per domain: the mean over predictions of the SD (ddof 1) of verdict totals, 0..100
    alpha: dict[str, float | None]


LengthBias = dict[str, tuple[int, float | None]]


class Comparison(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_a: str
    run_b: str
    judge: JudgeKind
    rows: list[Paired]  # domains in order, then overall
    only_a: int  # samples scored in A but not in B, left out
    only_b: int
    warnings: list[str]
    judge_agreement: Agreement | None = None  # when both runs judged the same predictions
    length_bias: dict[str, LengthBias]


def _scores(data: RunData, kind: JudgeKind) -> dict[str, dict[str, float]]:
    return {domain: {key: score for key, score, _ in pts} for domain, pts in data.points(kind).items()}


def _same_predictions(a: RunData, b: RunData) -> bool:
    if a.predictions.keys() != b.predictions.keys() or not a.predictions:
        return False
    return all(
        (p.status, p.prediction) == (b.predictions[k].status, b.predictions[k].prediction)
        for k, p in a.predictions.items()
    )


def compare_runs(
    a: RunData, b: RunData, judge: JudgeKind | None = None, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    if a.manifest.data_fingerprint != b.manifest.data_fingerprint:
        raise CompareError(
            f"{a.name} and {b.name} were run on different data (fingerprints {a.manifest.data_fingerprint[:12]} and "
            f"{b.manifest.data_fingerprint[:12]}): their scores are not paired; compare runs of the same data"
        )
    kind = judge or a.primary_judge
    for run in (a, b):
        if not run.judged_by(kind):
            raise CompareError(f"{run.name} has no {kind} judgments")

    warnings: list[str] = []
    pa, pb = provenance(a.manifest, kind, a.policy), provenance(b.manifest, kind, b.policy)
    same_predictions = _same_predictions(a, b)
    differs = [label for label, x, y in (("judge model", pa.judge, pb.judge), ("prompt set", pa.prompts, pb.prompts))
               if x != y]
    if differs and same_predictions:
        warnings.append(
            f"same predictions, different {' and '.join(differs)}: this compares the judges, not the models"
        )
    elif differs:
        warnings.append(
            f"the runs differ in {' and '.join(differs)} ({pa.judge} {pa.prompts} vs {pb.judge} {pb.prompts}): "
            "score differences mix model and judge effects"
        )
    if pa.policy != pb.policy:
        warnings.append(f"failure policies differ ({pa.policy} vs {pb.policy})")

    sa, sb = _scores(a, kind), _scores(b, kind)
    rows: list[Paired] = []
    diffs: dict[str, Clustered] = {}
    only_a = only_b = 0
    for domain in DOMAINS:
        da, db = sa.get(domain, {}), sb.get(domain, {})
        common = [k for k in da if k in db]
        only_a += len(da) - len(common)
        only_b += len(db) - len(common)
        if not common:
            continue
        d = np.array([da[k] - db[k] for k in common])
        diffs[domain] = Clustered.of(d[:, None], [a.trajectories[k] for k in common])
        rows.append(Paired(
            name=domain, n=len(common), mean_a=float(np.mean([da[k] for k in common])),
            mean_b=float(np.mean([db[k] for k in common])), diff=float(d.mean()),
            wins=int((d > TIE_TOLERANCE).sum()), ties=int((np.abs(d) <= TIE_TOLERANCE).sum()),
            losses=int((d < -TIE_TOLERANCE).sum()),
        ))
    if only_a or only_b:
        warnings.append(f"left out samples scored by one run only: {only_a} of {a.name}, {only_b} of {b.name}")

    if rows:
        rows.append(Paired(
            name=OVERALL, n=sum(r.n for r in rows), mean_a=float(np.mean([r.mean_a for r in rows])),
            mean_b=float(np.mean([r.mean_b for r in rows])), diff=float(np.mean([r.diff for r in rows])),
            wins=sum(r.wins for r in rows), ties=sum(r.ties for r in rows), losses=sum(r.losses for r in rows),
        ))
        reps = bootstrap_means(diffs, resamples, seed)
        for row in rows:
            rep = reps[row.name][:, 0]
            lo, hi = interval(rep)
            row.lo, row.hi, row.a_better = float(lo), float(hi), float((rep > 0).mean())

    return Comparison(
        run_a=a.name, run_b=b.name, judge=kind, rows=rows, only_a=only_a, only_b=only_b, warnings=warnings,
        judge_agreement=judge_agreement(a, b, kind) if same_predictions else None,
        length_bias={a.name: run_length_bias(a, kind), b.name: run_length_bias(b, kind)},
    )


def judge_agreement(a: RunData, b: RunData, kind: JudgeKind) -> Agreement:
    """Agreement of the two runs' judgments of the same predictions (failed generations left out: both
    runs give them the minimum whatever the judge, which would inflate agreement)."""
    ja, jb = a.judgments_of(kind), b.judgments_of(kind)
    keys = [k for k, j in ja.items() if j.score is not None and k in jb and jb[k].score is not None
            and not a.predictions[k].failed]
    alpha = {d: krippendorff_alpha_ordinal([(ja[k].dimensions.get(d), jb[k].dimensions.get(d)) for k in keys])
             for d in DIMENSIONS}
    rho = spearman([ja[k].score for k in keys], [jb[k].score for k in keys]) if keys else None  # type: ignore[misc]
    return Agreement(n=len(keys), alpha=alpha, spearman=rho)


def judge_consistency(data: RunData) -> Consistency | None:
    """Spread of repeated LLM verdicts on one prediction; None when no prediction has two of them."""
    repeated = {
        key: complete
        for key, j in data.judgments_of("llm").items()
        if len(complete := [v for v in j.verdicts if v.status == "complete"]) >= 2
    }
    if not repeated:
        return None
    sds: dict[str, list[float]] = {}
    for key, verdicts in repeated.items():
        totals = [to_100(float(np.mean([v.scores[d] for d in DIMENSIONS if d in v.scores]))) for v in verdicts]
        sds.setdefault(data.samples[key].domain, []).append(float(np.std(totals, ddof=1)))
    alpha = {d: krippendorff_alpha_ordinal([[v.scores.get(d) for v in vs] for vs in repeated.values()])
             for d in DIMENSIONS}
    return Consistency(
        k=max(len(j.verdicts) for j in data.judgments_of("llm").values()), n=len(repeated),
        sd={d: float(np.mean(sds[d])) for d in DOMAINS if d in sds}, alpha=alpha,
    )


def run_length_bias(data: RunData, kind: JudgeKind) -> LengthBias:
    """Mean score per prediction/ground-truth length-ratio bin. Failed generations are left out: their
    minimum score says nothing about how the judge treats length."""
    pairs = []
    for pts in data.points(kind).values():
        for key, score, _ in pts:
            prediction = data.predictions.get(key)
            if prediction is None or prediction.failed:
                continue
            truth = strip_observation_marker(data.samples[key].record.ground_truth)
            pairs.append((length_ratio(strip_observation_marker(prediction.prediction), truth), score))
    return length_bias(pairs)

"""Comparisons: run against run (paired, on the samples both scored, overall and along trajectories: by bins of
turn index and context length), judge against judge, verdict against verdict (repeated judging), and score
against prediction length.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, computed_field

from awbench.analysis.growth import (
    AXES,
    BINS,
    Axis,
    Trend,
    Unit,
    bin_label,
    lead_summary,
    position,
    trends,
)
from awbench.analysis.leaderboard import provenance
from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.runs import Judged, RunData
from awbench.analysis.stats import (
    Clustered,
    bootstrap_means,
    interval,
    krippendorff_alpha_ordinal,
    length_bias,
    length_ratio,
    too_few_of,
)
from awbench.domains import DIMENSIONS, DOMAINS, to_100
from awbench.errors import AwbenchError
from awbench.records import SCHEMA_VERSION
from awbench.run.agreement import spearman
from awbench.run.scoring import sample_points
from awbench.run.store import StoreError
from awbench.world_model.parsing import strip_observation_marker

TIE_TOLERANCE = 1e-9  # scores are means of integers: anything closer is the same verdict


class CompareError(AwbenchError):
    """The two runs cannot be compared; the message says why."""

    key = "not_comparable"


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
    trajectories: int = 0  # distinct trajectories of the paired samples (overall: over its domains)
    wins: int = 0
    ties: int = 0
    losses: int = 0
    fewest_trajectories: int | None = None  # overall only: those of its domain with the fewest

    @computed_field  # type: ignore[prop-decorator]
    @property
    def too_few(self) -> bool:
        """Fewer than MIN_TRAJECTORIES trajectories (overall: in one of its domains): no interval, no P(A > B)."""
        return too_few_of(self.trajectories, self.fewest_trajectories)


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


class PairedGrowth(BaseModel):
    """Where along trajectories A and B differ: A − B per bin of one axis (`awbench.analysis.growth`), on the samples
    both scored, and the trend of A − B per doubling."""

    axis: Axis
    bins: list[str]  # from the first bin with samples both scored to the last
    rows: dict[str, list[Paired]]  # bin -> domains in order, then overall; a bin without samples has none
    trend: dict[str, Trend]  # slope of A − B on log2(position), per domain and overall (the mean of the slopes)
    summary: str


class Comparison(BaseModel):
    schema_version: int = SCHEMA_VERSION
    run_a: str
    run_b: str
    judge: str  # judge id of A's evaluation (B's is `judge_b` when it differs)
    judge_b: str | None = None
    rows: list[Paired]  # domains in order, then overall
    only_a: int  # samples scored in A but not in B, left out
    only_b: int
    warnings: list[str]
    judge_agreement: Agreement | None = None  # when both runs judged the same predictions
    length_bias: dict[str, LengthBias]
    growth: dict[str, PairedGrowth] = {}  # by axis: "turn", "context"
    notes: list[str] = []  # the noise a run's intervals hold without measuring it (`VarianceComponents.unseen_note`)


class JudgeRow(BaseModel):
    """Two judges on the same predictions, in one domain (or overall)."""

    name: str
    n: int
    spearman: float | None
    alpha: float | None  # ordinal Krippendorff's alpha of the 0..100 totals
    paired: Paired  # A - B, with its bootstrap interval


class JudgeComparison(BaseModel):
    """`awbench compare RUN --judges A B`: how two judges of one run's predictions agree."""

    schema_version: int = SCHEMA_VERSION
    run: str
    judge_a: str
    judge_b: str
    rows: list[JudgeRow]
    dimension_alpha: dict[str, float | None] | None = None  # both LLM judges: per rubric dimension


def _scores(data: RunData, judge_id: str) -> dict[str, dict[str, float]]:
    return {domain: {key: score for key, score, _ in pts} for domain, pts in data.points(judge_id).items()}


def _same_predictions(a: RunData, b: RunData) -> bool:
    if a.predictions.keys() != b.predictions.keys() or not a.predictions:
        return False
    return all(
        (p.status, p.prediction) == (b.predictions[k].status, b.predictions[k].prediction)
        for k, p in a.predictions.items()
    )


def paired_differences(a: RunData, b: RunData, judge_a: str, judge_b: str) -> dict[str, list[tuple[str, float]]]:
    """Per domain, each sample both evaluations scored: its trajectory and A - B."""
    sa, sb = _scores(a, judge_a), _scores(b, judge_b)
    return {
        domain: [(a.trajectories[k], v - sb[domain][k]) for k, v in scores.items() if k in sb.get(domain, {})]
        for domain, scores in sa.items()
    }


def paired_rows(
    sa: dict[str, dict[str, float]],
    sb: dict[str, dict[str, float]],
    trajectories: dict[str, str],
    resamples: int,
    seed: int,
) -> tuple[list[Paired], int, int]:
    """Per domain and overall (the macro mean), A - B on the samples both scored, with 95% intervals that
    resample whole trajectories; and how many samples each side scored alone."""
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
        diffs[domain] = Clustered.of(d[:, None], [trajectories[k] for k in common])
        rows.append(
            Paired(
                name=domain,
                n=len(common),
                trajectories=len({trajectories[k] for k in common}),
                mean_a=float(np.mean([da[k] for k in common])),
                mean_b=float(np.mean([db[k] for k in common])),
                diff=float(d.mean()),
                wins=int((d > TIE_TOLERANCE).sum()),
                ties=int((np.abs(d) <= TIE_TOLERANCE).sum()),
                losses=int((d < -TIE_TOLERANCE).sum()),
            )
        )
    if rows:
        rows.append(
            Paired(
                name=OVERALL,
                n=sum(r.n for r in rows),
                trajectories=sum(r.trajectories for r in rows),
                fewest_trajectories=min(r.trajectories for r in rows),
                mean_a=float(np.mean([r.mean_a for r in rows])),
                mean_b=float(np.mean([r.mean_b for r in rows])),
                diff=float(np.mean([r.diff for r in rows])),
                wins=sum(r.wins for r in rows),
                ties=sum(r.ties for r in rows),
                losses=sum(r.losses for r in rows),
            )
        )
        reps = bootstrap_means(diffs, resamples, seed)
        for row in rows:
            if row.too_few:
                continue
            rep = reps[row.name][:, 0]
            lo, hi = interval(rep)
            row.lo, row.hi, row.a_better = float(lo), float(hi), float((rep > 0).mean())
    return rows, only_a, only_b


def paired_growth(
    sa: dict[str, dict[str, float]],
    sb: dict[str, dict[str, float]],
    positions: dict[str, float],
    trajectories: dict[str, str],
    axis: Axis,
    resamples: int,
    seed: int,
) -> PairedGrowth:
    """`paired_rows` within each bin of `axis` (`positions`: each sample's turn index or context tokens), and
    the trend of the paired differences."""
    bins = BINS[axis]
    where = {k: bin_label(positions[k], bins) for scores in (*sa.values(), *sb.values()) for k in scores}

    def in_bin(scores: dict[str, dict[str, float]], label: str) -> dict[str, dict[str, float]]:
        return {d: {k: v for k, v in s.items() if where[k] == label} for d, s in scores.items()}

    rows: dict[str, list[Paired]] = {}
    for label, _, _ in bins:
        found, _, _ = paired_rows(in_bin(sa, label), in_bin(sb, label), trajectories, resamples, seed)
        if found:
            rows[label] = found
    labels = [b[0] for b in bins]
    present = [labels.index(label) for label in rows]
    units = {
        d: [
            Unit(key=k, trajectory=trajectories[k], position=positions[k], score=sa[d][k] - sb[d][k])
            for k in sa.get(d, {})
            if k in sb.get(d, {})
        ]
        for d in DOMAINS
    }
    trend = trends({d: us for d, us in units.items() if us}, bins, resamples, seed)
    diffs = [(label, r[-1].diff) for label, r in rows.items()]
    return PairedGrowth(
        axis=axis,
        bins=labels[min(present) : max(present) + 1] if present else [],
        rows=rows,
        trend=trend,
        summary=lead_summary(axis, diffs, trend.get(OVERALL)),  # type: ignore[arg-type]
    )


def compare_runs(
    a: RunData,
    b: RunData,
    judge: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> Comparison:
    if a.manifest.data_fingerprint != b.manifest.data_fingerprint:
        raise CompareError(
            f"{a.name} and {b.name} were run on different data (fingerprints {a.manifest.data_fingerprint[:12]} and "
            f"{b.manifest.data_fingerprint[:12]}): their scores are not paired; compare runs of the same data"
        )
    try:
        ea = a.evaluation(judge)
    except StoreError as error:
        raise CompareError(str(error)) from None
    try:
        eb = b.evaluation(judge if judge is not None else ea.kind)
    except StoreError as error:
        if judge is not None:
            raise CompareError(str(error)) from None
        raise CompareError(  # the kind was A's, not the user's word: say where it came from
            f"{b.name} has no {'rule' if ea.kind == 'rules' else 'LLM'} judge's evaluation, as {a.name}'s primary "
            f"judge ({ea.id}) is; its judges: {', '.join(b.evaluations)}. Give --judge to compare evaluations of "
            "one kind both runs have"
        ) from None

    warnings: list[str] = []
    pa, pb = provenance(a.manifest, ea.info, a.policy), provenance(b.manifest, eb.info, b.policy)
    same_predictions = _same_predictions(a, b)
    differs = [
        label for label, x, y in (("judge model", pa.judge, pb.judge), ("prompt set", pa.prompts, pb.prompts)) if x != y
    ]
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

    for data, evaluation in ((a, ea), (b, eb)):
        if not (completeness := data.completeness(evaluation.id)).complete:
            warnings.append(
                f"{data.name} is {completeness.label()}: its scores are not final, and only samples "
                "both runs judged are compared"
            )
    sa, sb = _scores(a, ea.id), _scores(b, eb.id)
    rows, only_a, only_b = paired_rows(sa, sb, a.trajectories, resamples, seed)
    growth = {
        axis: paired_growth(
            sa, sb, {k: position(s.record, axis) for k, s in a.samples.items()}, a.trajectories, axis, resamples, seed
        )
        for axis in AXES
    }
    if only_a or only_b:
        warnings.append(f"left out samples scored by one run only: {only_a} of {a.name}, {only_b} of {b.name}")
    return Comparison(
        run_a=a.name,
        run_b=b.name,
        judge=ea.id,
        judge_b=None if eb.id == ea.id else eb.id,
        rows=rows,
        only_a=only_a,
        only_b=only_b,
        warnings=warnings,
        judge_agreement=judge_agreement(a, b, ea.id, eb.id) if same_predictions else None,
        length_bias={a.name: run_length_bias(a, ea.id), b.name: run_length_bias(b, eb.id)},
        growth=growth,
        notes=[
            f"{data.name}: {note}"
            for data, evaluation in ((a, ea), (b, eb))
            if (variance := data.variance(evaluation.id)) and (note := variance.unseen_note())
        ],
    )


def compare_judges(
    data: RunData, judge_a: str, judge_b: str, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> JudgeComparison:
    """Two evaluations of one run's predictions: per domain, Spearman and Krippendorff's alpha of the totals,
    and the mean difference with a bootstrap interval. Failed generations are left out (both judges would
    give them the minimum, which would inflate agreement)."""
    try:
        ea, eb = data.evaluation(judge_a), data.evaluation(judge_b)
    except StoreError as error:
        raise CompareError(str(error)) from None
    if ea.id == eb.id:
        raise CompareError(f"--judges names the same evaluation twice ({ea.id})")
    keys = [(s.key, s.domain) for s in data.samples.values()]

    def scores(e: Judged) -> dict[str, dict[str, float]]:
        pts = sample_points(e.kind, keys, data.predictions, e.judgments, "exclude", data.generations)
        return {domain: {key: score for key, score, _ in p} for domain, p in pts.items()}

    sa, sb = scores(ea), scores(eb)
    paired, _, _ = paired_rows(sa, sb, data.trajectories, resamples, seed)
    rows = []
    for row in paired:
        domains = DOMAINS if row.name == OVERALL else (row.name,)
        pairs = [(sa[d][k], sb[d][k]) for d in domains for k in sa.get(d, {}) if k in sb.get(d, {})]
        rows.append(
            JudgeRow(
                name=row.name,
                n=len(pairs),
                spearman=spearman(*zip(*pairs)) if len(pairs) > 1 else None,
                alpha=krippendorff_alpha_ordinal(pairs) if pairs else None,
                paired=row,
            )
        )
    dimension_alpha = None
    if ea.kind == eb.kind == "llm":
        common = [
            k
            for k, j in ea.judgments.items()
            if j.score is not None and (o := eb.judgments.get(k)) and o.score is not None
        ]
        dimension_alpha = {
            d: krippendorff_alpha_ordinal(
                [(ea.judgments[k].dimensions.get(d), eb.judgments[k].dimensions.get(d)) for k in common]
            )
            for d in DIMENSIONS
        }
    return JudgeComparison(run=data.name, judge_a=ea.id, judge_b=eb.id, rows=rows, dimension_alpha=dimension_alpha)


def judge_agreement(a: RunData, b: RunData, judge_a: str, judge_b: str) -> Agreement:
    """Agreement of the two runs' judgments of the same predictions (failed generations left out: both
    runs give them the minimum whatever the judge, which would inflate agreement)."""
    ja, jb = a.evaluations[judge_a].judgments, b.evaluations[judge_b].judgments
    keys = [
        k
        for k, j in ja.items()
        if j.score is not None
        and k in jb
        and jb[k].score is not None
        and k in a.predictions
        and not a.predictions[k].failed
    ]
    alpha = {
        d: krippendorff_alpha_ordinal([(ja[k].dimensions.get(d), jb[k].dimensions.get(d)) for k in keys])
        for d in DIMENSIONS
    }
    rho = spearman([ja[k].score for k in keys], [jb[k].score for k in keys]) if keys else None  # type: ignore[misc]
    return Agreement(n=len(keys), alpha=alpha, spearman=rho)


def judge_consistency(data: RunData, judge_id: str) -> Consistency | None:
    """Spread of repeated LLM verdicts on one prediction; None when no prediction has two of them."""
    judgments = data.evaluation(judge_id).judgments
    repeated = {
        key: complete
        for key, j in judgments.items()
        if len(complete := [v for v in j.verdicts if v.status == "complete"]) >= 2
    }
    if not repeated:
        return None
    sds: dict[str, list[float]] = {}
    for (key, _), verdicts in repeated.items():
        totals = [to_100(float(np.mean([v.scores[d] for d in DIMENSIONS if d in v.scores]))) for v in verdicts]
        sds.setdefault(data.samples[key].domain, []).append(float(np.std(totals, ddof=1)))
    alpha = {
        d: krippendorff_alpha_ordinal([[v.scores.get(d) for v in vs] for vs in repeated.values()]) for d in DIMENSIONS
    }
    return Consistency(
        k=max(len(j.verdicts) for j in judgments.values()),
        n=len(repeated),
        sd={d: float(np.mean(sds[d])) for d in DOMAINS if d in sds},
        alpha=alpha,
    )


def run_length_bias(data: RunData, judge_id: str) -> LengthBias:
    """Mean score per prediction/ground-truth length-ratio bin. Failed generations are left out: their
    minimum score says nothing about how the judge treats length."""
    pairs = []
    for pts in data.points(judge_id).values():
        for key, score, _ in pts:
            prediction = data.prediction(key)
            if prediction is None or prediction.failed:
                continue
            truth = strip_observation_marker(data.samples[key].record.ground_truth)
            pairs.append((length_ratio(strip_observation_marker(prediction.prediction), truth), score))
    return length_bias(pairs)

"""What a Turing test says (`awbench turing`, `awbench judges`): the judge's accuracy at telling the real
observation from the prediction, per domain and overall (the mean of the domains, as the rubric's Overall),
with 95% trajectory-bootstrap intervals (`awbench.analysis.stats`); its position bias; and the model's fool
rate, the share of predictions the judge took for the real observation (100 − accuracy, interval mirrored).

A prediction asked in both orders counts once, with the mean of its two answers. Answers without a choice
(parse failures, errors) are counted, and left out of the rates. Answers that quoted a choice from a response
(`steering_suspected`: the reader passed it over) are counted too. Values are percentages.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED, OVERALL
from awbench.analysis.stats import TOO_FEW, Clustered, bootstrap_means, interval, too_few, too_few_overall
from awbench.domains import DOMAINS
from awbench.judging.choice.judge import ChoiceAnswer
from awbench.judging.choice.parsing import STEERING_FLAG
from awbench.run.store import RunStore
from awbench.run.turing import read_answers, turing_evaluations

TURING_TITLE = "Turing tests (awbench turing): judge accuracy and model fool rate, %"


class Rate(BaseModel):
    value: float | None  # percent
    low: float | None = None  # 95% interval; None with too few trajectories to tell
    high: float | None = None
    n: int = 0  # predictions (or answers, for the position rates) it is over


class DomainTuring(BaseModel):
    accuracy: Rate
    fool_rate: Rate


class PositionBias(BaseModel):
    real_a: Rate  # accuracy when the real observation is Response A
    real_b: Rate  # ... and when it is Response B
    a_share: float | None  # percent of answers that chose A


class TuringResult(BaseModel):
    judge: str
    runs: list[str]
    accuracy: Rate
    fool_rate: Rate
    domains: dict[str, DomainTuring]
    position_bias: PositionBias
    questions: int  # asked (both orders: two per prediction)
    parse_failures: int  # asked, without a choice in the end
    steering_suspected: int  # answers that quoted a choice from a response (never read as the judge's)
    predictable_positions: bool  # positions drawn from the seed alone (an evaluation begun before secrets)
    cost_usd: float | None
    cost_per_1000: float | None  # USD per 1,000 questions asked


def turing_result(
    judge: str,
    runs: list[str],
    answers: Iterable[ChoiceAnswer],
    predictable: bool = False,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> TuringResult:
    answers = [a for a in answers if a.attempts > 0]
    answered = [a for a in answers if a.choice is not None]
    # One value per prediction (run, sample, generation): the share of its answers that found the real one.
    per_prediction: dict[tuple[str, str, int], list[float]] = {}
    where: dict[tuple[str, str, int], tuple[str, str]] = {}
    for a in answered:
        key = (a.meta.get("run", ""), a.meta["sample"], a.meta["generation"])
        per_prediction.setdefault(key, []).append(1.0 if a.choice == a.meta["real"] else 0.0)
        where[key] = (a.meta["domain"], f"{a.meta.get('run', '')}/{a.meta['trajectory']}")
    rows: dict[str, list[tuple[float, str]]] = {}
    for key, values in per_prediction.items():
        domain, trajectory = where[key]
        rows.setdefault(domain, []).append((float(np.mean(values)), trajectory))
    ordered = {d: rows[d] for d in DOMAINS if d in rows}
    clustered = {d: Clustered.of([[v] for v, _ in r], [t for _, t in r]) for d, r in ordered.items()}
    replicates = bootstrap_means(clustered, resamples=resamples, seed=seed)
    trajectories = {d: len({t for _, t in r}) for d, r in ordered.items()}

    def rate(name: str, values: list[float], count: int) -> Rate:
        if not values:
            return Rate(value=None, n=0)
        few = too_few(trajectories[name]) if name != OVERALL else too_few_overall(trajectories.values())
        if few or name not in replicates:
            return Rate(value=100 * float(np.mean(values)), n=count)
        lo, hi = interval(replicates[name])
        return Rate(value=100 * float(np.mean(values)), low=100 * float(lo[0]), high=100 * float(hi[0]), n=count)

    domains = {}
    for d, r in ordered.items():
        accuracy = rate(d, [v for v, _ in r], len(r))
        domains[d] = DomainTuring(accuracy=accuracy, fool_rate=_mirrored(accuracy))
    means = [float(np.mean([v for v, _ in r])) for r in ordered.values()]
    overall = rate(OVERALL, means, sum(len(r) for r in ordered.values()))
    costs = [a.cost_usd for a in answers if a.cost_usd is not None]
    cost = sum(costs) if costs else None
    return TuringResult(
        judge=judge,
        runs=runs,
        accuracy=overall,
        fool_rate=_mirrored(overall),
        domains=domains,
        position_bias=_position_bias(answered),
        questions=len(answers),
        parse_failures=len(answers) - len(answered),
        steering_suspected=sum(STEERING_FLAG in a.flags for a in answers),
        predictable_positions=predictable,
        cost_usd=cost,
        cost_per_1000=cost / len(answers) * 1000 if cost is not None and answers else None,
    )


def _mirrored(accuracy: Rate) -> Rate:
    """The fool rate: the share the judge got wrong."""
    flip = None if accuracy.value is None else 100 - accuracy.value
    low = None if accuracy.high is None else 100 - accuracy.high
    high = None if accuracy.low is None else 100 - accuracy.low
    return Rate(value=flip, low=low, high=high, n=accuracy.n)


def _position_bias(answered: list[ChoiceAnswer]) -> PositionBias:
    def accuracy(real: str) -> Rate:
        chosen = [a.choice == real for a in answered if a.meta["real"] == real]
        return Rate(value=100 * float(np.mean(chosen)) if chosen else None, n=len(chosen))

    share = 100 * sum(a.choice == "A" for a in answered) / len(answered) if answered else None
    return PositionBias(real_a=accuracy("A"), real_b=accuracy("B"), a_share=share)


class RunTuring(BaseModel):
    """One Turing test of one run, as `show`, `leaderboard` and the report list it."""

    run: str
    judge: str
    accuracy: Rate
    fool_rate: Rate
    questions: int


def run_turing_tests(store: RunStore) -> list[RunTuring]:
    """The Turing tests kept with a run (none: an empty list), by judge id."""
    out = []
    for evaluation in turing_evaluations(store):
        result = turing_result(evaluation.id, [store.name], read_answers(evaluation.path))
        out.append(
            RunTuring(
                run=store.name,
                judge=evaluation.id,
                accuracy=result.accuracy,
                fool_rate=result.fool_rate,
                questions=result.questions,
            )
        )
    return out


def fmt_rate(rate: Rate) -> str:
    """`97.6 [93.1, 100.0]`, `97.6 (too few to tell)` without an interval, `–` without a value."""
    if rate.value is None:
        return "–"
    if rate.low is None or rate.high is None:
        return f"{rate.value:.1f} ({TOO_FEW})"
    return f"{rate.value:.1f} [{rate.low:.1f}, {rate.high:.1f}]"


def turing_line(test: RunTuring) -> str:
    return (
        f"Turing test by judge {test.judge} ({test.questions} questions): judge accuracy {fmt_rate(test.accuracy)}%, "
        f"model fool rate {fmt_rate(test.fool_rate)}%"
    )

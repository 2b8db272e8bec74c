"""What a pairwise judge's answers say (`awbench compare A B --pairwise`, `awbench leaderboard --pairwise`): each
pair's win rate per domain with its interval, how often the judge picked the first position, and over several
runs a Bradley–Terry ranking (`awbench.analysis.preference`). The answers are asked and kept by
`awbench.run.pairwise`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

from pydantic import BaseModel

from awbench.analysis.options import DEFAULT_RESAMPLES, DEFAULT_SEED
from awbench.analysis.preference import Outcome, PairOutcomes, Rated, WinRate, points, rank_runs, win_rates
from awbench.judging.choice.judge import ChoiceAnswer
from awbench.judging.choice.parsing import STEERING_FLAG
from awbench.records import SCHEMA_VERSION
from awbench.run.pairwise import SIDES, Pairing, question_key


class Answered(BaseModel):
    """How a pair's questions were answered."""

    questions: int  # two per paired sample
    unanswered: int  # no choice: an unreadable answer after every attempt, an error, or not asked yet
    first_position: float | None  # share of the choices that picked Response A (0.5: no position bias)
    steering_suspected: int  # answers that quoted a choice from a prediction (never read as the judge's)
    cost_usd: float | None  # what the answers cost, earlier runs included; None when the price is unknown


class PairwiseComparison(BaseModel):
    """`awbench compare A B --pairwise`: A against B, from A's side."""

    schema_version: int = SCHEMA_VERSION
    run_a: str
    run_b: str
    judge: str  # the pairwise judge's id
    prompts: str  # the prompt set, `name@sha256[:6]`
    rows: list[WinRate]  # domains in order, then overall
    answered: Answered
    warnings: list[str]


class PairRow(BaseModel):
    """One pair of a pairwise leaderboard: a's overall win rate against b, a being the run ranked higher."""

    a: str
    b: str
    result: WinRate


class PairwiseLeaderboard(BaseModel):
    """`awbench leaderboard --pairwise`: every pair of runs, and their Bradley–Terry ranking."""

    schema_version: int = SCHEMA_VERSION
    judge: str
    prompts: str
    rows: list[Rated]  # best first
    pairs: list[PairRow]
    answered: Answered
    warnings: list[str]


def pair_outcomes(pairing: Pairing, answers: Mapping[str, ChoiceAnswer], side: str) -> list[Outcome]:
    """Each paired sample's outcome from the side of run `side` (the pairing's x or y), where both answers have a
    choice: both orders for the same run's prediction is a win, orders that disagree a tie."""
    outcomes = []
    for paired in pairing.paired:
        x_first, y_first = (answers.get(question_key(paired.sample.key, first)) for first in SIDES)
        # x's points: x's prediction chosen as A when shown first, as B when shown second.
        x_points = points(*(a.choice if a is not None else None for a in (x_first, y_first)))
        if x_points is None:
            continue
        record = paired.sample.record
        own = x_points if side == pairing.x else 1 - x_points
        outcomes.append(Outcome(paired.sample.key, record.domain, record.trajectory_id, own))
    return outcomes


def answered(pairings: Sequence[Pairing], answers: Sequence[Mapping[str, ChoiceAnswer]]) -> Answered:
    """Over pairs (each pairing with its answers): questions, those without a choice, the share of choices that
    picked Response A, and the cost."""
    questions, choices, costs, steering = 0, [], [], 0
    for pairing, table in zip(pairings, answers, strict=True):
        keys = [question_key(paired.sample.key, first) for paired in pairing.paired for first in SIDES]
        questions += len(keys)
        choices += [table[key].choice for key in keys if key in table and table[key].choice is not None]
        steering += sum(STEERING_FLAG in table[key].flags for key in keys if key in table)
        costs += [answer.cost_usd for answer in table.values()]
    return Answered(
        questions=questions,
        unanswered=questions - len(choices),
        first_position=choices.count("A") / len(choices) if choices else None,
        steering_suspected=steering,
        cost_usd=None if None in costs else sum(c for c in costs if c is not None),
    )


def _answer_warnings(summary: Answered) -> list[str]:
    warnings = []
    if summary.unanswered:
        warnings.append(
            f"{summary.unanswered} of {summary.questions} questions have no choice (an unreadable answer after every "
            "attempt, or an error): their samples are left out; the same command asks them again"
        )
    if summary.steering_suspected:
        warnings.append(
            f"steering suspected in {summary.steering_suspected} answers: they quote a choice found in a prediction "
            "(one that carries its own answer); a quoted choice is never read as the judge's"
        )
    return warnings


def compare_pairwise(
    run_a: str,
    pairing: Pairing,
    answers: Mapping[str, ChoiceAnswer],
    judge: str,
    prompts: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairwiseComparison:
    """A (`run_a`, one of the pairing's runs) against the other, per domain and overall."""
    run_b = pairing.y if run_a == pairing.x else pairing.x
    summary = answered([pairing], [answers])
    return PairwiseComparison(
        run_a=run_a,
        run_b=run_b,
        judge=judge,
        prompts=prompts,
        rows=win_rates(pair_outcomes(pairing, answers, run_a), resamples, seed),
        answered=summary,
        warnings=pairing.left_out() + _answer_warnings(summary),
    )


def pairwise_leaderboard(
    runs: Sequence[str],
    pairings: Mapping[tuple[str, str], Pairing],
    answers: Mapping[tuple[str, str], Mapping[str, ChoiceAnswer]],
    judge: str,
    prompts: str,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairwiseLeaderboard:
    """The Bradley–Terry ranking of `runs` from every pair's answers (pairs keyed by run names, in `runs` order);
    each pair's row from the side of the run ranked higher."""
    index = {run: i for i, run in enumerate(runs)}
    pairs, warnings = [], []
    for a, b in combinations(runs, 2):
        pairs.append(PairOutcomes(index[a], index[b], pair_outcomes(pairings[(a, b)], answers[(a, b)], a)))
        warnings += [f"{a} vs {b}: {line}" for line in pairings[(a, b)].left_out()]
    ranked = rank_runs(runs, pairs, resamples, seed)
    rank = {row.run: row.rank for row in ranked}
    rows = []
    for a, b in sorted(combinations(runs, 2), key=lambda pair: sorted(rank[run] for run in pair)):
        better, worse = sorted((a, b), key=rank.__getitem__)
        found = win_rates(pair_outcomes(pairings[(a, b)], answers[(a, b)], better), resamples, seed)
        if found:
            rows.append(PairRow(a=better, b=worse, result=found[-1]))
    summary = answered(list(pairings.values()), list(answers.values()))
    return PairwiseLeaderboard(
        judge=judge,
        prompts=prompts,
        rows=ranked,
        pairs=rows,
        answered=summary,
        warnings=warnings + _answer_warnings(summary),
    )

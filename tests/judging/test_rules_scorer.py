"""RuleScorer: the rule judge with per-trajectory history indexes, which must give exactly what `rule_score`
gives, on full-size trajectories (tests/rule_trajectories.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from rule_trajectories import Turn, full_size_trajectory

from awbench.domains import DOMAINS
from awbench.judging.rules import RuleScorer, rule_score
from awbench.judging.rules.score import clear_caches


def _reference(turn: Turn):
    return rule_score(
        domain=turn.domain, ground_truth=turn.ground_truth, prediction=turn.prediction, history=turn.history
    )


def _scored(scorer: RuleScorer, turn: Turn):
    return scorer.score(
        domain=turn.domain,
        trajectory=turn.trajectory,
        ground_truth=turn.ground_truth,
        prediction=turn.prediction,
        history=turn.history,
    )


@pytest.mark.parametrize("domain", DOMAINS)
def test_scorer_matches_rule_score_in_and_out_of_order(domain: str) -> None:
    """A whole trajectory scored in order (each history extends the cached one), then shuffled (shorter and
    unrelated histories force rebuilds), then in order again after the shuffle: always rule_score's result."""
    turns = full_size_trajectory(domain, turns=10, mean_history_chars=20_000)
    expected = [_reference(turn) for turn in turns]
    scorer = RuleScorer()
    assert [_scored(scorer, turn) for turn in turns] == expected
    order = list(range(len(turns)))
    random.Random(7).shuffle(order)
    assert [_scored(scorer, turns[i]) for i in order] == [expected[i] for i in order]
    assert [_scored(scorer, turn) for turn in turns] == expected


def test_scorer_with_one_slot_and_a_shared_id_matches_cold_rule_score() -> None:
    """Two domains' trajectories interleaved under one id, with room for one index: every history either
    extends the cached one or replaces it. Each reference is computed from cold caches."""
    first = full_size_trajectory("terminal", turns=8, mean_history_chars=10_000)
    second = full_size_trajectory("mcp", turns=8, mean_history_chars=10_000)
    interleaved = [turn for pair in zip(first, second) for turn in pair]
    expected = []
    for turn in interleaved:
        clear_caches()
        expected.append(_reference(turn))
    scorer = RuleScorer(max_trajectories=1)
    got = [
        scorer.score(
            domain=t.domain,
            trajectory="same id",
            ground_truth=t.ground_truth,
            prediction=t.prediction,
            history=t.history,
        )
        for t in interleaved
    ]
    assert got == expected


def test_an_action_without_heading_is_read_as_history_once_it_is_not_last() -> None:
    """The last item is the current action whatever its heading; once earlier, an item without the action
    heading reads as an observation. The scorer's index of earlier items must read it as rule_score does."""
    history: list[str] = []
    scorer = RuleScorer()
    for turn in range(1, 6):
        history.append(f"printf 'line {turn}\\n'")  # no "### Turn N / **Action:**" heading
        truth = "\n".join(f"line {i}" for i in range(1, turn + 1))
        prediction = "\n".join(f"line {i}" for i in range(turn, 0, -1))
        got = scorer.score(
            domain="terminal", trajectory="t", ground_truth=truth, prediction=prediction, history=history
        )
        assert got == rule_score(domain="terminal", ground_truth=truth, prediction=prediction, history=history)
        history.append(truth)


def test_scorer_rejects_an_empty_cache_and_scores_an_empty_history() -> None:
    with pytest.raises(ValueError):
        RuleScorer(max_trajectories=0)
    args: dict[str, Any] = {"domain": "terminal", "ground_truth": "x y z", "prediction": "x y z", "history": []}
    assert RuleScorer().score(trajectory="t", **args) == rule_score(**args)

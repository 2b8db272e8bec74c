"""The rule score: deterministic, free, offline. See docs/rule_judge.md for what it can and cannot tell."""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from awbench.judging.rules import deterministic, masking, structure
from awbench.judging.rules.masking import mask
from awbench.judging.rules.metadata import metadata_format
from awbench.judging.rules.structure import ratio, structure_score
from awbench.judging.rules.text import has_content_chars, line_keys, words_of

RULES_VERSION = "2"


class RuleResult(NamedTuple):
    """The rule score of one prediction, as plain values (a run records it as `records.RuleParts`): rule
    workers import no pydantic, and a tuple crosses their pipes cheaply."""

    score: float  # 0..1
    parts: dict[str, float]
    exact_match: bool
    deterministic_complete: bool


# A non-exact prediction's score: RECALL_WEIGHT of it is deterministic recall, the rest is shape (structure,
# metadata format and length, weighted as below among those that have something to check).
RECALL_WEIGHT = 0.5
SHAPE_WEIGHTS: dict[str, float] = {"structure": 0.5, "metadata_format": 0.3, "length": 0.2}
# Any observation of the right kind has much of the truth's shape (two Android screens share a status bar and
# most widget classes), so this share of the shape credit is only earned as far as deterministic content is
# right. With nothing deterministic to check, shape is all there is and counts in full.
SHAPE_GATED = 0.5
# A prediction that is not an exact match (after masking) scores at most this: the rest is kept for
# getting the pre-existing content right too, which only an exact match proves.
NON_EXACT_CEILING = 0.9


def _length_similarity(truth_lines: list[str], prediction_lines: list[str]) -> float:
    chars = ratio(len("\n".join(truth_lines)), len("\n".join(prediction_lines)))
    return (chars + ratio(len(truth_lines), len(prediction_lines))) / 2


def combine(parts: dict[str, float | None]) -> float:
    """The score of a non-exact, non-empty prediction from its parts; a part that is None had nothing to check
    and leaves the weighting (it is neither credited nor held against the prediction)."""
    checked = {name: (weight, part) for name, weight in SHAPE_WEIGHTS.items() if (part := parts.get(name)) is not None}
    shape = sum(weight * part for weight, part in checked.values()) / sum(weight for weight, _ in checked.values())
    recall = parts.get("deterministic_recall")
    if recall is None:
        return NON_EXACT_CEILING * shape
    gate = 1 - SHAPE_GATED + SHAPE_GATED * recall
    return NON_EXACT_CEILING * (RECALL_WEIGHT * recall + (1 - RECALL_WEIGHT) * shape * gate)


def clear_caches() -> None:
    """Forget everything the rule judge's process-wide caches hold (for measuring cold performance)."""
    masking.clear_caches()
    deterministic.clear_caches()
    structure.clear_caches()
    has_content_chars.cache_clear()
    words_of.cache_clear()
    line_keys.cache_clear()


def rule_score(*, domain: str, ground_truth: str, prediction: str, history: list[str]) -> RuleResult:
    """Score `prediction` against `ground_truth` (both without the observation marker), given `history`:
    the trajectory's earlier action prompts and observations, ending with the current action."""
    return _score(domain, ground_truth, prediction, deterministic.index_history(history))


class RuleScorer:
    """`rule_score` for many samples: it keeps the history indexes of the `max_trajectories` trajectories
    scored last. The consecutive turns of a trajectory share their history (turn t's is turn t-1's plus an
    action and an observation), so a trajectory scored in turn order indexes each history item once; a
    history that does not start with the cached one (another order, another trajectory under the same id)
    is indexed again, reusing what it has in common with the cached one. Results are exactly `rule_score`'s.
    Not thread-safe: use one scorer per thread."""

    def __init__(self, max_trajectories: int = 16) -> None:
        if max_trajectories < 1:
            raise ValueError("max_trajectories must be at least 1")
        self.max_trajectories = max_trajectories
        self._prefixes: OrderedDict[str, deterministic._Prefix] = OrderedDict()

    def score(
        self, *, domain: str, trajectory: str, ground_truth: str, prediction: str, history: list[str]
    ) -> RuleResult:
        """`rule_score(domain=..., ground_truth=..., prediction=..., history=...)`; `trajectory` is a stable id
        of the trajectory the history belongs to."""
        return _score(domain, ground_truth, prediction, self._index(trajectory, list(history)))

    def _index(self, trajectory: str, history: list[str]) -> deterministic.HistoryIndex:
        if not history:
            return deterministic.index_history(history)
        earlier = history[:-1]
        prefix = self._prefixes.get(trajectory)
        if prefix is not None and prefix.starts(earlier):
            prefix.extend(earlier[len(prefix.items) :])
        else:
            prefix = deterministic._Prefix.of(earlier, known=prefix)
        self._prefixes[trajectory] = prefix
        self._prefixes.move_to_end(trajectory)
        while len(self._prefixes) > self.max_trajectories:
            self._prefixes.popitem(last=False)
        return deterministic.HistoryIndex(prefix, history[-1])


def _score(domain: str, ground_truth: str, prediction: str, history: deterministic.HistoryIndex) -> RuleResult:
    masked_truth, masked_prediction = mask(ground_truth), mask(prediction)
    truth_lines, truth_keys = map(list, line_keys(masked_truth))
    prediction_lines, prediction_keys = map(list, line_keys(masked_prediction))
    exact = truth_lines == prediction_lines

    items = deterministic.deterministic_items(truth_keys, history)
    recall = deterministic.recall(items, prediction_keys, ("\n".join(prediction_lines), prediction))

    parts: dict[str, float | None] = {
        "deterministic_recall": recall,
        "metadata_format": metadata_format(truth_lines, prediction_lines),
        "structure": structure_score(domain, ground_truth, prediction, masked_truth, masked_prediction),
        "length": _length_similarity(truth_lines, prediction_lines),
        "exact_match": 1.0 if exact else 0.0,
    }
    if exact:
        score = 1.0
    elif not truth_lines or not prediction_lines:
        score = 0.0  # an empty prediction of a non-empty observation, or the reverse, is simply wrong
    else:
        score = combine(parts)
    return RuleResult(
        score=min(1.0, max(0.0, score)),
        parts={name: min(1.0, max(0.0, value)) for name, value in parts.items() if value is not None},
        exact_match=exact,
        deterministic_complete=recall is None or recall == 1.0,
    )

"""Tier 3, runtime metadata: a placeholder in the truth is satisfied by a placeholder of the same kind
at the corresponding place of the prediction, whatever value each stood for."""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher

from awbench.judging.rules.masking import placeholder_kinds
from awbench.judging.rules.text import PLACEHOLDER_RE

MAX_ALIGNED_LINES = 3000  # beyond this, kinds are counted over the whole text instead of aligned


def _kinds(lines: list[str]) -> Counter[str]:
    return placeholder_kinds("\n".join(lines))


def _with_placeholders(lines: list[str]) -> list[str]:
    return [line for line in lines if "⟨" in line and PLACEHOLDER_RE.search(line)]


def metadata_format(truth_lines: list[str], prediction_lines: list[str]) -> float | None:
    """How far the placeholders of truth and prediction match by kind in corresponding places, as a Jaccard
    index: matched / (truth's + prediction's - matched), so missing and surplus metadata both cost. The lines
    holding placeholders are aligned with difflib (other lines carry no metadata and are left out); equal
    blocks match all their placeholders, changed blocks match kind by kind. None when neither holds a
    placeholder: there is no format to check."""
    truth_lines, prediction_lines = _with_placeholders(truth_lines), _with_placeholders(prediction_lines)
    needed, predicted = _kinds(truth_lines), _kinds(prediction_lines)
    total = sum(needed.values()) + sum(predicted.values())
    if total == 0:
        return None
    if max(len(truth_lines), len(prediction_lines)) > MAX_ALIGNED_LINES:
        matched = sum((needed & predicted).values())
    else:
        matched = 0
        for tag, i1, i2, j1, j2 in SequenceMatcher(None, truth_lines, prediction_lines).get_opcodes():
            block = _kinds(truth_lines[i1:i2])
            if tag == "equal":
                matched += sum(block.values())
            elif tag == "replace":
                matched += sum((block & _kinds(prediction_lines[j1:j2])).values())
    return matched / (total - matched)

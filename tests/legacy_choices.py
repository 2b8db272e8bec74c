"""How an earlier awbench read a two-choice answer, under every protocol: the last `boxed{A}` or `boxed{B}`
(any case, spaces inside), else the last lone capital A or B. Tests use it to write the answers such a version
kept (under its version, "reference-choice-1"), and to show what that reading fell for."""

from __future__ import annotations

import re

from awbench.judging.choice.judge import ChoiceReader
from awbench.judging.choice.parsing import ChoiceReading

_BOXED = re.compile(r"boxed\{\s*([AB])\s*\}", re.I)
_BARE = re.compile(r"\b([AB])\b")


def legacy_choice(answer: str) -> str | None:
    boxed = _BOXED.findall(answer)
    if boxed:
        return str(boxed[-1]).upper()
    bare = _BARE.findall(answer)
    return str(bare[-1]) if bare else None


def _reading(raw: str, question: object) -> ChoiceReading:
    choice = legacy_choice(raw)
    return ChoiceReading(choice, (), None if choice else "no choice")  # type: ignore[arg-type]


LEGACY_READER = ChoiceReader("reference-choice-1", _reading)

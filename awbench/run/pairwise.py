"""Pairwise comparison of two runs by an LLM judge: for each sample both runs predicted, which prediction is closer
to the real observation? Asked in both orders (each run's prediction once as Response A), through the choice judge
(`awbench.judging.choice`). The answers are kept outside both runs, never mixed with their rubric scores:

    OUTPUT/pairwise/<x>__vs__<y>/<judge id>/pair.json      the two runs and the judge (`PairInfo`)
    OUTPUT/pairwise/<x>__vs__<y>/<judge id>/answers.jsonl  one row per question; the last of a key wins

x and y are the two run names in sorted order, so `compare A B` and `compare B A` share their answers; the judge id
names the judge's model, settings and prompt set. Questions are keyed `{sample key}|{x or y}`, the run whose
prediction is Response A; each answer row records the hash of its question's messages, so a changed prediction
or prompt is asked again and nothing else is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from awbench.judging.prompts import Protocol, protocol_request
from awbench.records import SCHEMA_VERSION, PredictionRecord, Sample
from awbench.run.scoring import GenKey
from awbench.run.store import JudgeInfo

PAIRWISE_DIR = "pairwise"
PAIR_FILE = "pair.json"
Side = Literal["x", "y"]
SIDES: tuple[Side, Side] = ("x", "y")


@dataclass(frozen=True)
class Contender:
    """A run as the pairwise judge sees it: its name, directory and predictions."""

    name: str
    path: Path
    predictions: Mapping[GenKey, PredictionRecord]


@dataclass(frozen=True)
class PairedSample:
    """A sample both runs predicted, with each run's prediction as the judge is shown it, x's first."""

    sample: Sample
    texts: tuple[str, str]


@dataclass
class Pairing:
    """Two runs' predictions side by side: what can be compared, and what is left out and why."""

    x: str
    y: str
    paired: list[PairedSample]
    missing: dict[str, int] = field(default_factory=dict)  # run -> samples it has no prediction for
    failed: dict[str, int] = field(default_factory=dict)  # run -> samples whose generation failed

    def left_out(self) -> list[str]:
        """One line per run that had samples left out, saying how many and why."""
        lines = []
        for run in (self.x, self.y):
            reasons = [
                f"{count} {why}"
                for count, why in ((self.missing.get(run, 0), "not predicted"), (self.failed.get(run, 0), "failed"))
                if count
            ]
            if reasons:
                lines.append(f"left out the samples {run} has no prediction for: {', '.join(reasons)}")
        return lines


def pair_predictions(samples: Iterable[Sample], a: Contender, b: Contender, protocol: Protocol) -> Pairing:
    """The samples both runs predicted (generation 0), x being the run whose name sorts first; each prediction as
    a judge of the prompt set's protocol is shown it (`protocol_request`: none for a failed generation)."""
    x, y = sorted((a, b), key=lambda run: run.name)
    pairing = Pairing(x=x.name, y=y.name, paired=[])
    for sample in samples:
        texts = []
        for run in (x, y):
            prediction = run.predictions.get((sample.key, 0))
            request = None if prediction is None else protocol_request(protocol, sample, prediction)
            text = None if request is None else request.prediction
            if prediction is None:
                pairing.missing[run.name] = pairing.missing.get(run.name, 0) + 1
            elif text is None:
                pairing.failed[run.name] = pairing.failed.get(run.name, 0) + 1
            texts.append(text)
        if texts[0] is not None and texts[1] is not None:
            pairing.paired.append(PairedSample(sample, (texts[0], texts[1])))
    return pairing


def question_key(sample_key: str, first: Side) -> str:
    return f"{sample_key}|{first}"


def pair_directory(output: Path, x: str, y: str, judge_id: str) -> Path:
    return output / PAIRWISE_DIR / f"{x}__vs__{y}" / judge_id


class PairRun(BaseModel):
    name: str
    path: str


class PairInfo(BaseModel):
    """pair.json: which two runs, on which data, compared by which judge."""

    schema_version: int = SCHEMA_VERSION
    x: PairRun
    y: PairRun
    data_fingerprint: str
    judge: JudgeInfo

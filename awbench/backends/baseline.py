"""Built-in baselines that need no network and no weights.

- `baseline:oracle` returns the real observation: the upper bound, and a check of the whole pipeline.
- `baseline:last-observation` returns the previous turn's real observation (empty on the first turn):
  the persistence baseline of world modelling.
- `baseline:empty` returns nothing: every sample fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from awbench.backends import BackendBase, GenerationRequest
from awbench.config import ModelSettings
from awbench.errors import AwbenchError
from awbench.records import BenchmarkRecord, Generation
from awbench.suggest import close_names, suggestion

Prediction = tuple[str, str | None]  # the text, and why it is empty when it is


def _oracle(record: BenchmarkRecord) -> Prediction:
    return record.ground_truth, None


def _last_observation(record: BenchmarkRecord) -> Prediction:
    if record.turn_idx == 1:
        return "", "first turn: no previous observation to repeat"
    return record.response[record.turn_idx - 2], None


def _empty(record: BenchmarkRecord) -> Prediction:
    return "", "the empty baseline predicts nothing"


BASELINES: dict[str, Callable[[BenchmarkRecord], Prediction]] = {
    "oracle": _oracle,
    "last-observation": _last_observation,
    "empty": _empty,
}


class UnknownBaseline(AwbenchError, ValueError):
    """`--model baseline:NAME` with a NAME that is not one of BASELINES."""

    key = "unknown_baseline"


class BaselineBackend(BackendBase):
    def __init__(self, predict: Callable[[BenchmarkRecord], Prediction]):
        self.predict = predict

    async def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        for request in requests:
            text, note = self.predict(request.sample.record)
            yield Generation(key=request.key, generation=request.generation, text=text, note=note, finish_reason="stop")
            await asyncio.sleep(0)  # let the judges start on what is saved instead of waiting for the last


def check_baseline(model: str) -> None:
    """Raises UnknownBaseline for a name that is not one of BASELINES (before any file is written)."""
    name = model.removeprefix("baseline:")
    if name not in BASELINES:
        names = ["baseline:" + b for b in BASELINES]
        close = suggestion(["baseline:" + b for b in close_names(name, BASELINES)])  # the prefix all share aside
        raise UnknownBaseline(f"unknown baseline {model!r}{close or '; choose one of: ' + ', '.join(names)}")


def preflight(settings: ModelSettings) -> None:
    check_baseline(settings.model)


def create(settings: ModelSettings, endpoints: Any = None) -> BaselineBackend:
    check_baseline(settings.model)
    return BaselineBackend(BASELINES[settings.model.removeprefix("baseline:")])

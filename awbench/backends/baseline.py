"""Built-in baselines that need no network and no weights.

- `baseline:oracle` returns the real observation: the upper bound, and a check of the whole pipeline.
- `baseline:last-observation` returns the previous turn's real observation (empty on the first turn):
  the persistence baseline of world modelling.
- `baseline:empty` returns nothing: every sample fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from awbench.backends import GenerationRequest
from awbench.config import ModelSettings
from awbench.records import BenchmarkRecord, Generation


def _oracle(record: BenchmarkRecord) -> str:
    return record.ground_truth


def _last_observation(record: BenchmarkRecord) -> str:
    return record.response[record.turn_idx - 2] if record.turn_idx > 1 else ""


def _empty(record: BenchmarkRecord) -> str:
    return ""


BASELINES: dict[str, Callable[[BenchmarkRecord], str]] = {
    "oracle": _oracle,
    "last-observation": _last_observation,
    "empty": _empty,
}


class UnknownBaseline(ValueError):
    """`--model baseline:NAME` with a NAME that is not one of BASELINES."""


class BaselineBackend:
    def __init__(self, predict: Callable[[BenchmarkRecord], str]):
        self.predict = predict

    async def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        for request in requests:
            yield Generation(key=request.key, text=self.predict(request.sample.record), finish_reason="stop")

    async def aclose(self) -> None:
        return None


def create(settings: ModelSettings) -> BaselineBackend:
    name = settings.model.removeprefix("baseline:")
    if name not in BASELINES:
        raise UnknownBaseline(f"unknown baseline {settings.model!r}; choose one of: {', '.join('baseline:' + b for b in BASELINES)}")
    return BaselineBackend(BASELINES[name])

"""Candidate-model backends. Each one is a module with a `create(settings) -> Backend`; they are imported
lazily so that a backend's heavy dependencies (vllm, openai) load only when it is used."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from awbench.config import ModelSettings
from awbench.records import Generation, Sample

_MODULES = {"baseline": "awbench.backends.baseline", "openai": "awbench.backends.openai_api", "vllm": "awbench.backends.vllm_offline"}


class GenerationRequest(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    sample: Sample
    messages: list[dict[str, str]]
    seed: int | None = None  # per-sample seed derived from the run seed

    @property
    def key(self) -> str:
        return self.sample.key


class Backend(Protocol):
    def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        """Yield one Generation per request, in completion order, as soon as each is available."""
        ...

    async def aclose(self) -> None: ...


def create_backend(settings: ModelSettings) -> Backend:
    module = importlib.import_module(_MODULES[settings.backend])
    return module.create(settings)


def infer_backend_name(model: str, base_urls: list[str]) -> str:
    if model.startswith("baseline:"):
        return "baseline"
    return "openai" if base_urls else "vllm"

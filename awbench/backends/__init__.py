"""Candidate-model backends. Each one is a module with a `create(settings, endpoints) -> Backend` (and may
have a `preflight(settings)`), found by name in the registry (`awbench.plugins`, group `awbench.backends`,
which installed packages extend) and imported lazily so that a backend's heavy dependencies (vllm, openai)
load only when it is used."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from awbench import plugins
from awbench.config import ModelSettings
from awbench.prefix_order import Place, prefix_sorted
from awbench.records import Generation, Sample
from awbench.world_model.messages import world_model_messages

if TYPE_CHECKING:
    from awbench.transport.endpoints import Endpoints


@dataclass(frozen=True)
class GenerationRequest:
    sample: Sample
    generation: int = 0  # which of the sample's K generations
    seed: int | None = None  # per sample and generation, derived from the run seed

    @property
    def key(self) -> str:
        return self.sample.key

    @property
    def messages(self) -> list[dict[str, str]]:
        """Built when asked for (when the request is sent), so that pending requests hold no copy of the data."""
        return world_model_messages(self.sample.record)


def generation_place(request: GenerationRequest) -> Place:
    """The generations of a sample are its variants (the same prompt)."""
    return request.sample.place(request.generation)


def trajectory_order(requests: Sequence[GenerationRequest]) -> list[GenerationRequest]:
    """Trajectories in order of first appearance, each one's turns together and in turn order (then the
    generations of a turn): consecutive prompts share long prefixes, which prefix caches serve. The prefix
    order every sender follows (`awbench.prefix_order`)."""
    return prefix_sorted(requests, generation_place)


class Backend(Protocol):
    """Every hook the run uses of a candidate model. `BackendBase` gives the optional ones their defaults."""

    async def check(self) -> None:
        """Raise EndpointDown or FatalAPIError when the model cannot be reached (before the first sample)."""
        ...

    def generate(self, requests: list[GenerationRequest]) -> AsyncIterator[Generation]:
        """Yield one Generation per request, in completion order, as soon as each is available."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds (clients, engines), once the run is done with it."""
        ...


class BackendBase:
    """The optional hooks' defaults, for a backend that has nothing to check and nothing to release."""

    async def check(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def check_backend(settings: ModelSettings) -> None:
    """Before anything is read: the backend is known (UnknownPlugin names the known ones) and its own checks
    pass (a baseline's name, an endpoint's key)."""
    plugins.preflight("awbench.backends", settings.backend, settings)


def describe_backend(settings: ModelSettings) -> dict[str, Any]:
    """What run.json records of the model beyond its settings (a Python model's import path and version)."""
    return plugins.describe("awbench.backends", settings.backend, settings)


def create_backend(settings: ModelSettings, endpoints: Endpoints | None = None) -> Backend:
    backend: Backend = plugins.load("awbench.backends", settings.backend).create(settings, endpoints)
    return backend


def infer_backend_name(model: str, base_urls: list[str]) -> str:
    if model.startswith("baseline:"):
        return "baseline"
    if model.startswith("python:"):
        return "python"
    return "openai" if base_urls else "vllm"

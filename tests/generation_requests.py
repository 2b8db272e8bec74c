"""Generation requests for tests, and the openai backend run over a list of them."""

from __future__ import annotations

import asyncio

from awbench.backends import GenerationRequest
from awbench.backends.openai_api import create
from awbench.config import ModelSettings
from awbench.records import BenchmarkRecord, Generation, Sample


def generation_request(i: int, seed: int | None = None) -> GenerationRequest:
    record = BenchmarkRecord(
        task="terminal",
        id=i,
        prompt=[f"ls {i}"],
        response=["a.txt"],
        current_prompt=f"ls {i}",
        system_str="",
        turn_idx=1,
        total_turns=1,
    )
    sample = Sample(key=record.base_key(), record=record, origin=f"test:{i}")
    return GenerationRequest(sample=sample, seed=seed)


def settings_for(*urls: str, **overrides: object) -> ModelSettings:
    base = {"model": "m", "backend": "openai", "base_urls": list(urls), "max_retries": 2, "request_timeout": 10.0}
    return ModelSettings(**(base | overrides))


def run(settings: ModelSettings, requests: list[GenerationRequest]) -> list[Generation]:
    async def go() -> list[Generation]:
        backend = create(settings)
        try:
            return [g async for g in backend.generate(requests)]
        finally:
            await backend.aclose()

    return asyncio.run(go())

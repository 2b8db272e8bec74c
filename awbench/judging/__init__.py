"""Judges score predictions against the real observation. Each judge is a module with a
`create(settings) -> Judge`, imported lazily so the LLM client loads only when used."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from awbench.config import JudgeSettings
from awbench.records import JudgeKind, JudgmentRecord, JudgeRequest

_MODULES: dict[JudgeKind, str] = {"llm": "awbench.judging.llm", "rules": "awbench.judging.rule_judge"}


class BudgetExhausted(Exception):
    """Raised by a judge that stopped before the spend would pass `--max-cost`; the run is resumable."""


class Judge(Protocol):
    kind: JudgeKind

    def describe(self) -> dict[str, Any]:
        """What run.json records about this judge beyond its settings (e.g. the prompt set and its sha256)."""
        ...

    def cache_key(self, request: JudgeRequest) -> str:
        """A hash of everything that can change this request's verdict."""
        ...

    def judge(self, requests: list[JudgeRequest]) -> AsyncIterator[JudgmentRecord]:
        """Yield one JudgmentRecord per request, in completion order."""
        ...

    async def aclose(self) -> None: ...


def create_judges(settings: JudgeSettings) -> list[Judge]:
    kinds: list[JudgeKind] = [k for k, used in (("llm", settings.uses_llm), ("rules", settings.uses_rules)) if used]
    return [importlib.import_module(_MODULES[kind]).create(settings) for kind in kinds]

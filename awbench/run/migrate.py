"""Runs written before judge evaluations existed (run.json schema 1: one `judgments.jsonl` for every judge)
are moved into the current layout the first time a command that writes to them opens them
(`RunStore.read_manifest` under `RunStore.locked`; a command that only reads such a run says how). Nothing is
deleted: the old file is kept as `judgments.jsonl.migrated`. Here: which evaluation each judge of such a run
becomes (pure functions; the store moves the files)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from awbench.config import JudgeSettings
from awbench.judging import llm_judge_id
from awbench.judging.llm.prompts import BUILTIN_SETS
from awbench.judging.rules.judge import RULES_JUDGE_PREFIX


def legacy_judge_ids(
    settings: JudgeSettings | None, described: dict[str, dict[str, Any]], kinds: Iterable[str]
) -> dict[str, str]:
    """Judge kind -> the evaluation id its judge has now, for the kinds judged (`kinds`) or described in
    run.json's schema-1 `judges`; none without judge settings."""
    if settings is None:
        return {}
    ids: dict[str, str] = {}
    for kind in sorted(set(kinds) | set(described)):
        facts = described.get(kind, {})
        if kind == "llm":
            name = str(facts.get("prompt_set") or settings.prompts)
            label = name if name in BUILTIN_SETS or name == "imported" else "custom"
            ids[kind] = llm_judge_id(settings, label, str(facts.get("prompt_sha256", "")))
        else:
            ids[kind] = f"{RULES_JUDGE_PREFIX}{facts.get('rules_version', '1')}"
    return ids


def legacy_primary(settings: JudgeSettings | None, ids: dict[str, str]) -> str | None:
    """The primary evaluation: the LLM judge's when the run used one, else the rule judge's."""
    return ids.get("llm") if settings is not None and settings.uses_llm else ids.get("rules")

"""Runs written before judge evaluations existed (run.json schema 1: one `judgments.jsonl` for every judge)
are moved into the current layout the first time they are opened. Nothing is deleted: the old file is kept as
`judgments.jsonl.migrated`."""

from __future__ import annotations

from collections import defaultdict

from awbench.files import JsonlTable, write_atomic
from awbench.judging import llm_judge_id
from awbench.judging.prompts import BUILTIN_SETS
from awbench.judging.rule_judge import RULES_JUDGE_PREFIX
from awbench.records import JudgmentRecord
from awbench.run.store import MANIFEST_VERSION, JudgeInfo, RunManifest, RunStore


def migrate_run(store: RunStore, manifest: RunManifest) -> RunManifest:
    legacy = JsonlTable(store.path / "judgments.jsonl", JudgmentRecord, lambda r: (r.key, r.judge))
    by_kind: dict[str, list[JudgmentRecord]] = defaultdict(list)
    for record in legacy.load().values():
        by_kind[record.judge].append(record)
    settings = manifest.config.judge
    ids: dict[str, str] = {}
    for kind in sorted(set(by_kind) | set(manifest.judges)):
        described = manifest.judges.get(kind, {})
        if settings is None:
            continue
        if kind == "llm":
            name = str(described.get("prompt_set") or settings.prompts)
            label = name if name in BUILTIN_SETS or name == "imported" else "custom"
            judge_id = llm_judge_id(settings, label, str(described.get("prompt_sha256", "")))
        else:
            judge_id = f"{RULES_JUDGE_PREFIX}{described.get('rules_version', '1')}"
        ids[kind] = judge_id
        evaluation = store.evaluation(judge_id)
        evaluation.ensure(JudgeInfo(id=judge_id, kind=kind, settings=settings.model_copy(update={"kind": kind}),  # type: ignore[arg-type]
                                    described=described))
        evaluation.judgments.rewrite(by_kind.get(kind, []))
    primary = ids.get("llm") if settings is not None and settings.uses_llm else ids.get("rules")
    if primary and store.scores_path.exists():
        write_atomic(store.evaluation(primary).scores_path, store.scores_path.read_text(encoding="utf-8"))
    if legacy.path.exists():
        legacy.path.rename(legacy.path.with_name("judgments.jsonl.migrated"))
    migrated = manifest.model_copy(update={"schema_version": MANIFEST_VERSION, "primary_judge": primary, "judges": {}})
    store.write_manifest(migrated)
    return migrated

"""Fake-but-valid runs for the analysis tests (leaderboard, compare, show, report): `write_data` writes real
data files, read by the real loader; `make_run` writes records with the pydantic models and scores.json from
`awbench.run.scoring`; `invoke` runs the analysis commands.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

import typer
from typer.testing import CliRunner

from awbench.config import (
    DataSettings,
    JudgeSettings,
    ModelSettings,
    RunConfig,
    ScoringSettings,
)
from awbench.data.dataset import load_samples
from awbench.domains import DIMENSIONS, to_100
from awbench.records import JudgmentRecord, PredictionRecord, RuleParts, VerdictRecord
from awbench.run.agreement import spearman
from awbench.run.scoring import ScoresFile, score_table, variance_components
from awbench.run.store import JudgeInfo, RunManifest, RunStore

PROMPT_SHA = "1a2b3c" + "0" * 58
# Tiny data: MCP has a two-turn and a one-turn trajectory, Search two one-turn trajectories.
SMALL = {"mcp": [2, 1], "search": [1, 1]}
MCP = ["mcp/m0/1", "mcp/m0/2", "mcp/m1/1"]
SEARCH = ["search/s0/1", "search/s1/1"]

Grade = int | dict[str, int] | list[dict[str, int]] | str | None
UNSCORED = "unscored"  # a grade: the judge gave no usable verdict (a failed judgment, not a pending one)


def write_data(root: Path, trajectories: Mapping[str, list[int]], salt: str = "") -> Path:
    """{domain: [turns of each trajectory]} -> `{domain}_test.jsonl` files; every turn is one sample,
    keyed `{domain}/{d}{t}/{turn}` (d: the domain's initial, t: the trajectory's index)."""
    root.mkdir(parents=True, exist_ok=True)
    for domain, lengths in trajectories.items():
        lines = []
        for t, length in enumerate(lengths):
            actions = [f"### Turn {i}\n**Action:**\nrun {domain} {t} step {i}{salt}" for i in range(1, length + 1)]
            observations = [
                f"**Environment Observation:**\n{domain} output {t}.{i}\nline two" for i in range(1, length + 1)
            ]
            for turn in range(1, length + 1):
                lines.append(
                    json.dumps(
                        {
                            "task": domain,
                            "id": f"{domain[0]}{t}",
                            "prompt": actions[:turn],
                            "response": observations[:turn],
                            "current_prompt": actions[turn - 1],
                            "system_str": f"You simulate {domain} trajectory {t}.",
                            "turn_idx": turn,
                            "total_turns": length,
                        }
                    )
                )
        (root / f"{domain}_test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _verdicts(grade: Grade) -> list[dict[str, int]]:
    if isinstance(grade, int):
        return [{d: grade for d in DIMENSIONS}]
    return grade if isinstance(grade, list) else [grade]  # type: ignore[list-item]


def make_run(
    results: Path,
    name: str,
    data: Path,
    grades: Mapping[str, Grade],
    *,
    model: str | None = None,
    judge_model: str = "gpt-5.2-2025-12-11",
    prompt_set: str = "rubric",
    prompt_sha: str = PROMPT_SHA,
    policy: str = "minimum",
    predictions: Mapping[str, str] | None = None,
    rules: Mapping[str, float] | None = None,
    cost: float | None = None,
    strengths: tuple[str, ...] = ("keeps the format",),
    weaknesses: tuple[str, ...] = ("invents a file",),
    llm: bool = True,
) -> RunStore:
    """A scored run. `grades`: key -> 1..5 for every dimension, a {dimension: 1..5}, a list of those (one per
    verdict), None for a failed generation, or `UNSCORED` for a judgment that failed. Samples without a grade
    get no prediction (not judged yet: the evaluation is incomplete).
    `rules` (key -> 0..1) adds the rule judge; with `llm=False` it is the only judge. The LLM evaluation's id is
    `llm-{name}` (any character a judge id may not hold as `-`) and the rule judge's `rules-v1`."""
    settings = DataSettings(source=str(data))
    loaded = load_samples(settings)
    samples = {s.key: s for s in loaded.samples}
    store = RunStore(results / name)
    kind = "llm" if rules is None else "both" if llm else "rules"
    judge_settings = JudgeSettings(kind=kind, model=judge_model, prompts=prompt_set)
    config = RunConfig(
        run_name=name,
        output=results,
        data=settings,
        model=ModelSettings(model=model or name, backend="openai"),
        judge=judge_settings,
        scoring=ScoringSettings(failure_policy=policy),
    )
    llm_id, rules_id = "llm-" + re.sub(r"[^A-Za-z0-9._-]", "-", name), "rules-v1"
    store.create(
        RunManifest(
            config=config,
            data_source=loaded.source,
            data_fingerprint=loaded.fingerprint,
            samples=len(samples),
            primary_judge=llm_id if llm else rules_id,
        )
    )
    preds: dict = {}
    judgments: dict = {}
    rule_judgments: dict = {}
    for key, grade in grades.items():
        sample = samples[key]
        truth = sample.record.ground_truth.split("\n", 1)[1]
        text = (predictions or {}).get(key, truth)
        preds[(key, 0)] = PredictionRecord(
            key=key,
            domain=sample.domain,
            sample_hash=sample.hash,
            status="error" if grade is None else "ok",
            prediction="" if grade is None else text,
            error="HTTP 500" if grade is None else None,
        )
        if grade is None:
            continue
        if grade == UNSCORED:
            judgments[(key, 0)] = JudgmentRecord(
                key=key, domain=sample.domain, judge="llm", cache_key=key, status="failed", error="no usable verdict"
            )
            continue
        verdicts = [
            VerdictRecord(status="complete", scores=v, strengths=list(strengths), weaknesses=list(weaknesses))
            for v in _verdicts(grade)
        ]
        dims = {d: sum(v.scores[d] for v in verdicts) / len(verdicts) for d in DIMENSIONS}
        judgments[(key, 0)] = JudgmentRecord(
            key=key,
            domain=sample.domain,
            judge="llm",
            cache_key=key,
            status="ok",
            score=to_100(sum(dims.values()) / len(dims)),
            dimensions=dims,
            verdicts=verdicts,
        )
        if rules is not None:
            r = rules.get(key, 0.0)
            rule_judgments[(key, 0)] = JudgmentRecord(
                key=key,
                domain=sample.domain,
                judge="rules",
                cache_key=key,
                status="ok",
                score=r * 100,
                rule=RuleParts(score=r, parts={"lines": r}, exact_match=r == 1, deterministic_complete=True),
            )
    store.predictions.rewrite(list(preds.values()))
    keys = [(s.key, s.domain) for s in samples.values()]
    tables = {}
    if llm:
        described = {
            "protocol": "awbench",
            "prompt_set": prompt_set,
            "prompt_sha256": prompt_sha,
            "parser_version": "1",
        }
        _evaluation(store, llm_id, "llm", judge_settings, described, judgments)
        tables[llm_id] = score_table("llm", keys, preds, judgments, policy)  # type: ignore[arg-type]
    if rules is not None:
        _evaluation(store, rules_id, "rules", judge_settings, {"rules_version": "1"}, rule_judgments)
        tables[rules_id] = score_table("rules", keys, preds, rule_judgments, policy)  # type: ignore[arg-type]
    clustered = [(key, domain, samples[key].record.trajectory_id) for key, domain in keys]
    records = {llm_id: judgments, rules_id: rule_judgments}
    for judge_id, table in tables.items():
        extra: dict = {"cost_usd": cost if judge_id == llm_id or not llm else None}
        extra["variance"] = variance_components(table.judge, clustered, preds, records[judge_id], policy)  # type: ignore[arg-type]
        if judge_id == llm_id and rules is not None:
            extra["rules"] = tables[rules_id]
            common = [k for k in judgments if k in rule_judgments]
            extra["agreement"] = {
                "overall": spearman([rule_judgments[k].score for k in common], [judgments[k].score for k in common])
            }
        scores = ScoresFile.from_tables(name, table, policy, judge_id=judge_id, **extra)  # type: ignore[arg-type]
        store.write_scores(scores, store.evaluation(judge_id), primary=judge_id == (llm_id if llm else rules_id))
    return store


def _evaluation(
    store: RunStore, judge_id: str, kind: str, settings: JudgeSettings, described: dict, records: dict
) -> None:
    evaluation = store.evaluation(judge_id)
    evaluation.ensure(
        JudgeInfo(id=judge_id, kind=kind, settings=settings.model_copy(update={"kind": kind}), described=described)
    )
    evaluation.judgments.rewrite(list(records.values()))


def cli_app() -> typer.Typer:
    from awbench.cli import app

    return app


def invoke(*args: str):
    return CliRunner().invoke(cli_app(), list(args), env={"COLUMNS": "250"})

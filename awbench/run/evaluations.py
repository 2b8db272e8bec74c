"""A run's judge evaluations -> their scores.json files: one per evaluation, and the primary's as the run's.

The primary's file also carries, for a run made with `--judge both`, the rule score beside the LLM judge's
and their agreement (Spearman per domain).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from awbench.judging.llm.prompts import reference_subtask
from awbench.judging.llm.verdict_records import consistency_stats
from awbench.records import JudgmentRecord, PredictionRecord, Sample, Usage
from awbench.run.failures import failure_groups
from awbench.run.reference_scores import reference_scores
from awbench.run.scoring import GenKey, ScoresFile, score_table, variance_components
from awbench.run.store import Evaluation, RunStore, StoreError, match_judge

REFERENCE_PROTOCOLS = ("reference", "imported")  # evaluations whose verdicts carry the reference's reading


def score_run(store: RunStore, samples: list[Sample], reuse_fresh: bool = False) -> dict[str, ScoresFile]:
    """Write every evaluation's scores.json; judge id -> its scores. With `reuse_fresh`, scores written after
    the last record they summarise, under the same policy, are read instead of computed again (a resumed run
    that had nothing to do)."""
    manifest = store.read_manifest()
    policy = manifest.config.scoring.failure_policy
    k = manifest.config.model.generations
    if reuse_fresh and (fresh := _fresh_scores(store, policy, k)) is not None:
        return fresh
    predictions = store.predictions.load(keep=_outcome)
    keys = [(s.key, s.domain) for s in samples]
    clustered = [(s.key, s.domain, s.record.trajectory_id) for s in samples]
    evaluations = store.evaluations()
    infos = {e.id: e.read_info() for e in evaluations}
    judgments = {e.id: e.judgments.load() for e in evaluations}
    tables = {e.id: score_table(infos[e.id].kind, keys, predictions, judgments[e.id], policy, k) for e in evaluations}
    both = manifest.config.judge is not None and manifest.config.judge.kind == "both"
    rules_id = next((i for i, info in infos.items() if info.kind == "rules"), None)
    results: dict[str, ScoresFile] = {}
    for evaluation in evaluations:
        judge_id = evaluation.id
        primary = judge_id == manifest.primary_judge
        extra: dict = {}
        if primary and both and rules_id is not None and infos[judge_id].kind == "llm":
            extra["rules"] = tables[rules_id]
            extra["agreement"] = rule_llm_agreement(keys, judgments[judge_id], judgments[rules_id])
        protocol = infos[judge_id].described.get("protocol")
        if protocol in REFERENCE_PROTOCOLS:
            extra["reference"] = reference_scores(
                [(s.key, reference_subtask(s.record)) for s in samples],
                predictions,
                judgments[judge_id],
                policy,
                read_by_code=protocol == "reference",
                repeated=sum(s.repeats for s in samples),
            )
        records = judgments[judge_id].values()
        repeated = [r for r in records if len(r.verdicts) > 1]
        scores = ScoresFile.from_tables(
            store.name,
            tables[judge_id],
            policy,
            judge_id=judge_id,
            generations=k,
            judge_consistency=consistency_stats(repeated) if repeated else None,
            variance=variance_components(infos[judge_id].kind, clustered, predictions, judgments[judge_id], policy, k),
            cost_usd=_total_cost(records),
            usage=usage_totals(p.usage for p in predictions.values()),
            judge_usage=usage_totals(v.usage for r in records for v in r.verdicts),
            failures=failure_groups(predictions.values(), records),
            stopped=infos[judge_id].stopped,
            **extra,
        )
        store.write_scores(scores, evaluation, primary=primary)
        results[judge_id] = scores
    return results


def _outcome(record: PredictionRecord) -> PredictionRecord:
    """What scoring reads of a prediction: not its texts, which are as large as the data's observations."""
    return record.model_copy(update={"prediction": "", "raw": None, "reasoning": None})


def _fresh_scores(store: RunStore, policy: str, generations: int) -> dict[str, ScoresFile] | None:
    evaluations = store.evaluations()
    if not evaluations or not store.scores_path.is_file():
        return None
    found = {}
    for evaluation in evaluations:
        written = _mtime(evaluation.scores_path)
        read = (store.predictions.path, evaluation.judgments.path, evaluation.info_path)  # judge.json: `stopped`
        if written is None or written <= max(_mtime(path) or 0 for path in read):
            return None
        try:
            scores = evaluation.read_scores()
        except StoreError:  # not as awbench wrote it (edited by hand): made again
            return None
        if scores is None or (scores.failure_policy, scores.generations) != (policy, generations):
            return None
        found[evaluation.id] = scores
    return found


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def rule_llm_agreement(
    keys: list[tuple[str, str]], llm: Mapping[GenKey, JudgmentRecord], rules: Mapping[GenKey, JudgmentRecord]
) -> dict[str, float | None]:
    """Spearman correlation of the rule score with the LLM total, per domain and over all generations."""
    from awbench.run.agreement import (
        spearman,  # numpy: only runs judged by both judges get here
    )

    pairs: dict[str, list[tuple[float, float]]] = {}
    for (key, generation), b in llm.items():
        a = rules.get((key, generation))
        if a and a.score is not None and b.score is not None:
            pairs.setdefault(b.domain, []).append((a.score, b.score))
    wanted = {domain for _, domain in keys}
    pairs = {d: p for d, p in pairs.items() if d in wanted}
    everything = [p for domain_pairs in pairs.values() for p in domain_pairs]
    result = {domain: spearman(*zip(*p)) if len(p) > 1 else None for domain, p in pairs.items()}
    result["overall"] = spearman(*zip(*everything)) if len(everything) > 1 else None
    return result


def resolve_judge(store: RunStore, judge: str | None) -> Evaluation:
    """An evaluation of the run by id, id prefix or kind; the primary by default (`store.match_judge`)."""
    kinds = {e.id: e.read_info().kind for e in store.evaluations()}
    return store.evaluation(match_judge(store.name, kinds, judge))


def _total_cost(records: Iterable[JudgmentRecord]) -> float | None:
    costs = [r.cost_usd for r in records if r.cost_usd is not None]
    return sum(costs) if costs else None


def usage_totals(usages: Iterable[Usage]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for usage in usages:
        for name, value in usage.model_dump(exclude={"schema_version"}).items():
            if value is not None:
                totals[name] = totals.get(name, 0) + value
    return totals

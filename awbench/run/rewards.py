"""Per-sample rewards in the mix the Qwen-AgentWorld report trains with: 0.9 x rubric + 0.1 x rule.

- rubric: the LLM judge's mean over the five dimensions (1..5), times 5, so 5..25;
- rule: 1 when the prediction equals the truth after runtime-metadata masking and every deterministic
  line is present, else 0 (binary, as in the report), times 25, so 0 or 25.
reward = 0.9 * rubric + 0.1 * rule, in 4.5..25. A failed generation gets the minimum rubric (1) and rule 0.
A run without both an LLM and a rule evaluation is refused (a reward needs both parts); a sample without both
verdicts gets `reward: null` and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

from awbench.files import write_output
from awbench.records import SCHEMA_VERSION, JudgmentRecord, PredictionRecord, Sample
from awbench.run.pipeline import PipelineError
from awbench.run.store import RunStore

RUBRIC_WEIGHT, RULE_WEIGHT = 0.9, 0.1


def sample_reward(
    prediction: PredictionRecord | None, llm: JudgmentRecord | None, rules: JudgmentRecord | None
) -> dict[str, Any]:
    if prediction is not None and prediction.failed:
        rubric_mean, rule_binary = 1.0, 0
    elif llm is None or not llm.dimensions or rules is None or rules.rule is None:
        return {"reward": None, "reason": "needs both an LLM verdict and a rule verdict (--judge both)"}
    else:
        rubric_mean = fmean(llm.dimensions.values())
        rule_binary = int(rules.rule.exact_match and rules.rule.deterministic_complete)
    rubric, rule = rubric_mean * 5.0, rule_binary * 25.0
    return {"reward": RUBRIC_WEIGHT * rubric + RULE_WEIGHT * rule, "rubric": rubric, "rule": rule}


def reward_evaluations(store: RunStore) -> dict[str, str]:
    """Kind (llm, rules) -> the evaluation whose verdicts make the reward: the first of each kind (the primary
    when it is one). A run without both is refused: its rewards would be the failed generations' alone."""
    ids: dict[str, str] = {}
    for evaluation in store.evaluations():
        ids.setdefault(evaluation.read_info().kind, evaluation.id)
    missing = [kind for kind in ("llm", "rules") if kind not in ids]
    if missing:
        name = store.path.name
        what = {
            "llm": "an LLM judge's evaluation (the rubric, 90% of the reward)",
            "rules": "a rule evaluation (the exact match, 10% of the reward)",
        }
        raise PipelineError(
            f"--reward needs {what[missing[0]]}, which {name} does not have: add it with "
            f"`awbench judge {name} --judge {missing[0]}`"
        )
    return ids


def write_rewards(store: RunStore, samples: list[Sample], path: Path) -> int:
    """From the run's first LLM evaluation (the primary when it is one) and its rule evaluation."""
    ids = reward_evaluations(store)
    predictions = store.predictions.load()
    judgments = {kind: store.evaluation(judge_id).judgments.load() for kind, judge_id in ids.items()}
    rows = [
        {
            "schema_version": SCHEMA_VERSION,
            "key": s.key,
            "domain": s.domain,
            "generation": g,
            **sample_reward(
                predictions.get((s.key, g)), judgments["llm"].get((s.key, g)), judgments["rules"].get((s.key, g))
            ),
        }
        for s in samples
        for g in range(store.read_manifest().config.model.generations)
    ]
    write_output(path, "".join(json.dumps(row) + "\n" for row in rows))
    return sum(row["reward"] is not None for row in rows)

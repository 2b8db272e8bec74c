"""The offline rule judge: a deterministic three-tier matcher (deterministic content must match,
pre-existing content must have the right shape, runtime metadata the right format)."""

from awbench.judging.rules.score import RULES_VERSION, RuleResult, RuleScorer, rule_score

__all__ = ["RULES_VERSION", "RuleResult", "RuleScorer", "rule_score"]

"""The offline rule judge: a deterministic three-tier matcher (deterministic content must match,
pre-existing content must have the right shape, runtime metadata the right format)."""

from awbench.judging.rules.score import RuleResult, RuleScorer, rule_score

__all__ = ["RuleResult", "RuleScorer", "rule_score"]

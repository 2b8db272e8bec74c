"""The offline rule judge: a deterministic three-tier matcher (deterministic content must match,
pre-existing content must have the right shape, runtime metadata the right format).

judge          RuleJudge: the Judge protocol over the scorers, in worker processes for a large run
workers        the worker processes; worker_loop, the loop each one runs
score          one prediction against its real observation: the three tiers combined
masking, deterministic, structure, metadata, jsonish, text   the scorers and what they share
"""

from awbench.judging.rules.score import RuleResult, RuleScorer, rule_score

__all__ = ["RuleResult", "RuleScorer", "rule_score"]

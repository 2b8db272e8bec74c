import pytest

from awbench.records import JudgmentRecord, PredictionRecord, RuleParts
from awbench.run.rewards import sample_reward


def _prediction(status="ok"):
    return PredictionRecord(key="k", domain="os", sample_hash="h", status=status, prediction="x")


def _llm(mean):
    dims = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), mean)
    return JudgmentRecord(key="k", domain="os", judge="llm", cache_key="c", status="ok", score=0.0, dimensions=dims)


def _rules(exact, complete=True):
    rule = RuleParts(score=1.0 if exact else 0.5, parts={}, exact_match=exact, deterministic_complete=complete)
    return JudgmentRecord(key="k", domain="os", judge="rules", cache_key="c", status="ok", score=0.0, rule=rule)


def test_an_exact_match_adds_the_full_rule_part():
    assert sample_reward(_prediction(), _llm(5.0), _rules(True)) == {
        "reward": pytest.approx(0.9 * 25 + 0.1 * 25),
        "rubric": 25.0,
        "rule": 25.0,
    }
    assert sample_reward(_prediction(), _llm(1.0), _rules(True))["reward"] == pytest.approx(0.9 * 5 + 2.5)


def test_the_rule_part_is_binary():
    assert sample_reward(_prediction(), _llm(4.0), _rules(False))["reward"] == pytest.approx(0.9 * 20)
    assert sample_reward(_prediction(), _llm(4.0), _rules(True, complete=False))["rule"] == 0.0


def test_a_failed_generation_gets_the_minimum_and_a_missing_verdict_none():
    assert sample_reward(_prediction("error"), None, None)["reward"] == pytest.approx(4.5)
    assert sample_reward(_prediction(), _llm(4.0), None)["reward"] is None

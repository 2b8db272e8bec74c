from statistics import fmean, stdev

import pytest

from awbench.domains import DOMAINS, macro_overall, partial_label, to_100
from awbench.records import JudgmentRecord, PredictionRecord
from awbench.run.scoring import score_table

GPT_5_4 = [70.10, 37.26, 53.69, 66.29, 60.00, 51.80, 68.58]
QWEN_AW_35B = [64.79, 36.69, 53.96, 65.63, 58.17, 49.55, 65.92]


def test_macro_overall_reproduces_published_numbers():
    assert round(macro_overall(dict(zip(DOMAINS, GPT_5_4))), 2) == 58.25  # type: ignore[arg-type]
    assert round(macro_overall(dict(zip(DOMAINS, QWEN_AW_35B))), 2) == 56.39  # type: ignore[arg-type]


def test_an_overall_needs_all_seven_domains():
    six = {**dict(zip(DOMAINS, GPT_5_4)), "os": None}
    assert macro_overall(six) is None and partial_label(six) == "partial (6 of 7 domains)"
    assert partial_label(dict(zip(DOMAINS, GPT_5_4))) is None and partial_label({}) == "partial (0 of 7 domains)"


def test_to_100_maps_the_rubric_scale():
    assert [to_100(x) for x in (1, 2, 3, 4, 5)] == [0.0, 25.0, 50.0, 75.0, 100.0]


def _prediction(key, domain, status="ok"):
    return PredictionRecord(key=key, domain=domain, sample_hash="h", status=status, prediction="x")


def _judgment(key, domain, dims):
    return JudgmentRecord(
        key=key,
        domain=domain,
        judge="llm",
        cache_key="c",
        status="ok",
        score=to_100(fmean(dims.values())),
        dimensions=dims,
    )


@pytest.fixture
def run_records():
    keys = [("mcp/1/1", "mcp"), ("mcp/1/2", "mcp"), ("mcp/2/1", "mcp"), ("os/1/1", "os")]
    predictions = {
        ("mcp/1/1", 0): _prediction("mcp/1/1", "mcp"),
        ("mcp/1/2", 0): _prediction("mcp/1/2", "mcp"),
        ("mcp/2/1", 0): _prediction("mcp/2/1", "mcp", status="error"),
        ("os/1/1", 0): _prediction("os/1/1", "os"),
    }
    five = {"format": 5.0, "factuality": 5.0, "consistency": 5.0, "realism": 5.0, "quality": 5.0}
    three = {"format": 3.0, "factuality": 3.0, "consistency": 3.0, "realism": 3.0, "quality": 3.0}
    judgments = {
        ("mcp/1/1", 0): _judgment("mcp/1/1", "mcp", five),
        ("mcp/1/2", 0): _judgment("mcp/1/2", "mcp", three),
        ("os/1/1", 0): _judgment("os/1/1", "os", three),
    }
    return keys, predictions, judgments


def test_failed_generation_scores_minimum_by_default(run_records):
    table = score_table("llm", run_records[0], run_records[1], run_records[2], policy="minimum")
    # mcp: 100, 50 and a failure at 0 -> 50; os: 50. Two domains of seven: no Overall, macro nor micro.
    assert table.domains["mcp"].score == pytest.approx(50.0)
    assert table.domains["mcp"].failed == 1 and table.domains["mcp"].scored == 3
    assert table.domains["mcp"].dimensions["format"] == pytest.approx(50.0)
    assert (table.overall, table.overall_micro, table.partial()) == (None, None, "partial (2 of 7 domains)")


def test_exclude_policy_reproduces_the_reference_script(run_records):
    table = score_table("llm", run_records[0], run_records[1], run_records[2], policy="exclude")
    assert table.domains["mcp"].score == pytest.approx(75.0)
    assert table.domains["mcp"].scored == 2 and table.domains["mcp"].failed == 1
    assert table.domains["os"].score == pytest.approx(50.0) and table.overall is None


def test_unscored_judgments_are_left_out_and_counted(run_records):
    keys, predictions, judgments = run_records
    judgments = {
        **judgments,
        ("os/1/1", 0): JudgmentRecord(key="os/1/1", domain="os", judge="llm", cache_key="c", status="failed"),
    }
    table = score_table("llm", keys, predictions, judgments, policy="minimum")
    assert table.domains["os"].score is None and table.domains["os"].unscored == 1
    assert table.partial() == "partial (1 of 7 domains)"  # only mcp has a score
    assert (table.n, table.failed, table.unscored) == (4, 1, 1)


def test_domains_are_in_published_order(run_records):
    keys, predictions, judgments = run_records
    table = score_table("llm", list(reversed(keys)), predictions, judgments, policy="minimum")
    assert list(table.domains) == ["mcp", "os"]


def test_a_sample_scores_the_mean_of_its_generations_and_failures_count_per_generation():
    keys = [("mcp/1/1", "mcp"), ("mcp/1/2", "mcp")]
    five = {d: 5.0 for d in ("format", "factuality", "consistency", "realism", "quality")}
    three = {d: 3.0 for d in five}
    predictions = {(k, g): _prediction(k, "mcp") for k, _ in keys for g in range(3)}
    predictions[("mcp/1/2", 2)] = _prediction("mcp/1/2", "mcp", status="error")
    judgments = {
        ("mcp/1/1", 0): _judgment("mcp/1/1", "mcp", five),
        ("mcp/1/1", 1): _judgment("mcp/1/1", "mcp", three),
        ("mcp/1/1", 2): _judgment("mcp/1/1", "mcp", three),
        ("mcp/1/2", 0): _judgment("mcp/1/2", "mcp", five),
        ("mcp/1/2", 1): _judgment("mcp/1/2", "mcp", five),
    }
    table = score_table("llm", keys, predictions, judgments, policy="minimum", generations=3)
    # mcp/1/1: (100 + 50 + 50) / 3; mcp/1/2: (100 + 100 + 0) / 3 with the failed generation at the minimum
    assert table.domains["mcp"].score == pytest.approx((200 / 3 + 200 / 3) / 2)
    assert (table.domains["mcp"].n, table.domains["mcp"].failed, table.domains["mcp"].scored) == (2, 1, 2)
    # the spread between generations: sample SD (n - 1) of the scored generations, mcp/1/2 has two equal ones
    assert table.domains["mcp"].generation_spread == pytest.approx((stdev([100, 50, 50]) + 0.0) / 2)
    assert stdev([100, 50, 50]) == pytest.approx(
        28.8675, abs=1e-4
    )  # sqrt(5000 / 3 / 2), not pstdev's sqrt(5000 / 3 / 3)
    excluded = score_table("llm", keys, predictions, judgments, policy="exclude", generations=3)
    assert excluded.domains["mcp"].score == pytest.approx((200 / 3 + 100) / 2)


def test_with_all_seven_domains_overall_is_their_macro_mean_and_micro_the_samples_mean():
    three = dict.fromkeys(("format", "factuality", "consistency", "realism", "quality"), 3.0)
    keys = [(f"{d}/1/1", d) for d in DOMAINS] + [("mcp/2/1", "mcp")]
    predictions = {(k, 0): _prediction(k, d) for k, d in keys}
    judgments = {(k, 0): _judgment(k, d, three) for k, d in keys}
    judgments[("mcp/2/1", 0)] = _judgment("mcp/2/1", "mcp", dict.fromkeys(three, 5.0))
    table = score_table("llm", keys, predictions, judgments, policy="minimum")
    # mcp: (50 + 100) / 2 = 75, the six others 50
    assert table.overall == pytest.approx((75 + 6 * 50) / 7) and table.partial() is None
    assert table.overall_micro == pytest.approx((100 + 7 * 50) / 8)

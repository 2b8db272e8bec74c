"""The bundled published leaderboard: its shape, and whether each Overall is the mean of its seven domains."""

from __future__ import annotations

import csv
from decimal import ROUND_HALF_UP, Decimal

from awbench.analysis.leaderboard import PUBLISHED_CSV, load_published
from awbench.domains import DOMAIN_LABELS, DOMAINS
from awbench.resources import bundled

COLUMNS = ["model", "MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS", "Overall", "judge", "source"]


def _rows() -> list[dict[str, str]]:
    with open(bundled(PUBLISHED_CSV), newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_file_is_found_and_has_the_published_columns():
    path = bundled(PUBLISHED_CSV)
    assert path.is_file(), path
    with open(path, newline="", encoding="utf-8") as handle:
        assert next(csv.reader(handle)) == COLUMNS
    rows = _rows()
    assert len(rows) == 14
    assert len({r["model"] for r in rows}) == 14
    assert {r["judge"] for r in rows} == {"GPT-5.2 (gpt-5.2-2025-12-11)"}
    assert [DOMAIN_LABELS[d] for d in DOMAINS] == COLUMNS[1:8]  # the published domain order


def test_overall_recomputed_from_the_domains():
    """Every Overall must round (half up, two decimals) to the mean of its seven domains, except one row:
    Qwen-AgentWorld-397B-A17B's domains average 58.764, published as 58.71 (see data/reference/README.md)."""
    mismatches = {}
    for row in _rows():
        mean = sum((Decimal(row[DOMAIN_LABELS[d]]) for d in DOMAINS), Decimal(0)) / 7
        if mean.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP) != Decimal(row["Overall"]):
            mismatches[row["model"]] = (round(float(mean), 3), row["Overall"])
    assert mismatches == {"Qwen-AgentWorld-397B-A17B": (58.764, "58.71")}


def test_loader_reads_every_row_as_published():
    rows = load_published()
    assert [r.model for r in rows] == [r["model"] for r in _rows()]
    gpt = next(r for r in rows if r.model == "GPT-5.4")
    assert list(gpt.domains) == list(DOMAINS)
    assert gpt.domains["mcp"] == 70.10 and gpt.domains["os"] == 68.58 and gpt.overall == 58.25
    assert next(r for r in rows if r.model == "Qwen-AgentWorld-397B-A17B").overall == 58.71  # kept, not "fixed"


def test_the_readme_names_the_mismatch():
    readme = bundled("data/reference/README.md").read_text(encoding="utf-8")
    assert "Qwen-AgentWorld-397B-A17B" in readme and "58.71" in readme and "58.76" in readme

"""The benchmark's fixed vocabulary: domains, their published order and statistics, and the rubric dimensions."""

from __future__ import annotations

from collections.abc import Mapping
from statistics import fmean

# Domain ids as they appear in file names (`{domain}_test.jsonl`) and sample keys, in the published order.
DOMAINS: tuple[str, ...] = ("mcp", "search", "terminal", "swe", "android", "web", "os")
FILE_SUFFIX = "_test.jsonl"

DOMAIN_LABELS: dict[str, str] = {
    "mcp": "MCP",
    "search": "Search",
    "terminal": "Terminal",
    "swe": "SWE",
    "android": "Android",
    "web": "Web",
    "os": "OS",
}

# Published AgentWorldBench statistics: evaluated samples and average turns per trajectory.
PUBLISHED_STATS: dict[str, tuple[int, float]] = {
    "mcp": (286, 23.1),
    "search": (458, 15.5),
    "terminal": (354, 26.7),
    "swe": (472, 28.1),
    "android": (200, 37.8),
    "web": (200, 14.2),
    "os": (200, 12.7),
}
PUBLISHED_TOTAL: tuple[int, float] = (2170, 22.8)

# The judge's rubric, each scored as an integer 1..5.
DIMENSIONS: tuple[str, ...] = ("format", "factuality", "consistency", "realism", "quality")


def to_100(score_1_to_5: float) -> float:
    """A rubric score on the reported 0..100 scale (1 -> 0, 5 -> 100)."""
    return (score_1_to_5 - 1.0) / 4.0 * 100.0


OBSERVATION_MARKER = "**Environment Observation:**"


def domain_of_task(task: str) -> str:
    """`task` may carry a prefix ("something/terminal"); the domain is what follows the last slash."""
    return task.rsplit("/", 1)[-1].strip().lower()


def macro_overall(domain_scores: Mapping[str, float | None]) -> float | None:
    """The Overall: the mean of the seven domain scores, each weighing the same whatever its number of samples
    (the published leaderboard's convention). None unless every domain has a score: a mean over fewer is not the
    benchmark's Overall (`partial_label` says so)."""
    scores = [domain_scores.get(d) for d in DOMAINS]
    present = [s for s in scores if s is not None]
    return fmean(present) if len(present) == len(DOMAINS) else None


def partial_label(domain_scores: Mapping[str, float | None]) -> str | None:
    """ "partial (3 of 7 domains)" where some domain has no score (so there is no Overall); None otherwise."""
    scored = sum(1 for d in DOMAINS if domain_scores.get(d) is not None)
    return None if scored == len(DOMAINS) else f"partial ({scored} of {len(DOMAINS)} domains)"

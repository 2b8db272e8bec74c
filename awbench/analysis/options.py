"""What the analysis commands take, apart from the analysis code itself, so that the command line can name its
options without loading numpy and the rest: the leaderboard's views and formats, the bootstrap's defaults."""

from __future__ import annotations

from typing import Literal

View = Literal["domain", "dimension"]
Format = Literal["table", "markdown", "csv", "json", "html"]
DEFAULT_RESAMPLES = 2000
DEFAULT_SEED = 0
OVERALL = "overall"  # the macro mean over domains, beside the domains

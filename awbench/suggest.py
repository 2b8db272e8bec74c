""" "Did you mean": the names closest to one that matched nothing (a run, a sample key, a data folder), for the
message that refuses it. One rule everywhere: difflib's similarity ratio, the closest first."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

MAX_SUGGESTIONS = 3
CUTOFF = 0.6  # difflib's default: "alpah" finds "alpha", "mcp/m0/9" finds "mcp/m0/1"; "xyz" finds nothing


def close_names(name: str, names: Iterable[str], n: int = MAX_SUGGESTIONS, cutoff: float = CUTOFF) -> list[str]:
    """As `difflib.get_close_matches`, with ties in name order (difflib puts them in reverse)."""
    scored = [(difflib.SequenceMatcher(None, candidate, name).ratio(), candidate) for candidate in set(names)]
    return [candidate for ratio, candidate in sorted(scored, key=lambda s: (-s[0], s[1])) if ratio >= cutoff][:n]


def did_you_mean(name: str, names: Iterable[str], n: int = MAX_SUGGESTIONS, cutoff: float = CUTOFF) -> str:
    """ "; did you mean 'alpha'?", "; did you mean 'alpha' or 'alpha-2'?" (the closest first), or "" when no
    name is close: a suffix for the one-line message that refuses `name`."""
    return suggestion(close_names(name, names, n, cutoff))


def suggestion(close: list[str], quote: bool = True) -> str:
    """The suffix for names already chosen (say, close base names shown as paths); an option's unquoted."""
    if not close:
        return ""
    quoted = [repr(c) if quote else c for c in close]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f"; did you mean {listed}?"

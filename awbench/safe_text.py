"""Text that can always be written: strings from models and judges may hold lone surrogates (a JSON
`"\\ud800"` escape decodes to one), which UTF-8 cannot encode and which would make every write of the record
fail, forever. They are replaced with U+FFFD and the record is flagged, never a crash."""

from __future__ import annotations

import re

REPLACED_FLAG = "replaced_invalid_text"
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NUMBERS = re.compile(r"\d+")


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str | None) -> tuple[str | None, bool]:
    """(text with every lone surrogate replaced by U+FFFD, whether anything was replaced)."""
    if text is None or encodable(text):
        return text, False
    return _SURROGATE.sub("\ufffd", text), True


def one_line(text: str, limit: int) -> str:
    """`text` on one line (each run of whitespace, newlines included, as one space) and at most `limit`
    characters: cut after a whole word and marked with an ellipsis; a first word longer than that is cut inside."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    room = limit - 1  # the ellipsis takes one
    head = flat[:room] if flat[room] == " " else flat[:room].rpartition(" ")[0] or flat[:room]
    return head.rstrip() + "…"


def numbers_masked(message: str) -> str:
    """What tells errors alike: the same words with other numbers (token counts, ids) are one error."""
    return _NUMBERS.sub("N", message)

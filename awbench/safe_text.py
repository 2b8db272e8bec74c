"""Text that can always be written: strings from models and judges may hold lone surrogates (a JSON
`"\\ud800"` escape decodes to one), which UTF-8 cannot encode and which would make every write of the record
fail, forever. They are replaced with U+FFFD and the record is flagged, never a crash."""

from __future__ import annotations

import re

REPLACED_FLAG = "replaced_invalid_text"
_SURROGATE = re.compile(r"[\ud800-\udfff]")


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

"""Text that can always be written: strings from models and judges may hold lone surrogates (a JSON
`"\\ud800"` escape decodes to one), which UTF-8 cannot encode and which would make every write of the record
fail, forever. They are replaced with U+FFFD and the record is flagged, never a crash."""

from __future__ import annotations

import re

REPLACED_FLAG = "replaced_invalid_text"
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NUMBERS = re.compile(r"\d+")
# What a reader would not see as the text it is, each shown as U+FFFD: Unicode's bidirectional controls, which
# reorder the text after them on a terminal, in a spreadsheet or a rendered markdown file (U+202E makes
# "gpt\u202etxt.exe" read "gptexe.txt"); on a terminal also the control characters but the line break, since ESC
# (or C1's CSI) would start the terminal's own escape sequence (a style, a link, a window title).
_BIDI_CONTROLS = dict.fromkeys((0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)), "\ufffd")
_TERMINAL_CONTROLS = _BIDI_CONTROLS | dict.fromkeys(
    (*range(0x0A), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)), "\ufffd"
)


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


def shown(text: str) -> str:
    """`text` as a file a person reads (CSV, markdown) shows it: no bidirectional control."""
    return text.translate(_BIDI_CONTROLS)


def shown_on_terminal(text: str) -> str:
    """`text` as a terminal shows it: no bidirectional control, no control character but the line break."""
    return text.translate(_TERMINAL_CONTROLS)

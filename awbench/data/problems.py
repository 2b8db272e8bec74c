"""What can be wrong with benchmark data: one `Problem` with a record, or a `DataError` for a source that
cannot be used at all. Apart from the readers so that Hub loading and selection can raise them too."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from awbench.errors import AwbenchError

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input. `line` is a 1-based file line, or a 0-based row of a Hub split.

    An "error" makes the record invalid; a "warning" is suspicious and is shown on every run; a "note" is
    expected and handled on purpose (a repeated sample key), shown by `awbench data validate | info` only.
    """

    path: str
    line: int | None
    field: str | None
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return ": ".join(part for part in (where, self.field, self.message) if part is not None)


class DataError(AwbenchError):
    """A source that cannot be used; the message is meant for the user as it is, after its problems."""

    key = "bad_data"

    def __init__(self, message: str, problems: list[Problem] | None = None, *, key: str | None = None) -> None:
        super().__init__(message, key=key)
        self.problems = problems or []

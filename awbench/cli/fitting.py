"""Tables that fit the terminal without cutting a number or a name (an 80-column pipe or split pane included).

A `FittingTable`'s `no_wrap` columns keep their whole width: numbers, and identifiers a user copies (run names,
judge ids), which are neither cut nor wrapped. Its other label columns fold. When the columns do not fit side by
side, the table is stacked: the columns after the first `keys` are dealt into several tables, each repeating the
key columns (the domain, the run), keeping together the columns a `start_group()` call set apart; a group started
with `lead=True` is dealt first (a leaderboard's Overall stays in the first table). The title and caption are
printed as paragraphs above and below, at the console's width, rather than squeezed into the table's."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace

from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

# How narrow a label column may fold, in characters (a run name on two or three lines).
LABEL_MIN = 16


class FittingTable(Table):
    """A rich Table that stacks instead of cutting; `keys`: how many leading columns each stacked table repeats."""

    def __init__(self, *args, keys: int = 1, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.keys = keys
        self._group_starts: set[int] = set()
        self._lead: int | None = None  # where the group dealt first starts

    def start_group(self, lead: bool = False) -> None:
        """The columns added from now on stay together (in one stacked table) when they fit in one; `lead`: they
        are dealt first, into the first table."""
        self._group_starts.add(len(self.columns))
        if lead:
            self._lead = len(self.columns)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        whole = not console.is_terminal  # in a pipe a title is one line, as a message is
        if self.title:
            yield _paragraph(self.title, self.title_style or "table.title", whole)
        parts = list(self._parts(console, options))
        for i, columns in enumerate(parts):
            if i:
                yield Segment.line()
            yield from Table.__rich_console__(self._with(columns), console, options)
        if self.caption:
            yield _paragraph(self.caption, self.caption_style or "table.caption", whole)

    def _with(self, columns: list[int]) -> Table:
        """A plain table of these columns of this one (same rows, styles and box), without title or caption."""
        part = copy.copy(self)
        part.__class__ = Table  # type: ignore[assignment]  # a plain Table: it renders as one part
        part.title = part.caption = None
        part.columns = [replace(self.columns[c], _index=i) for i, c in enumerate(columns)]
        return part

    def _needed(self, console: Console, options: ConsoleOptions, columns: list[int]) -> int:
        """The narrowest width at which these columns keep every number whole: a number column at its widest
        cell, a label column at most LABEL_MIN wide."""
        part = self._with(columns)
        total = part._extra_width
        for column in part.columns:
            measured = part._measure_column(console, options, column)
            padding = part._get_padding_width(column._index)
            total += measured.maximum if column.no_wrap else min(measured.maximum, LABEL_MIN + padding)
        return total

    def _parts(self, console: Console, options: ConsoleOptions) -> Iterator[list[int]]:
        """The column indices of each stacked table: the whole table when it fits; else each group goes into the
        first table it fits in, after the key columns, and a group too wide alone column by column into the last
        table or a new one, so that its columns keep their order (MCP, Search, Terminal...)."""
        everything = list(range(len(self.columns)))
        width = options.max_width
        if self._needed(console, options, everything) <= width or len(self.columns) <= self.keys + 1:
            yield everything
            return
        keys, groups = everything[: self.keys], sorted(self._groups(), key=lambda group: group[0] != self._lead)

        def fits(part: list[int], piece: list[int]) -> bool:
            return self._needed(console, options, keys + part + piece) <= width

        parts: list[list[int]] = []
        for group in groups:
            if fits([], group):
                home = next((part for part in parts if fits(part, group)), None)
                if home is None:
                    parts.append(list(group))
                else:
                    home.extend(group)
                continue
            for column in group:
                if parts and fits(parts[-1], [column]):
                    parts[-1].append(column)
                else:
                    parts.append([column])
        for part in parts:
            yield keys + sorted(part)

    def _groups(self) -> list[list[int]]:
        """The columns after the keys, split where a group starts (every column on its own without groups)."""
        groups: list[list[int]] = []
        for c in range(self.keys, len(self.columns)):
            if not groups or not self._group_starts or c in self._group_starts:
                groups.append([])
            groups[-1].append(c)
        return groups


def _paragraph(text: str | Text, style: str | Style, whole: bool) -> Text:
    paragraph = text.copy() if isinstance(text, Text) else Text(text, style=style)
    if whole:
        paragraph.no_wrap, paragraph.overflow = True, "ignore"
    return paragraph

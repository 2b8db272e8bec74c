"""A command's `--help`, laid out so that every option name is whole at any width from 40 columns up.

typer's layout gives an option's names, its type (`<float range> [x>=0.001]`) and its help a column each, and
cuts the names with "…" when they do not fit (at 80 columns, and even at 120). Here an option is one cell:
its names, then a short metavar (`N`, `NUMBER`, `0..1`, `a|b`, `TEXT`), never cut; the help text takes the
rest of the line and wraps. A flag's negative form (`--no-judge-batch`) is on the line below its positive one.
When a panel's names leave too little room for help beside them, each option's help goes below its names,
indented. The command's description, usage line and defaults are as typer shows them."""

from __future__ import annotations

import inspect
from collections import defaultdict
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from typer.core import TyperArgument

Param = Any  # typer's TyperOption or TyperArgument (typer vendors its own click)

OPTION_STYLE, NEGATIVE_STYLE, METAVAR_STYLE, DEFAULT_STYLE = "bold cyan", "bold magenta", "bold yellow", "dim"
MIN_HELP_WIDTH = 28  # narrower than this beside the names, help goes below them
BORDER_AND_PADDING = 4  # a panel's "│ " and " │"


def print_help(command: Any, ctx: Any) -> None:
    """What `COMMAND --help` prints: usage, description, then one panel per option group."""
    console = Console(highlight=False)
    console.print(Padding(Text(_usage(command, ctx), style="bold"), 1))
    if command.help:
        console.print(Padding(_description(command.help), (0, 1, 1, 1)))
    panels: dict[str, list[Param]] = defaultdict(list)
    for param in command.get_params(ctx):
        if not getattr(param, "hidden", False):
            default = "Arguments" if isinstance(param, TyperArgument) else "Options"
            panels[getattr(param, "rich_help_panel", None) or default].append(param)
    for title in sorted(panels, key=lambda t: t != "Arguments"):  # arguments first, then the order of declaration
        rows = [(_names(param), _help(param, ctx)) for param in panels[title]]
        console.print(Panel(_layout(rows, console.width - BORDER_AND_PADDING), title=title, title_align="left"))


def _usage(command: Any, ctx: Any) -> str:
    """`Usage: awbench compare [OPTIONS] RUN_A [RUN_B]`: arguments as `--help` lists them."""
    words = [ctx.command_path, "[OPTIONS]"]
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = param.display_name_raw.upper() + ("..." if param.nargs != 1 else "")
            words.append(name if param.required else f"[{name}]")
    return "Usage: " + " ".join(words)


def _description(text: str) -> Text:
    """The docstring's first paragraph, then the others dimmed, each paragraph's lines joined."""
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(text).partition("\f")[0].split("\n\n")]
    description = Text(paragraphs[0])
    if rest := paragraphs[1:]:
        description.append("\n\n" + "\n\n".join(rest), style="dim")
    return description


def _layout(rows: list[tuple[Text, Text]], width: int) -> RenderableType:
    names_width = max(cell.cell_len for names, _ in rows for cell in names.split())
    if names_width + 2 + MIN_HELP_WIDTH <= width:
        table = Table.grid(padding=(0, 2))
        table.add_column(no_wrap=True, width=names_width)
        table.add_column(ratio=1, overflow="fold")
        for names, help_text in rows:
            table.add_row(names, help_text)
        return table
    return Group(*(part for names, help_text in rows for part in (names, Padding(help_text, (0, 0, 0, 4)))))


_TYPE_METAVARS = {"int": "N", "float": "NUMBER", "Path": "PATH"}


def metavar(param: Param) -> str:
    """A short placeholder for an option's value: its own metavar, else one from its type (`a|b` for choices)."""
    if param.metavar is not None:
        return str(param.metavar)
    kind = param.type_descriptor
    if kind.is_choice:
        return "|".join(map(str, kind.choices))
    if kind.is_tuple:
        return " ".join("TEXT" for _ in kind.annotation.__args__)
    bare = param.bare_type().removeprefix("list[").removesuffix("]")
    if bare == "float" and param.max == 1 and param.min is not None and 0 <= param.min < 1:
        return "0..1"
    return _TYPE_METAVARS.get(bare, "TEXT")


def _names(param: Param) -> Text:
    if isinstance(param, TyperArgument):
        return Text(param.display_name_raw.upper(), style=OPTION_STYLE)
    names = Text(", ".join(sorted(param.opts, key=len)), style=OPTION_STYLE)
    if not getattr(param, "is_flag", False):
        names.append(" " + metavar(param), style=METAVAR_STYLE)
    for negative in param.secondary_opts:
        names.append("\n" + negative, style=NEGATIVE_STYLE)
    return names


def _help(param: Param, ctx: Any) -> Text:
    """The help text (rich markup, as typer reads it: `\\[default: ...]` escaped), then the default shown and
    `[required]`."""
    text = Text.from_markup(" ".join(inspect.cleandoc(getattr(param, "help", None) or "").split()))
    extras = [f"[default: {shown}]"] if (shown := _default(param, ctx)) is not None else []
    extras += ["[required]"] if param.required else []
    for extra in extras:
        text.append((" " if text else "") + extra, style=DEFAULT_STYLE)
    return text


def _default(param: Param, ctx: Any) -> str | None:
    """The default `--help` shows when the option asks for it (`show_default`), as typer shows it."""
    show: Any = getattr(param, "show_default", None)
    if isinstance(show, str):
        return show
    value = param.get_default(ctx, call=False)
    if not show or value is None or callable(value):
        return None
    if getattr(param, "is_flag", False):
        if not param.secondary_opts:
            return None
        chosen = param.opts[0] if value else param.secondary_opts[0]
        return chosen.lstrip("-")
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or None
    return str(getattr(value, "value", value))

"""What every command shares: the consoles, refusing (`fail`), and option values and settings in our words."""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from awbench.errors import EXIT_USAGE, AwbenchError
from awbench.redact import quoted
from awbench.run.store import refuse_run_output
from awbench.safe_text import shown_on_terminal
from awbench.suggest import did_you_mean


class _TextConsole(Console):
    def print(self, *objects: Any, sep: str = " ", **kwargs: Any) -> None:
        # A message (text, not a table) is one line in a pipe or a file whatever its length, for grep; in a
        # terminal it wraps at words. Messages among tables, one per line, are printed one by one to that end.
        if not self.is_terminal:
            kwargs.setdefault("crop", False)  # what is laid out to fit is within the width; what is kept whole stays so
        messages = [isinstance(o, (str, Text)) for o in objects]
        if kwargs.get("soft_wrap") is None and not self.is_terminal and any(messages):
            if all(messages):
                kwargs["soft_wrap"] = True
            elif sep == "\n":
                for o in objects:
                    self.print(o, **kwargs)
                return
        super().print(*objects, sep=sep, **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):  # rich's own cursor moves are `control` segments
            yield segment if segment.control else Segment(shown_on_terminal(segment.text), segment.style)


def text_console(**kwargs: Any) -> Console:
    """A console that prints strings as they are: run and model names, paths and messages hold text such as
    `[link=...]`, `[/]` or `:smile:`, which rich would read as markup or emoji codes (or highlight, such as a
    URL), or control characters, which the terminal would read (each shown as U+FFFD: `safe_text.shown_on_terminal`).
    Styles are given as `Text` objects, or with `style=`."""
    return _TextConsole(markup=False, emoji=False, highlight=False, **kwargs)


console = text_console()
err_console = text_console(stderr=True)

OutputOption = Annotated[Path, typer.Option("--output", help="Directory that holds the runs.")]


def fail(message: str, code: int = EXIT_USAGE, key: str | None = None) -> NoReturn:
    """A command refuses: the one user-facing error, which `awbench.cli.errors` prints as `error: <message>`
    (one line per line) and exits with `code`."""
    raise AwbenchError(message, key=key, exit_code=code)


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _not_finite(value: Any) -> bool:
    """A NaN or an infinity, given as a number or as the command line's text ("nan", "-inf")."""
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def plain_message(error: Mapping[str, Any]) -> str:
    """One validation error (pydantic's `ErrorDetails`) in our words: no pydantic wording, no URL, and the value
    given quoted as `redact.quoted` quotes it (a key given to the wrong option is not repeated)."""
    given = error.get("input")
    message = _plain_message(error)
    return message.replace(repr(given), quoted(given)) if isinstance(given, str) else message


def _plain_message(error: Mapping[str, Any]) -> str:
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    bounds = {
        "greater_than_equal": ("at least", "ge"),
        "greater_than": ("greater than", "gt"),
        "less_than_equal": ("at most", "le"),
        "less_than": ("less than", "lt"),
    }
    if kind == "finite_number" or (kind in bounds and _not_finite(given)):  # NaN is neither above nor below
        return f"must be a finite number, got {_number(given)}"
    if kind in bounds:
        words, key = bounds[kind]
        return f"must be {words} {_number(ctx[key])}, got {_number(given)}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"expected a whole number, got {given!r}"
    if kind in ("float_parsing", "float_type"):
        return f"expected a number, got {given!r}"
    if kind in ("bool_parsing", "bool_type"):
        return f"expected true or false, got {given!r}"
    if kind in ("literal_error", "enum"):
        return f"expected {ctx.get('expected', 'another value')}, got {given!r}"
    if kind in ("value_error", "assertion_error") and "error" in ctx:
        return str(ctx["error"]).rstrip(".")
    if kind == "extra_forbidden":
        return "is not a setting awbench knows"
    if kind == "missing":
        return "is required"
    return f"invalid value {given!r}"


def option_name(model: str, location: tuple[int | str, ...], names: Mapping[str, str]) -> str:
    """The command-line option behind a settings field: `names` maps `Model.field` or `field` to it; by default
    the field's name with dashes."""
    dotted = ".".join(str(part) for part in location)
    field = str(location[-1]) if location else dotted
    return names.get(f"{model}.{dotted}") or names.get(dotted) or "--" + field.replace("_", "-")


def validation_lines(error: ValidationError, names: Mapping[str, str] = {}) -> list[str]:
    return [f"{option_name(error.title, tuple(e['loc']), names)}: {plain_message(e)}" for e in error.errors()]


# The in-process engines' options of earlier versions that are KEY=VALUE pairs now: the option that takes the
# pair, the key, and the value a flag stands for (else the value given).
RETIRED_OPTIONS = {
    "--dtype": ("--engine-arg", "dtype", None),
    "--data-parallel-size": ("--engine-arg", "data_parallel_size", None),
    "--trust-remote-code": ("--engine-arg", "trust_remote_code", "true"),
    "--prefix-caching": ("--engine-arg", "enable_prefix_caching", "true"),
    "--no-prefix-caching": ("--engine-arg", "enable_prefix_caching", "false"),
    "--distributed-executor-backend": ("--engine-arg", "distributed_executor_backend", None),
    "--batch-size": ("--engine-arg", "batch_size", None),
    "--tensor-parallel-size": ("--engine-arg", "tensor_parallel_size", None),
    "--gpu-memory-utilization": ("--engine-arg", "gpu_memory_utilization", None),
    "--judge-max-model-len": ("--judge-engine-arg", "max_model_len", None),
    "--judge-dtype": ("--judge-engine-arg", "dtype", None),
    "--judge-tensor-parallel-size": ("--judge-engine-arg", "tensor_parallel_size", None),
    "--judge-gpu-memory-utilization": ("--judge-engine-arg", "gpu_memory_utilization", None),
    "--judge-batch-size": ("--judge-engine-arg", "batch_size", None),
}


def retired_option(name: str, value: str | None, options: Iterable[str]) -> tuple[str, str] | None:
    """A retired option that the command now takes as a KEY=VALUE pair: (the option, the pair, with `value`)."""
    option, key, flag_value = RETIRED_OPTIONS.get(name, ("", "", None))
    if option not in options:
        return None
    return option, f"{key}={flag_value or value or 'VALUE'}"


class Command(TyperCommand):
    """A command whose bad option values are reported like every other user error, in our words
    (`error: --concurrency: must be at least 1, got 0`, exit 2): typer checks `min`/`max` and `Literal`
    choices with pydantic and would show pydantic's wording."""

    def get_params(self, ctx: Any) -> list[Any]:
        return flags_without_type(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from awbench.cli.help_panels import print_help  # only when help is asked for

        print_help(self, ctx)

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _refuse_retired([name for param in self.params for name in param.opts], args)
        try:
            rest = super().parse_args(ctx, args)
        except typer.BadParameter as error:
            cause = error.__cause__
            if isinstance(cause, ValidationError) and cause.errors() and error.param is not None:
                first = cause.errors()[0]
                choices = getattr(getattr(error.param, "type_descriptor", None), "choices", None) or ()
                close = did_you_mean(str(first.get("input")), map(str, choices)) if choices else ""
                fail(f"{_label(error.param)}: {plain_message(first)}{close}", key="bad_option")
            raise
        _refuse_undecodable(self.params, ctx.params)
        return rest


def _refuse_retired(options: list[str], args: list[str]) -> None:
    """A retired option given (`--dtype half`, `--dtype=half`) is named with the pair that replaces it, where
    the command has the option that takes the pair; otherwise the parser says it knows no such option."""
    given = [str(arg) for arg in args]  # a test's runner passes paths as they are
    for at, arg in enumerate(given):
        if arg == "--":  # what follows is arguments, not options
            return
        name, equals, value = arg.partition("=")
        following = given[at + 1] if at + 1 < len(given) and not given[at + 1].startswith("--") else None
        if retired := retired_option(name, value if equals else following, options):
            fail(f"no option {name}: did you mean {' '.join(retired)}?", key="retired_option")


def _label(param: Any) -> str:
    return max(param.opts, key=len) if param.param_type_name == "option" else param.display_name_raw


def _refuse_undecodable(params: list[Any], values: Mapping[str, Any]) -> None:
    """Text given with bytes that are not UTF-8 (Python keeps each as a lone surrogate) could be neither written
    to a run's files nor printed: refused, naming the option, before anything is made. Paths may hold any bytes."""
    for param in params:
        given = values.get(param.name)
        for value in given if isinstance(given, (list, tuple)) else [given]:
            if isinstance(value, str) and (position := _undecodable(value)) is not None:
                byte = ord(value[position]) - 0xDC00  # surrogateescape's mapping of bytes 0x80..0xff
                shown = f"byte 0x{byte:02x}" if 0x80 <= byte <= 0xFF else f"U+{ord(value[position]):04X}"
                fail(f"{_label(param)}: {shown} at character {position} is not UTF-8 text", key="bad_option")


def _undecodable(text: str) -> int | None:
    try:
        text.encode()
    except UnicodeEncodeError as error:
        return error.start
    return None


class Group(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        return flags_without_type(super().get_params(ctx))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A command that is not there is refused in our words, with the closest names (`awbench lss`)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            fail(f"no such command {name!r}{did_you_mean(name, self.list_commands(ctx))}", key="no_such_command")
        return super().resolve_command(ctx, args)


def flags_without_type(params: list[Any]) -> list[Any]:
    """A flag takes no value: typer would show `<bool>` beside it in --help (--help itself included)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


def use_command_class(app: typer.Typer) -> None:
    """Every command of `app` and of its sub-apps is a `Command` (their apps are made with `cls=Group`)."""
    for info in app.registered_commands:
        if info.cls in (None, TyperCommand):
            info.cls = Command
        if info.short_help is None and info.callback is not None and info.callback.__doc__:
            # `awbench --help` lists each command with its docstring's first paragraph, whose line breaks typer's
            # rich mode would keep: joined, it folds at the terminal's width
            info.short_help = " ".join(inspect.cleandoc(info.callback.__doc__).split("\n\n")[0].split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            use_command_class(group.typer_instance)


def refuse_run_outputs(outputs: Mapping[str, Path | None]) -> None:
    """Before any work: every output path a command is given (option -> path) lies outside every run."""
    for option, path in outputs.items():
        if path is not None:
            refuse_run_output(option, path)


def file_path(option: str) -> Callable[[str | Path], Path]:
    """typer's parser of `option`, which names a file to write: a path ending in '/' (or in '.' or '..') names a
    folder, and a Path drops that ending (`-o newdir/` would write a file named newdir): refused, exit 2."""

    def parse(value: str | Path) -> Path:
        if isinstance(value, str) and os.path.basename(value) in ("", ".", ".."):
            raise AwbenchError(
                f"{option} {value!r}: a path ending in '/' (or '.', '..') names a folder; give the path of the "
                "file to write",
                key="bad_option",
            )
        return Path(value)

    return parse


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")

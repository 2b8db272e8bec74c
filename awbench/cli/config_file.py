"""`--config FILE.toml`: a command's options in a file (keys: the option names with underscores), and
`--print-config`, which writes the options given as such a file."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from awbench.errors import AwbenchError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover (Python 3.10)
    import tomli as tomllib

from awbench.data.json_lines import TOO_DEEP
from awbench.redact import MASK, holds_mask, looks_like_key, secrets_masked
from awbench.suggest import close_names


class ConfigFileError(AwbenchError, ValueError):
    """A config file that cannot be used: the message names the file, and the key and line when there is one."""

    key = "bad_config_file"


# A command's options take a few hundred bytes: anything larger is not a config file (/dev/zero would never end).
MAX_CONFIG_BYTES = 1 << 20


def _text(path: Path) -> str:
    """The file's text: a regular file (a FIFO or a device would block, or never end) of at most
    MAX_CONFIG_BYTES, in UTF-8."""
    try:
        # Without blocking: opening a FIFO would wait for a writer. A regular file reads as ever.
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ConfigFileError(f"{path}: cannot read the config file: not a regular file")
            data = handle.read(MAX_CONFIG_BYTES + 1)
        if len(data) > MAX_CONFIG_BYTES:
            raise ConfigFileError(f"{path}: cannot read the config file: larger than {MAX_CONFIG_BYTES:,} bytes")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ConfigFileError(f"{path}: cannot read the config file: {reason}") from None


def read_toml(path: Path) -> dict[str, Any]:
    text = _text(path)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigFileError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:  # arrays or inline tables within each other, thousands deep
        raise ConfigFileError(f"{path}: not valid TOML: {TOO_DEEP}") from None


def key_line(path: Path, key: str) -> str:
    """`, line N` where `key = ...` is set in the file (tomllib tells no line for a key it has read)."""
    name = rf"[\"']?{re.escape(key)}[\"']?"
    pattern = re.compile(rf"^\s*({name}\s*[=.]|\[+\s*{name}\s*[\].])")  # `key = ...`, `key.x = ...`, `[key]`
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if pattern.match(line):
            return f", line {number}"
    return ""


def unknown_key(path: Path, key: str, known: list[str], command: str, flags: list[str]) -> ConfigFileError:
    """`flags`: the command's options that a config file does not hold (what to do, not how: --overwrite)."""
    where = f"{path}{key_line(path, key)}: {key}"
    flag = "--" + key.replace("_", "-")
    if flag in flags:
        return ConfigFileError(f"{where}: give {flag} on the command line; a config file holds settings only")
    close = close_names(key, known)
    hint = (
        f"; did you mean {', '.join(close)}?"
        if close
        else f"; the keys are the options of `awbench {command}` with underscores"
    )
    return ConfigFileError(f"{where}: not an option of `awbench {command}`{hint}")


# --- Writing ------------------------------------------------------------------------------------------------

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _string(text: str) -> str:
    # JSON's escapes are TOML's, once non-ASCII text is kept as it is (no surrogate pairs) and DEL is escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def toml_value(value: Any) -> str:
    """One TOML value: strings, numbers, booleans, lists and (inline) tables of those. None has no TOML form."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, (str, Path)):
        return _string(str(value))
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = ", ".join(f"{_key(str(k))} = {toml_value(v)}" for k, v in value.items() if v is not None)
        return "{ " + items + " }" if items else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml_document(values: Mapping[str, Any]) -> str:
    """`key = value` lines, in the order given; None values are left out."""
    return "".join(f"{_key(key)} = {toml_value(value)}\n" for key, value in values.items() if value is not None)


def config_document(values: Mapping[str, Any]) -> str:
    """What `--print-config` prints: the options as a config file, every secret in them (a key in a header, an
    argument or a URL: `awbench.redact.secrets_masked`) written as `***`, which a comment above names and which
    `refuse_masked` refuses until the secret is written in its place."""
    masked = secrets_masked(dict(values))
    for key, value in masked.items():  # a key pasted where the NAME of its variable goes is a key all the same
        if key.endswith("api_key_env") and isinstance(value, str) and looks_like_key(value):
            masked[key] = MASK
    hidden = [key for key in masked if holds_mask(masked[key]) and not holds_mask(values[key])]
    if not hidden:
        return toml_document(masked)
    note = (
        f"# {', '.join(hidden)}: each {MASK} is a secret left out; write it in its place, or give the option on the "
        "command line\n"
    )
    return note + toml_document(masked)


def refuse_masked(path: Path, key: str, value: Any) -> None:
    """A config file's value with a secret `--print-config` left out (`***`): it would be sent as `***`."""
    if holds_mask(value):
        raise ConfigFileError(
            f"{path}{key_line(path, key)}: {key}: holds {MASK} where a secret was left out (as --print-config "
            f"writes it): write the secret in its place, or give --{key.replace('_', '-')} on the command line"
        )

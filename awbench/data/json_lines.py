"""One reader of JSON Lines for every file awbench takes in (benchmark data, the reference script's files):
a line to its object, and what makes a record unreadable or unwritable, named by file, line and field
(invalid UTF-8 or JSON, a repeated key, a lone surrogate, nesting too deep)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from awbench.data.problems import Problem

# Arrays and objects within each other, the record itself counting as one. Benchmark records need 2; past
# a few hundred, Python's JSON reader and pydantic's serializer give up.
MAX_NESTING = 100

TOO_DEEP = f"nested more than {MAX_NESTING} levels deep (arrays and objects within each other)"
NOT_UNICODE = "not valid Unicode, so it cannot be written as UTF-8"
NOT_FINITE = "is not a finite number (JSON has no NaN or infinity)"

# A line longer than this is read by json.loads from its text alone, its bytes dropped first: jiter holds the
# bytes, a copy of each string with escapes and the result at once (three times the line), json.loads the
# text and the result (twice). Few records are this long, so the slower reader costs little.
LONG_LINE = 1 << 20


def parse_line(line: list[bytes], number: int, start: int, label: str) -> tuple[Any, list[Problem]]:
    """The JSON object of the line (`line`: a list holding its bytes, emptied once they are decoded to text),
    or None; and the problems found in reading it. An object with a repeated key comes back (with the last value,
    as JSON readers keep) so that the rest of it is checked too."""
    raw = line[0]
    if _fast_loads is not None and len(raw) <= LONG_LINE:
        try:
            obj = _fast_loads(raw)
        except Exception:
            pass
        else:
            if type(obj) is dict:
                return obj, []
    try:
        # A byte-order mark may open the file; json.loads rejects it.
        # Without the line's "\n", so that a message's column is on the line (a memoryview: no copy of it).
        text = str(memoryview(raw)[: len(raw) - raw.endswith(b"\n")], "utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError as e:
        message = f"not valid UTF-8: byte 0x{raw[e.start]:02x} at byte offset {start + e.start}"
        return None, [Problem(label, number, None, message)]
    del raw, line[0]
    repeated: list[tuple[dict[str, Any], str, int]] = []

    def pairs_to_dict(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) < len(pairs):
            repeated.extend((obj, key, n) for key, n in Counter(k for k, _ in pairs).items() if n > 1)
        return obj

    try:
        obj = json.loads(text, object_pairs_hook=pairs_to_dict)
    except json.JSONDecodeError as e:
        return None, [Problem(label, number, None, f"invalid JSON: {e.msg} (column {e.colno})")]
    except RecursionError:
        return None, [Problem(label, number, None, TOO_DEEP)]
    except ValueError as e:  # an integer of more than sys.get_int_max_str_digits() digits
        return None, [Problem(label, number, None, f"invalid JSON: {e}")]
    if not isinstance(obj, dict):
        return None, [Problem(label, number, None, f"expected a JSON object, got {type_name(obj)}")]
    problems = []
    for inner, key, n in repeated:
        where = _path_to(obj, inner)
        name = field_name(key)
        message = f"duplicate JSON key {key!r}: given {n} times in one object"
        problems.append(Problem(label, number, f"{where}.{name}" if where else name, message))
    return obj, problems


def _jiter_loads() -> Callable[[bytes], Any] | None:
    """jiter (Rust; it comes with the openai package) reads these lines about three times as fast as
    json.loads. It is used for lines it takes as they are: it refuses what json.loads would read with a
    problem to report (a repeated key, a lone surrogate, deep nesting) or not at all, and those lines go to
    json.loads for its messages. Checked here to behave so, else not used."""
    try:
        import jiter

        def loads(raw: bytes) -> Any:
            return jiter.from_json(raw, catch_duplicate_keys=True, cache_mode="keys")

        if loads(b'{"a": ["\\u00e9\\ud83d\\ude00", 1, null]}') != {"a": ["\u00e9\U0001f600", 1, None]}:
            return None
        for refused in (b'{"a": 1, "a": 2}', b'"\\ud800"', b"[" * 1000 + b"]" * 1000):
            try:
                loads(refused)
            except ValueError:
                continue
            return None
    except (ImportError, TypeError, ValueError):
        return None
    return loads


_fast_loads = _jiter_loads()


def _path_to(root: dict[str, Any], target: dict[str, Any]) -> str | None:
    """The field path of the object `target` inside `root` ("" for root itself)."""
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        where, value = stack.pop()
        if value is target:
            return where
        children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, child in children:
            if isinstance(child, (dict, list)):
                name = str(key) if isinstance(key, int) else field_name(key)
                stack.append((f"{where}.{name}" if where else name, child))
    return None


def value_problems(
    fields: Iterable[tuple[str, Any]], path: str, line: int | None, finite: bool = False
) -> list[Problem]:
    """Text that is not valid Unicode (a lone surrogate, from a JSON escape such as "\\ud800"), in a value
    or a key, and nesting deeper than MAX_NESTING, in the given top-level fields and all they hold; with
    `finite`, NaN and infinities too (Python's JSON reader takes `NaN`, `Infinity` and `1e999`)."""
    problems = []
    stack: list[tuple[str | None, Any, int]] = []
    for name, value in fields:
        if not name.isascii() and (bad := surrogate(name)):
            problems.append(Problem(path, line, None, f"key {name!r} has {bad}: {NOT_UNICODE}"))
        stack.append((field_name(name), value, 1))
    stack.reverse()
    too_deep: set[str] = set()
    while stack:
        where, value, depth = stack.pop()
        if type(value) is str:
            if not value.isascii() and (bad := surrogate(value)):
                problems.append(Problem(path, line, where, f"{bad}: {NOT_UNICODE}"))
            continue
        if finite and isinstance(value, float) and not math.isfinite(value):
            problems.append(Problem(path, line, where, f"{value} {NOT_FINITE}"))
            continue
        if not isinstance(value, (list, dict)):
            continue
        top = where.split(".", 1)[0] if where else ""
        if depth + 1 > MAX_NESTING:
            if top not in too_deep:
                too_deep.add(top)
                problems.append(Problem(path, line, top or None, TOO_DEEP))
            continue
        children: list[tuple[str, Any, int]] = []
        if isinstance(value, list):
            children = [(f"{where}.{i}", item, depth + 1) for i, item in enumerate(value)]
        else:
            for key, item in value.items():
                if not key.isascii() and (bad := surrogate(key)):
                    problems.append(Problem(path, line, where, f"key {key!r} has {bad}: {NOT_UNICODE}"))
                children.append((f"{where}.{field_name(key)}", item, depth + 1))
        stack.extend(reversed(children))
    return problems


def surrogate(text: str) -> str | None:
    """ "a lone surrogate \\ud800 at character 17", or None for text that encodes."""
    try:
        text.encode()
    except UnicodeEncodeError as e:
        return f"a lone surrogate \\u{ord(text[e.start]):04x} at character {e.start}"
    return None


def field_name(key: str) -> str:
    """A key as a part of a field path; escaped if it does not print as itself (as repr escapes a lone
    surrogate, which could not be printed at all)."""
    return key if key.isprintable() else ascii(key)[1:-1]


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__

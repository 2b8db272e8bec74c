"""Lenient JSON reading for tool results: a JSON document possibly after a short preamble, with JSON
documents nested inside string values (MCP servers often return JSON as text) read as well."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

NOT_JSON = object()
MAX_NESTED_DOCUMENTS = 3  # how deep JSON-inside-a-string is followed
MAX_NODES = 20_000  # bounds the work on huge documents
_decoder = json.JSONDecoder()


def parse_json(text: str) -> Any:
    """The JSON object or array that `text` is (or that fills most of it), else NOT_JSON."""
    stripped = text.strip()
    if not stripped:
        return NOT_JSON
    starts = [i for i in (stripped.find("{"), stripped.find("[")) if i >= 0]
    if not starts:
        return NOT_JSON
    start = min(starts)
    try:
        value, end = _decoder.raw_decode(stripped, start)
    except (ValueError, RecursionError):
        return NOT_JSON
    # A preamble ("Result:") or a trailing note is fine; a JSON fragment inside prose is not a JSON result.
    if (end - start) * 2 < len(stripped):
        return NOT_JSON
    return value


def _nested_document(value: str) -> Any:
    """A JSON object (or array of them) held in a string; `"[350]"` stays a string."""
    if value[:1] not in "{[" or value.strip()[-1:] not in "}]":
        return NOT_JSON
    inner = parse_json(value)
    if isinstance(inner, dict) or (isinstance(inner, list) and any(isinstance(v, (dict, list)) for v in inner)):
        return inner
    return NOT_JSON


def walk(document: Any) -> Iterator[tuple[str, Any]]:
    """(path, value) for every node, iteratively (documents can be deeper than Python's recursion limit).
    Paths look like `$.content[].text`; a string holding JSON continues the path with `~`."""
    stack: list[tuple[str, Any, int]] = [("$", document, 0)]
    seen = 0
    while stack and seen < MAX_NODES:
        path, value, nesting = stack.pop()
        seen += 1
        yield path, value
        if isinstance(value, dict):
            stack.extend((f"{path}.{key}", child, nesting) for key, child in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((f"{path}[]", child, nesting) for child in reversed(value))
        elif isinstance(value, str) and nesting < MAX_NESTED_DOCUMENTS:
            inner = _nested_document(value)
            if inner is not NOT_JSON:
                stack.append((f"{path}~", inner, nesting + 1))


def type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "num"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "str"
    return "obj" if isinstance(value, dict) else "arr"


def key_paths(document: Any) -> set[str]:
    """Typed key paths such as `$.items[].name:str`: the document's shape without its values."""
    return {f"{path}:{type_name(value)}" for path, value in walk(document)}

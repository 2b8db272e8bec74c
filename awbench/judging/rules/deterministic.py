"""Tier 1, deterministic content: the parts of the ground truth that the model could derive from what
it saw, i.e. the trajectory so far (earlier actions and observations) and the current action.

A ground-truth line is deterministic when, after masking and whitespace normalisation, it
* is a line of an earlier observation or action (a file read again, a listing shown before), or
* occurs inside an action (`echo hello` -> `hello`, a file written with a heredoc or an editor call), or
* does so after dropping a line-number / diff / `grep -n` prefix (`cat -n`, `git diff`, `grep -n`), or
* is a shell prompt line echoing the current command.
For a `key: value` line whose whole line is new, the value alone is deterministic when it occurred
before. For JSON results, scalars that echo the current call's arguments are deterministic as well.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from awbench.domains import OBSERVATION_MARKER
from awbench.judging.rules.jsonish import NOT_JSON, parse_json, scalar_texts
from awbench.judging.rules.masking import mask
from awbench.judging.rules.text import (
    content_chars,
    contains_bounded,
    is_substantive,
    line_key,
    normalize_line,
    normalized_lines,
)

ACTION_HEADING = "**Action:**"
# A prefix that frames content taken from elsewhere: `cat -n`/editor line numbers, diff markers, grep -n.
CONTENT_PREFIX_RE = re.compile(r"^(?:\d+[:|]?\s|[+-]\s?|>\s|[\w./-]+:\d+:\s?)")
# A shell prompt followed by a command: `root@host:/app# ls`, `user@box:~$ make`, `$ ls`, `>>> x`.
PROMPT_RE = re.compile(r"^(?P<prompt>(?:\([^)]*\)\s*)?(?:[\w.-]+@[^\s:]+:\S*\s?[#$%]|[\w.-]+[#$]|[#$%]|>>>))\s(?P<command>.+)$")
KEY_VALUE_RE = re.compile(r"^[\"']?[\w .-]{1,40}?[\"']?\s*[:=]\s*(?P<value>.+)$")
MIN_VALUE_CHARS = 3
UNINFORMATIVE_VALUES = frozenset({"true", "false", "null", "none", "yes", "no", "ok"})


@dataclass(frozen=True)
class Item:
    """One deterministic piece of the truth: a whole line (matched as a line) or a value (found anywhere)."""

    kind: str  # "line" or "value"
    text: str
    line_index: int | None = None  # position among the truth's normalised lines, for line items and line values


@dataclass(frozen=True)
class HistoryIndex:
    line_keys: frozenset[str]
    values: frozenset[str]
    prompts: frozenset[str]
    actions_text: str  # every action (and the strings of JSON actions), masked and normalised
    current_action: str  # raw text of the last action
    current_command: str  # the last action masked and on one line, to find a prompt's command echo in


def _body(item: str) -> tuple[bool, str]:
    """(is_observation, text without its heading)."""
    stripped = item.lstrip()
    if stripped.startswith(OBSERVATION_MARKER):
        return True, stripped[len(OBSERVATION_MARKER) :].lstrip("\n")
    if ACTION_HEADING in item:
        return False, item.split(ACTION_HEADING, 1)[1].lstrip("\n")
    return False, item


def value_part(key: str) -> str | None:
    m = KEY_VALUE_RE.match(key)
    if not m:
        return None
    value = m.group("value").strip().rstrip(",;").strip().strip("\"'")
    if content_chars(value) < MIN_VALUE_CHARS or value.lower() in UNINFORMATIVE_VALUES:
        return None
    return value


@lru_cache(maxsize=2048)
def _item_index(item: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], str]:
    """(line keys, values, prompts, searchable action text) of one history item; cached because the same
    trajectory prefix is scored once per candidate model."""
    is_observation, body = _body(item)
    texts = [body]
    if not is_observation:
        if "\\n" in body:  # `printf 'a\nb'`, `echo -e`: the output has the lines the escapes stand for
            texts.append(body.replace("\\n", "\n").replace("\\t", "\t"))
        document = parse_json(body)
        if document is not NOT_JSON:
            texts.extend(s for s in scalar_texts(document) if "\n" in s or len(s) > 2)
    keys: set[str] = set()
    values: set[str] = set()
    prompts: set[str] = set()
    for text in texts:
        for line in normalized_lines(mask(text)):
            key = line_key(line)
            if not is_substantive(key):
                continue
            keys.add(key)
            value = value_part(key)
            if value:
                values.add(value)
            prompt = PROMPT_RE.match(key)
            if prompt:
                prompts.add(prompt.group("prompt"))
    actions_text = "" if is_observation else "\n".join(normalized_lines(mask("\n".join(texts))))
    return frozenset(keys), frozenset(values), frozenset(prompts), actions_text


def index_history(history: tuple[str, ...]) -> HistoryIndex:
    keys: set[str] = set()
    values: set[str] = set()
    prompts: set[str] = set()
    actions: list[str] = []
    current_action = ""
    for item in history:
        item_keys, item_values, item_prompts, action_text = _item_index(item)
        keys |= item_keys
        values |= item_values
        prompts |= item_prompts
        if not _body(item)[0]:
            actions.append(action_text)
            current_action = _body(item)[1]
    return HistoryIndex(
        frozenset(keys),
        frozenset(values),
        frozenset(prompts),
        "\n".join(actions),
        current_action,
        normalize_line(mask(current_action)),
    )


def _seen(text: str, history: HistoryIndex) -> bool:
    return text in history.line_keys or contains_bounded(history.actions_text, text)


def _line_item(index: int, key: str, history: HistoryIndex) -> Item | None:
    if _seen(key, history):
        return Item("line", key, index)
    stripped = CONTENT_PREFIX_RE.sub("", key, count=1)
    if stripped != key and is_substantive(stripped) and _seen(stripped, history):
        return Item("line", key, index)
    prompt = PROMPT_RE.match(key)
    if prompt and contains_bounded(history.current_command, prompt.group("command")):
        if prompt.group("prompt") in history.prompts:
            return Item("line", key, index)
        return Item("value", prompt.group("command"), index)
    value = value_part(key)
    if value and (value in history.values or contains_bounded(history.actions_text, value)):
        return Item("value", value, index)
    return None


def _echoed_arguments(ground_truth: str, current_action: str) -> list[Item]:
    """Scalars of a JSON result that repeat a scalar of the current JSON call (ids, paths, queries...)."""
    action = parse_json(current_action)
    if action is NOT_JSON:
        return []
    truth = parse_json(ground_truth)
    if truth is NOT_JSON:
        return []
    arguments = {s for s in scalar_texts(action) if content_chars(s) >= MIN_VALUE_CHARS}
    return [Item("value", s) for s in sorted(scalar_texts(truth) & arguments)]


def deterministic_items(truth_keys: list[str], ground_truth: str, history: tuple[str, ...]) -> list[Item]:
    """The deterministic items of a truth given as masked, normalised line keys (one per line)."""
    index = index_history(history)
    items = []
    for i, key in enumerate(truth_keys):
        if is_substantive(key):
            item = _line_item(i, key, index)
            if item:
                items.append(item)
    known_values = {item.text for item in items if item.kind == "value"}
    items.extend(item for item in _echoed_arguments(ground_truth, index.current_action) if item.text not in known_values)
    return items


def recall(items: list[Item], prediction_keys: list[str], prediction_texts: tuple[str, ...]) -> float:
    """Share of deterministic items the prediction has: line items as lines (as often as the truth
    repeats them), value items anywhere. With nothing deterministic there is nothing to miss: 1.0."""
    if not items:
        return 1.0
    needed = Counter(item.text for item in items if item.kind == "line")
    available = Counter(prediction_keys)
    found = sum(min(count, available[text]) for text, count in needed.items())
    values = {item.text for item in items if item.kind == "value"}
    found += sum(1 for value in values if any(_value_present(value, text) for text in prediction_texts))
    return found / (sum(needed.values()) + len(values))


def _value_present(value: str, prediction_text: str) -> bool:
    if contains_bounded(prediction_text, value):
        return True
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]  # the same value written inside a JSON string
    return escaped != value and escaped in prediction_text

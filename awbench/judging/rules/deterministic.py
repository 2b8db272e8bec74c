"""Tier 1, deterministic content: the parts of the ground truth that the model could derive from what
it saw, i.e. the trajectory so far (earlier actions and observations) and the current action.

All texts are compared after masking and whitespace normalisation. A ground-truth line is a
deterministic *line* when it
* is a line of an earlier observation or action (a file read again, a screen element still shown), or
* occurs inside an action (`echo hello` -> `hello`, a heredoc or an editor call writing a file), or
* is a shell prompt echoing the current command after a prompt seen before.
Otherwise parts of it can be deterministic *values*, found anywhere in the prediction:
* the line without a line-number / diff / list / element-id prefix, or the value of a `key: value`
  line, when that was seen before;
* a `: `-separated part or a quoted string that occurs in an action (`cat: FILE: No such file`);
* an argument of the current call echoed in the result (JSON scalars and quoted strings of the action:
  ids, paths, queries, typed text, commit messages).
Lines without content of their own (`"user": {`, `"closed_at": null`, `}`, `</node>` or metadata only) are not
checked."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from awbench.domains import OBSERVATION_MARKER
from awbench.judging.rules.jsonish import NOT_JSON, parse_json, walk
from awbench.judging.rules.masking import mask
from awbench.judging.rules.text import (
    content_chars,
    contains_bounded,
    count_bounded,
    line_key,
    normalize_line,
    normalized_lines,
)

ACTION_HEADING = "**Action:**"
ACTION_START_RE = re.compile(r"\s*(?:### Turn \d+\s*)?\*\*Action:\*\*")
# A prefix that frames content shown elsewhere: line numbers (`cat -n`, `grep -n`, `[L4]`), diff markers,
# list numbers, accessibility element ids (which change when a page reloads).
CONTENT_PREFIX_RE = re.compile(r"^(?:\d+[:|.]?\s|[+-]\s?|>\s|[\w./-]+:\d+:\s?|\[[^\]\s]{1,12}\]\s)")
# A shell prompt followed by a command: `root@host:/app# ls`, `user@box:~$ make`, `$ ls`, `>>> x`.
PROMPT_RE = re.compile(r"^(?P<prompt>(?:\([^)]*\)\s*)?(?:[\w.-]+@[^\s:]+:\S*\s?[#$%]|[\w.-]+[#$]|[#$%]|>>>))\s(?P<command>.+)$")
KEY_VALUE_RE = re.compile(r"^[\"']?[\w .-]{1,40}?[\"']?\s*[:=]\s*(?P<value>.+)$")
JSON_KEY_RE = re.compile(r"^\"[^\"]*\"\s*:\s*")
# Markup that is syntax only: closing tags, declarations and processing instructions, comments.
MARKUP_SYNTAX_RE = re.compile(r"</[\w:.-]+\s*>|<\?.*?\?>|<![^>]*>")
# Quoted strings consumed pair by pair (so `a="1" b="xy"` yields "1" and "xy"); a JSON key has a colon after it.
QUOTED_RE = re.compile(r"\"([^\"\n]*)\"(\s*:)?|'([^'\n]*)'(\s*:)?")
VALUE_TRIM = " \"'{}[],;"
# Keys of a JSON call whose values name the operation or a screen position rather than pass content.
NOT_ARGUMENTS = frozenset({"tool", "action", "command", "x", "y"})
MIN_LINE_CHARS = 2  # letters and digits outside placeholders for a line to be checked at all
MIN_VALUE_CHARS = 3  # ... for a value, which is searched for anywhere and so must not match by chance
UNINFORMATIVE_VALUES = frozenset({"true", "false", "null", "none", "yes", "no", "ok"})


@dataclass(frozen=True)
class Item:
    """One deterministic piece of the truth: a whole line (matched as a line) or a value (found anywhere).
    `novel` marks what the previous observation did not already show: the effect of the action."""

    kind: str  # "line" or "value"
    text: str
    line_index: int | None  # position among the truth's normalised lines; None for echoed arguments
    novel: bool


@dataclass(frozen=True)
class _Seen:
    """What one history item contributes."""

    is_observation: bool
    keys: frozenset[str]
    fragments: frozenset[str]  # values of its lines and its lines without their prefix
    prompts: frozenset[str]
    text: str  # masked, normalised lines (for actions: with the strings of a JSON action)
    arguments: tuple[str, ...]  # values passed in the action


@dataclass(frozen=True)
class HistoryIndex:
    keys: frozenset[str]
    fragments: frozenset[str]
    prompts: frozenset[str]
    actions_text: str
    arguments: tuple[str, ...]  # of the current action
    current_command: str  # the current action masked and on one line, to find a prompt's command echo in
    previous_keys: frozenset[str]
    previous_text: str


def _informative(value: str) -> bool:
    return content_chars(value) >= MIN_VALUE_CHARS and value.lower() not in UNINFORMATIVE_VALUES


def has_content(key: str) -> bool:
    """Whether a line says something beyond JSON layout, a key and metadata placeholders."""
    rest = MARKUP_SYNTAX_RE.sub("", JSON_KEY_RE.sub("", key)).strip(VALUE_TRIM)
    return content_chars(rest) >= MIN_LINE_CHARS and rest.lower() not in UNINFORMATIVE_VALUES


def _quoted(text: str) -> Iterable[str]:
    for m in QUOTED_RE.finditer(text):
        if not (m.group(2) or m.group(4)):
            yield m.group(1) if m.group(1) is not None else m.group(3)


def _clean(candidates: Iterable[str | None]) -> list[str]:
    values = (c.strip(VALUE_TRIM) for c in candidates if c)
    return list(dict.fromkeys(v for v in values if _informative(v)))


def key_value(key: str) -> list[str]:
    """The value of a `key: value` or `key=value` line, if it is informative."""
    m = KEY_VALUE_RE.match(key)
    return _clean([m.group("value")] if m else [])


def echo_candidates(key: str) -> list[str]:
    """Parts of a line that may repeat what the agent passed: `: `-separated parts (`cat: FILE: No such
    file`) and quoted strings (`text="typed"`). Only checked against the actions: as fragments of earlier
    observations they would mostly be attribute values such as class names and coordinates."""
    return _clean([*key.split(": ")[1:], *_quoted(key)])


def _body(item: str, is_observation: bool) -> str:
    """The item without its heading (`### Turn N` / `**Action:**`, or the observation marker)."""
    if is_observation:
        stripped = item.lstrip()
        return stripped[len(OBSERVATION_MARKER) :].lstrip("\n") if stripped.startswith(OBSERVATION_MARKER) else item
    return item.split(ACTION_HEADING, 1)[1].lstrip("\n") if ACTION_HEADING in item else item


def _is_observation(item: str, is_last: bool) -> bool:
    """The last item is the current action; earlier ones are actions when they carry the action heading
    (observations may come with or without their marker)."""
    return not is_last and ACTION_START_RE.match(item) is None


def _argument_values(document: object) -> list[str]:
    """Strings and numbers passed in a JSON call, except the operation's name and screen coordinates."""
    values = []
    for path, value in walk(document):
        if path.rsplit(".", 1)[-1] in NOT_ARGUMENTS or isinstance(value, bool):
            continue
        if isinstance(value, str):
            values.append(value)
        elif isinstance(value, (int, float)):
            values.append(json.dumps(value))
    return values


def _action_texts(body: str) -> tuple[list[str], list[str]]:
    """(texts to search, argument values) of an action: the raw text, its escapes expanded (`printf 'a\\nb'`),
    and for a JSON call its strings (a file's content, a shell command)."""
    texts = [body]
    if "\\n" in body:
        texts.append(body.replace("\\n", "\n").replace("\\t", "\t"))
    arguments: list[str] = []
    document = parse_json(body)
    if document is not NOT_JSON:
        strings = [value for _path, value in walk(document) if isinstance(value, str)]
        texts.extend(s for s in strings if "\n" in s)
        arguments.extend(_argument_values(document))
        arguments.extend(q for s in strings for q in _quoted(s))
    else:
        arguments.extend(_quoted(body))
    masked = (normalize_line(mask(a)) for a in arguments if "\n" not in a)
    return texts, list(dict.fromkeys(a for a in masked if _informative(a)))


@lru_cache(maxsize=1024)
def _seen_in(item: str, is_observation: bool) -> _Seen:
    """What one history item adds to the index; cached, as a trajectory's prefix is scored once per
    evaluated turn and per candidate model."""
    body = _body(item, is_observation)
    texts, arguments = ([body], []) if is_observation else _action_texts(body)
    keys: set[str] = set()
    fragments: set[str] = set()
    prompts: set[str] = set()
    lines: list[str] = []
    for text in texts:
        for line in normalized_lines(mask(text)):
            lines.append(line)
            key = line_key(line)
            if not has_content(key):
                continue
            keys.add(key)
            fragments.update(key_value(key))
            stripped = CONTENT_PREFIX_RE.sub("", key, count=1)
            if stripped != key:
                fragments.add(stripped)
            prompt = PROMPT_RE.match(key)
            if prompt:
                prompts.add(prompt.group("prompt"))
    return _Seen(is_observation, frozenset(keys), frozenset(fragments), frozenset(prompts), "\n".join(lines), tuple(arguments))


def index_history(history: tuple[str, ...]) -> HistoryIndex:
    keys: set[str] = set()
    fragments: set[str] = set()
    prompts: set[str] = set()
    actions: list[str] = []
    current: _Seen | None = None
    previous: _Seen | None = None
    for i, item in enumerate(history):
        seen = _seen_in(item, _is_observation(item, i == len(history) - 1))
        keys |= seen.keys
        fragments |= seen.fragments
        prompts |= seen.prompts
        if seen.is_observation:
            previous = seen
        else:
            actions.append(seen.text)
            current = seen
    return HistoryIndex(
        keys=frozenset(keys),
        fragments=frozenset(fragments),
        prompts=frozenset(prompts),
        actions_text="\n".join(actions),
        arguments=current.arguments if current else (),
        current_command=normalize_line(current.text) if current else "",
        previous_keys=previous.keys if previous else frozenset(),
        previous_text=previous.text if previous else "",
    )


def _in_actions(text: str, history: HistoryIndex) -> bool:
    """Inside an action, and long enough not to be there by chance."""
    return content_chars(text) >= MIN_VALUE_CHARS and contains_bounded(history.actions_text, text)


def _seen_line(text: str, history: HistoryIndex) -> bool:
    return text in history.keys or _in_actions(text, history)


def _line_items(index: int, key: str, history: HistoryIndex) -> list[Item]:
    if _seen_line(key, history):
        return [Item("line", key, index, key not in history.previous_keys)]
    prompt = PROMPT_RE.match(key)
    if prompt and contains_bounded(history.current_command, prompt.group("command")):
        if prompt.group("prompt") in history.prompts:
            return [Item("line", key, index, True)]
        return [Item("value", prompt.group("command"), index, True)]
    stripped = CONTENT_PREFIX_RE.sub("", key, count=1)
    seen_before = [stripped] if stripped != key and has_content(stripped) else []
    seen_before += key_value(key)
    values = [v for v in seen_before if v in history.fragments or _seen_line(v, history)]
    values += [v for v in echo_candidates(key) if _in_actions(v, history)]
    return [
        Item("value", value, index, not contains_bounded(history.previous_text, value))
        for value in dict.fromkeys(values)
    ]


def deterministic_items(truth_keys: list[str], history: tuple[str, ...]) -> list[Item]:
    """The deterministic items of a truth given as masked, normalised line keys (one per line)."""
    index = index_history(history)
    items = [item for i, key in enumerate(truth_keys) if has_content(key) for item in _line_items(i, key, index)]
    known_values = {item.text for item in items if item.kind == "value"}
    truth_text = "\n".join(truth_keys)
    items.extend(
        Item("value", argument, None, not contains_bounded(index.previous_text, argument))
        for argument in index.arguments
        if argument not in known_values and contains_bounded(truth_text, argument)
    )
    return items


def _share_found(items: list[Item], prediction_keys: Counter[str], prediction_texts: tuple[str, ...]) -> float:
    needed = Counter(item.text for item in items if item.kind == "line")
    found = sum(min(count, prediction_keys[text]) for text, count in needed.items())
    values = Counter(item.text for item in items if item.kind == "value")
    found += sum(_value_count(value, count, prediction_texts) for value, count in values.items())
    return found / (sum(needed.values()) + sum(values.values()))


def recall(items: list[Item], prediction_keys: list[str], prediction_texts: tuple[str, ...]) -> float | None:
    """Share of deterministic items the prediction has: line items as lines, value items anywhere, each as
    often as the truth holds it (a value on five lines of the truth is five items). When some items are new
    since the previous observation, half of the part is their share: copying the last screen must not pass
    for predicting the action's effect. None when nothing is deterministic: there is nothing to check."""
    if not items:
        return None
    available = Counter(prediction_keys)
    overall = _share_found(items, available, prediction_texts)
    novel = [item for item in items if item.novel]
    if not novel or len(novel) == len(items):
        return overall
    return (overall + _share_found(novel, available, prediction_texts)) / 2


def _value_count(value: str, needed: int, prediction_texts: tuple[str, ...]) -> int:
    """How many of the `needed` occurrences of a value the prediction has, in any of its texts, as written
    or escaped inside a JSON string."""
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    forms = (value,) if escaped == value else (value, escaped)
    best = 0
    for text in prediction_texts:
        for form in forms:
            best = max(best, count_bounded(text, form, needed) if form == value else min(needed, text.count(form)))
            if best == needed:
                return best
    return best

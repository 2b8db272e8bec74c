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
from typing import NamedTuple

from awbench.domains import OBSERVATION_MARKER
from awbench.judging.rules.jsonish import NOT_JSON, parse_json, walk
from awbench.judging.rules.masking import mask, mask_line
from awbench.judging.rules.text import (
    contains_bounded,
    count_bounded,
    has_content_chars,
    line_key,
    normalize_line,
    split_lines,
    words,
    words_of,
)

ACTION_HEADING = "**Action:**"
ACTION_START_RE = re.compile(r"\s*(?:### Turn \d+\s*)?\*\*Action:\*\*")
# A prefix that frames content shown elsewhere: line numbers (`cat -n`, `grep -n`, `[L4]`), diff markers,
# list numbers, accessibility element ids (which change when a page reloads).
CONTENT_PREFIX_RE = re.compile(r"^(?:\d+[:|.]?\s|[+-]\s?|>\s|[\w./-]+:\d+:\s?|\[[^\]\s]{1,12}\]\s)")
# A shell prompt followed by a command: `root@host:/app# ls`, `user@box:~$ make`, `$ ls`, `>>> x`.
PROMPT_RE = re.compile(
    r"^(?P<prompt>(?:\([^)]*\)\s*)?(?:[\w.-]+@[^\s:]+:\S*\s?[#$%]|[\w.-]+[#$]|[#$%]|>>>))\s(?P<command>.+)$"
)
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


class Item(NamedTuple):
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
    words: frozenset[str]  # of `text`, for actions (see words_of)


class _Prefix:
    """The index of the history items before the current action. Their reading does not change when the
    history grows (only the last item is read as the current action whatever its heading), so a trajectory's
    prefix is extended in place from turn to turn instead of being rebuilt."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.seen: list[_Seen] = []
        self.keys: set[str] = set()
        self.fragments: set[str] = set()
        self.prompts: set[str] = set()
        self.actions = 0
        self.action_words: set[str] = set()
        self.actions_text = ""  # the texts of its actions joined by "\n"
        self.previous: _Seen | None = None  # the last observation

    @classmethod
    def of(cls, items: Iterable[str], known: _Prefix | None = None) -> _Prefix:
        """The prefix of `items`; what `known` already read of a common beginning is reused."""
        prefix = cls()
        items = list(items)
        reusable = 0
        if known is not None:
            for mine, theirs in zip(items, known.items):
                if mine != theirs:
                    break
                reusable += 1
        for i, item in enumerate(items):
            prefix._add(item, known.seen[i] if known is not None and i < reusable else None)
        return prefix

    def starts(self, items: list[str]) -> bool:
        """Whether `items` begins with this prefix's items."""
        n = len(self.items)
        return n <= len(items) and items[:n] == self.items

    def extend(self, items: Iterable[str]) -> None:
        for item in items:
            self._add(item, None)

    def _add(self, item: str, seen: _Seen | None) -> None:
        if seen is None:
            seen = _seen_in(item, _is_observation(item, False))
        self.items.append(item)
        self.seen.append(seen)
        self.keys |= seen.keys
        self.fragments |= seen.fragments
        self.prompts |= seen.prompts
        if seen.is_observation:
            self.previous = seen
        else:
            self.actions_text = f"{self.actions_text}\n{seen.text}" if self.actions else seen.text
            self.actions += 1
            self.action_words |= seen.words


class HistoryIndex:
    """What the trajectory so far shows: a prefix and the current action (the history's last item)."""

    def __init__(self, prefix: _Prefix, current: str | None) -> None:
        self._prefix = prefix
        self._current = _seen_in(current, False) if current is not None else None
        c = self._current
        if c is None:
            self.actions_text = prefix.actions_text
        else:
            self.actions_text = f"{prefix.actions_text}\n{c.text}" if prefix.actions else c.text
        self.arguments: tuple[str, ...] = c.arguments if c else ()  # of the current action
        # The current action masked and on one line, to find a prompt's command echo in.
        self.current_command = normalize_line(c.text) if c else ""
        previous = prefix.previous
        self.previous_keys: frozenset[str] = previous.keys if previous else frozenset()
        self._previous_fragments: frozenset[str] = previous.fragments if previous else frozenset()
        self.previous_text = previous.text if previous else ""
        self._in_previous: dict[str, bool] = {}
        self._action_words = prefix.action_words | c.words if c else frozenset(prefix.action_words)

    def key_sets(self) -> tuple[set[str] | frozenset[str], frozenset[str], frozenset[str]]:
        """The line keys of the earlier items, of the current action, and of the previous observation."""
        current = self._current.keys if self._current is not None else frozenset()
        return self._prefix.keys, current, self.previous_keys

    def has_key(self, key: str) -> bool:
        return key in self._prefix.keys or (self._current is not None and key in self._current.keys)

    def has_fragment(self, fragment: str) -> bool:
        return fragment in self._prefix.fragments or (self._current is not None and fragment in self._current.fragments)

    def has_prompt(self, prompt: str) -> bool:
        return prompt in self._prefix.prompts or (self._current is not None and prompt in self._current.prompts)

    def in_previous(self, text: str) -> bool:
        """Whether the previous observation shows `text` (see contains_bounded)."""
        known = self._in_previous.get(text)
        if known is None:
            # Its line keys and fragments occur in it, bounded (they end and start at non-word characters). A
            # turn asks this a few dozen times of a new observation: searching it costs less than its word set.
            known = (
                text in self.previous_keys
                or text in self._previous_fragments
                or contains_bounded(self.previous_text, text)
            )
            self._in_previous[text] = known
        return known

    def shares_action_words(self, text_words: list[str]) -> bool:
        """Whether some of `text_words` occur in the actions: if not, no text made of them is inside an action."""
        return not self._action_words.isdisjoint(text_words)

    def in_actions(self, text: str, text_words: list[str] | None = None) -> bool:
        """Inside an action (see contains_bounded), and long enough not to be there by chance; `text_words`
        are `words(text)`, when known."""
        if not has_content_chars(text, MIN_VALUE_CHARS):
            return False
        if not self._action_words.issuperset(words(text) if text_words is None else text_words):
            return False  # a bounded occurrence holds whole words of the actions only
        return contains_bounded(self.actions_text, text)


LINE_CACHE_SIZE = 1 << 13  # line keys whose facts are kept; a truth's lines are read again as history


def _informative(value: str) -> bool:
    return has_content_chars(value, MIN_VALUE_CHARS) and value.lower() not in UNINFORMATIVE_VALUES


@lru_cache(maxsize=LINE_CACHE_SIZE)
def has_content(key: str) -> bool:
    """Whether a line says something beyond JSON layout, a key and metadata placeholders."""
    json_key = JSON_KEY_RE.match(key) if key.startswith('"') else None
    rest = key[json_key.end() :] if json_key else key
    if "<" in rest:
        rest = MARKUP_SYNTAX_RE.sub("", rest)
    rest = rest.strip(VALUE_TRIM)
    return has_content_chars(rest, MIN_LINE_CHARS) and rest.lower() not in UNINFORMATIVE_VALUES


def _quoted(text: str) -> Iterable[str]:
    for m in QUOTED_RE.finditer(text):
        if not (m.group(2) or m.group(4)):
            yield m.group(1) if m.group(1) is not None else m.group(3)


def _clean(candidates: Iterable[str | None]) -> tuple[str, ...]:
    values = (c.strip(VALUE_TRIM) for c in candidates if c)
    return tuple(dict.fromkeys(v for v in values if _informative(v)))


def key_value(key: str) -> tuple[str, ...]:
    """The value of a `key: value` or `key=value` line, if it is informative."""
    m = KEY_VALUE_RE.match(key) if ":" in key or "=" in key else None
    if m is None:
        return ()
    value = m.group("value").strip(VALUE_TRIM)
    return (value,) if _informative(value) else ()


@lru_cache(maxsize=LINE_CACHE_SIZE)
def echo_candidates(key: str) -> tuple[str, ...]:
    """Parts of a line that may repeat what the agent passed: `: `-separated parts (`cat: FILE: No such
    file`) and quoted strings (`text="typed"`). Only checked against the actions: as fragments of earlier
    observations they would mostly be attribute values such as class names and coordinates."""
    if ": " not in key and '"' not in key and "'" not in key:
        return ()
    return _clean([*key.split(": ")[1:], *_quoted(key)])


class _LineFacts(NamedTuple):
    """What the history-independent rules read in one line key."""

    has_content: bool
    stripped: str | None  # the key without its content prefix (line number, diff mark...), if it has one
    stripped_has_content: bool
    values: tuple[str, ...]  # key_value(key)
    prompt: str | None  # a shell prompt and the command after it
    command: str | None


@lru_cache(maxsize=LINE_CACHE_SIZE)
def line_facts(key: str) -> _LineFacts:
    prefix = CONTENT_PREFIX_RE.match(key)
    stripped = key[prefix.end() :] if prefix else None
    # Every prompt PROMPT_RE knows ends in one of these.
    maybe_prompt = "#" in key or "$" in key or "%" in key or ">>>" in key
    prompt = PROMPT_RE.match(key) if maybe_prompt else None
    return _LineFacts(
        has_content=has_content(key),
        stripped=stripped,
        stripped_has_content=stripped is not None and has_content(stripped),
        values=key_value(key),
        prompt=prompt.group("prompt") if prompt else None,
        command=prompt.group("command") if prompt else None,
    )


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


class _Line(NamedTuple):
    """What one line of a history item contributes."""

    text: str  # masked and normalised
    key: str | None  # its line key, when the line has content
    fragments: tuple[str, ...]  # its value and the line without its prefix
    prompt: str | None


# Lines read, by their raw text: a trajectory shows most lines again and again (a file read twice, a screen
# that stays); the size holds the lines of the trajectories in flight.
_lines_read: dict[str, _Line] = {}
LINES_READ_SIZE = 1 << 15


def _read_line(raw: str) -> _Line:
    text = normalize_line(mask_line(raw))
    key = line_key(text)
    facts = line_facts(key)
    if facts.has_content:
        fragments = facts.values if facts.stripped is None else (*facts.values, facts.stripped)
        line = _Line(text, key, fragments, facts.prompt)
    else:
        line = _Line(text, None, (), None)
    if len(_lines_read) >= LINES_READ_SIZE:
        _lines_read.clear()
    _lines_read[raw] = line
    return line


def _read_text(text: str) -> list[_Line]:
    """The lines of `text` as line_keys(mask(text)) has them (without blank lines at either end). A text with
    a process table is masked as a whole first; its masked lines are their own masks."""
    known = _lines_read.get
    lines = [known(raw) or _read_line(raw) for raw in split_lines(mask(text) if "PID" in text else text)]
    start, end = 0, len(lines)
    while start < end and not lines[start].text:
        start += 1
    while end > start and not lines[end - 1].text:
        end -= 1
    return lines[start:end]


@lru_cache(maxsize=256)
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
        for line in _read_text(text):
            lines.append(line.text)
            if line.key is not None:
                keys.add(line.key)
                fragments.update(line.fragments)
                if line.prompt is not None:
                    prompts.add(line.prompt)
    text = "\n".join(lines)
    action_words = frozenset() if is_observation else words_of(text)
    return _Seen(
        is_observation,
        frozenset(keys),
        frozenset(fragments),
        frozenset(prompts),
        text,
        tuple(arguments),
        action_words,
    )


def clear_caches() -> None:
    _lines_read.clear()
    for cached in (_seen_in, line_facts, has_content, echo_candidates):
        cached.cache_clear()


def index_history(history: tuple[str, ...] | list[str]) -> HistoryIndex:
    """The index of a whole history (earlier actions and observations, then the current action)."""
    history = list(history)
    if not history:
        return HistoryIndex(_Prefix(), None)
    return HistoryIndex(_Prefix.of(history[:-1]), history[-1])


def _new_line_items(index: int, key: str, facts: _LineFacts, history: HistoryIndex) -> list[Item]:
    """The items of a truth line that is not a line of the history."""
    # Every text checked against the actions below is made of whole words of the key.
    key_words = words(key)
    near_actions = history.shares_action_words(key_words)
    if near_actions and history.in_actions(key, key_words):
        return [Item("line", key, index, key not in history.previous_keys)]
    if facts.command is not None and contains_bounded(history.current_command, facts.command):
        if facts.prompt is not None and history.has_prompt(facts.prompt):
            return [Item("line", key, index, True)]
        return [Item("value", facts.command, index, True)]
    seen_before = (facts.stripped, *facts.values) if facts.stripped_has_content and facts.stripped else facts.values
    values = [
        v
        for v in seen_before
        if history.has_fragment(v) or history.has_key(v) or (near_actions and history.in_actions(v))
    ]
    if near_actions:
        values += [v for v in echo_candidates(key) if history.in_actions(v)]
    if not values:  # most new lines: nothing of them was seen
        return []
    return [Item("value", value, index, not history.in_previous(value)) for value in dict.fromkeys(values)]


def deterministic_items(truth_keys: list[str], history: tuple[str, ...] | list[str] | HistoryIndex) -> list[Item]:
    """The deterministic items of a truth given as masked, normalised line keys (one per line)."""
    index = history if isinstance(history, HistoryIndex) else index_history(history)
    items: list[Item] = []
    earlier_keys, current_keys, previous_keys = index.key_sets()
    for i, key in enumerate(truth_keys):
        # A line of the history (the common case, kept short; the index holds only lines with content).
        if key in earlier_keys or key in current_keys:
            items.append(Item("line", key, i, key not in previous_keys))
            continue
        facts = line_facts(key)
        if facts.has_content:
            items.extend(_new_line_items(i, key, facts, index))
    known_values = {item.text for item in items if item.kind == "value"}
    truth_text = "\n".join(truth_keys)
    items.extend(
        Item("value", argument, None, not index.in_previous(argument))
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

"""Secrets never reach a file, a log or a message. In any text (`redact`):
- every API key awbench reads (`register_secret`), and every word holding a part of one (MIN_SECRET_CHARS
  characters with two of small letters, capitals and digits: a key split by a space or a line break, or cut
  off), and every key-like variable of the environment;
- what a URL can carry: a password (or a user name) before its host and the values of key-like query
  parameters (`url_secrets_masked`);
- the values of key-like fields written out (`"api_key": "..."`, `token=...`), bearer tokens, and keys of
  the well-known forms (`sk-...`, `hf_...`).
In settings (extra request fields, headers, model and engine arguments: `secrets_masked`), every string of a
field named like a key, and what `redact` masks in the others. Each is replaced by `***` (MASK)."""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
MIN_SECRET_CHARS = 8  # shorter values ("EMPTY", "x", "KEY=VALUE") would mask ordinary words
_KEY_LIKE_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.I)
# A field or query parameter whose value is a secret: `key`, `api_key`, `x-api-key`, `access_token`, `sig`,
# `password`, `Authorization`... (`api-version`, `model`, `max_tokens` are not). The last word of the name decides.
_SECRET_NAME = (
    r"(?:[A-Za-z0-9]+[_.-])*(?:api_?key|apikey|key|token|secret|password|passwd|pwd|sig|signature|auth|"
    r"authorization|credentials?|code|cookie)"
)
_SECRET_QUERY_VALUE = re.compile(rf"(?i)([?&;]{_SECRET_NAME}=)[^&;#\s\"'<>]+")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"'<>]+@")
# Outside URLs, values of at least MIN_SECRET_CHARS: a JSON or Python field ("api_key": "..."), an assignment at
# the start of a word (token=..., as --model-arg takes it), a bearer token (Authorization: Bearer ...).
_SECRET_FIELD_VALUE = re.compile(rf"""(?i)((["']){_SECRET_NAME}\2\s*:\s*(["']))(?:(?!\3).){{{MIN_SECRET_CHARS},}}""")
_SECRET_ASSIGNMENT = re.compile(rf"(?i)(?<![^\s,(])({_SECRET_NAME}=)[^\s&;,#\"'<>]{{{MIN_SECRET_CHARS},}}")
_BEARER_TOKEN = re.compile(rf"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{{{MIN_SECRET_CHARS},}}")
# Keys of the well-known forms (OpenAI, Hugging Face, GitHub, GitLab, Slack, Google): a prefix, then at least 16
# characters; with digits, capitals and small letters all in it (`sk-learn-baseline` is no key).
_KEY_FORM = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk[-_]|hf_|gh[oprsu]_|github_pat_|glpat-|xox[abprs]-|AIza)[A-Za-z0-9_-]{16,}"
)
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_-")
_known: set[str] = set()
# Every MIN_SECRET_CHARS-long part of a known key with two of small letters, capitals and digits in it: a random
# key's parts have them, a word ("pairwise" of "sk-test-pairwise") or a number (a token count) has not.
_fragments: set[str] = set()


def register_secret(value: str | None) -> None:
    if value and len(value) >= MIN_SECRET_CHARS:
        _known.add(value)
        parts = (value[i : i + MIN_SECRET_CHARS] for i in range(len(value) - MIN_SECRET_CHARS + 1))
        _fragments.update(p for p in parts if _kinds(p) >= 2)


def _environment_secrets() -> set[str]:
    return {v for name, v in os.environ.items() if _KEY_LIKE_NAME.search(name) and len(v) >= MIN_SECRET_CHARS}


def redact(text: str) -> str:
    for secret in sorted(_known | _environment_secrets(), key=len, reverse=True):  # longest first: no partial masks
        if secret in text:
            text = text.replace(secret, MASK)
    text = url_secrets_masked(_fragments_masked(text))
    for pattern in (_SECRET_FIELD_VALUE, _SECRET_ASSIGNMENT, _BEARER_TOKEN):
        text = pattern.sub(rf"\1{MASK}", text)
    return _KEY_FORM.sub(lambda found: MASK if _mixed(found[0]) else found[0], text)


def _fragments_masked(text: str) -> str:
    """Each word of `text` (letters, digits, `_` and `-`) holding a part of a known key as one MASK."""
    spans = sorted(_word_around(text, start) for fragment in _fragments for start in _occurrences(text, fragment))
    out, end = [], 0
    for start, stop in spans:
        if start >= end:
            out += [text[end:start], MASK]
        end = max(end, stop)
    return "".join(out) + text[end:]


def _occurrences(text: str, fragment: str) -> list[int]:
    found, start = [], text.find(fragment)
    while start != -1:
        found.append(start)
        start = text.find(fragment, start + 1)
    return found


def _word_around(text: str, start: int) -> tuple[int, int]:
    """The span of the word around `text[start : start + MIN_SECRET_CHARS]`: the key's rest (or its prefix,
    `sk-`, which its parts without two kinds of characters do not hold) goes with it."""
    stop = start + MIN_SECRET_CHARS
    while start > 0 and text[start - 1] in _KEY_CHARACTERS:
        start -= 1
    while stop < len(text) and text[stop] in _KEY_CHARACTERS:
        stop += 1
    return start, stop


def _kinds(word: str) -> int:
    """How many of small letters, capitals and digits `word` has."""
    return sum(any(test(c) for c in word) for test in (str.islower, str.isupper, str.isdigit))


def _mixed(word: str) -> bool:
    return _kinds(word) == 3


def looks_like_key(name: str) -> bool:
    """A value given as the NAME of the environment variable that holds a key, which is more likely the key
    itself: not a variable's name (`sk-...` has dashes), a key of a well-known form, or long and random-looking
    (digits among 20 or more characters, no underscore)."""
    return (
        not _VARIABLE_NAME.fullmatch(name)
        or bool(_KEY_FORM.fullmatch(name) and _mixed(name))
        or (len(name) >= 20 and "_" not in name and any(c.isdigit() for c in name))
    )


def secrets_masked(value: Any, secret: bool = False) -> Any:
    """A JSON-like value (extra request fields and headers, model and engine arguments, a config file's
    options) with its secrets masked: every string of MIN_SECRET_CHARS or more in a field named like a key
    (`api_key`, `Authorization`, `x-api-key`, `token`...), at any depth, and in every other string what
    `redact` masks. `secret`: `value` is itself such a field's."""
    if isinstance(value, Mapping):
        return {k: secrets_masked(v, secret or _secret_name(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [secrets_masked(item, secret) for item in value]
    if isinstance(value, str):
        return MASK if secret and len(value) >= MIN_SECRET_CHARS else redact(value)
    return value


def _secret_name(name: Any) -> bool:
    return isinstance(name, str) and re.fullmatch(_SECRET_NAME, name, re.I) is not None


def holds_mask(value: Any) -> bool:
    """A value (as `secrets_masked` takes) with a MASK in one of its strings: a secret masked where it was
    recorded or printed, which a request would send as `***`."""
    if isinstance(value, Mapping):
        return any(holds_mask(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds_mask(item) for item in value)
    return isinstance(value, str) and MASK in value


def url_secrets_masked(text: str) -> str:
    """Every URL in `text` with `***@` for its user name and password, and `***` for the values of its
    key-like query parameters."""
    return _SECRET_QUERY_VALUE.sub(rf"\1{MASK}", _URL_USERINFO.sub(rf"\1{MASK}@", text))


def url_has_credentials(url: str) -> bool:
    """A user name or password before the host (`http://user:key@host`)."""
    return "@" in urlsplit(url).netloc


def _secret_parameters(url: str) -> list[str]:
    return [value for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=True) if _secret_name(name)]


def register_url_secrets(url: str) -> None:
    """The key-like query parameters of a URL awbench sends requests to, so that an endpoint echoing one
    (without its URL around it) is masked too."""
    for value in _secret_parameters(url):
        register_secret(value)


def url_holds_mask(url: str) -> bool:
    """A URL as a run recorded it, its key masked: requests with it would send `***`."""
    return MASK in _secret_parameters(url)

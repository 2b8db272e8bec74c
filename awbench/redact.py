"""Secrets never reach a file, a log or a message. In any text (`redact`):
- every API key awbench reads (`register_secret`), and every secret of the settings it sends (`register_named_secrets`),
  and every word holding a part of one (MIN_SECRET_CHARS characters with two of small letters, capitals and digits: a
  key split by a space or a line break, or cut off), and every key-like variable of the environment;
- what a URL can carry: a password (or a user name) before its host, the values of key-like parameters of its query
  or fragment, and path segments or a fragment that look like a key (`url_secrets_masked`);
- the values of key-like fields written out (`"api_key": "..."`, `["x-api-key", "..."]`, `token=...`), credentials
  after their scheme (`Bearer ...`, `Basic ...`, `Token ...`), long random values after a key-like name
  (`x-api-key: 4f1c...`), and keys of the well-known forms (`sk-...`, `hf_...`, `gsk_...`, `glpat-...`, AWS access
  key ids, JWTs).
In settings (extra request fields, headers, model and engine arguments: `secrets_masked`), every string of a
field named like a key or of a pair naming one (`["Authorization", "..."]`, `{"name": "X-Api-Key", "value": "..."}`),
and what `redact` masks in the others. Each is replaced by `***` (MASK). A message quoting a value the user gave
quotes it with `quoted`, which does not repeat a value that looks like a key."""

from __future__ import annotations

import os
import re
import string
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
MIN_SECRET_CHARS = 8  # shorter values ("EMPTY", "x", "KEY=VALUE") would mask ordinary words
MIN_RANDOM_CHARS = 16  # a value that looks like a key with no name beside it: shorter ones are names and words
_KEY_LIKE_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD)$", re.I)
# A field or query parameter whose value is a secret: `key`, `api_key`, `x-api-key`, `access_token`, `sig`,
# `password`, `Authorization`, `clientSecret`, `sessionToken`... (`api-version`, `model`, `max_tokens`, `maxTokens`
# are not). The last word of the name decides; words are split by `_`, `.`, `-` or, in camelCase, by a capital.
_SECRET_NAME = (
    r"(?:(?:[A-Za-z0-9]+[_.-])*(?:api_?key|apikey|key|token|secret|password|passwd|pwd|sig|signature|auth|"
    r"authorization|cred(?:ential)?s?|code|cookie)"
    r"|(?-i:[A-Za-z0-9]*[a-z0-9](?:Key|Token|Secret|Password|Passwd|Pwd|Signature|Auth|Authorization|"
    r"Cred(?:ential)?s?|Cookie)))"
)
_SECRET_QUERY_VALUE = re.compile(rf"(?i)([?&;#]{_SECRET_NAME}=)[^&;#\s\"'<>]+")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s\"'<>]+@")
_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://[^\s\"'<>]+")
# A path segment or fragment (what follows is a separator, a punctuation mark after the URL, or its end)
_URL_TOKEN = re.compile(rf"(?<=[/#])[A-Za-z0-9_-]{{{MIN_RANDOM_CHARS},}}(?=[/?#&),;]|$)")
_CREDENTIAL = r"[A-Za-z0-9._~+/=-]"
# Outside URLs, values of at least MIN_SECRET_CHARS, each pattern's `value` after its `head`: a JSON or Python field
# ("api_key": "..."), a pair naming one (["x-api-key", "..."]), an assignment at the start of a word (token=..., as
# --model-arg takes it), a bearer token (Authorization: Bearer ...).
_SECRET_FIELD_VALUE = re.compile(
    rf"""(?i)(?P<head>(["']){_SECRET_NAME}\2\s*:\s*(["']))(?P<value>(?:(?!\3).){{{MIN_SECRET_CHARS},}})"""
)
_SECRET_PAIR_VALUE = re.compile(
    rf"""(?i)(?P<head>[\[(]\s*(["']){_SECRET_NAME}\2\s*,\s*(["']))(?P<value>(?:(?!\3).){{{MIN_SECRET_CHARS},}})"""
)
_SECRET_ASSIGNMENT = re.compile(
    rf"(?i)(?<![^\s,(])(?P<head>{_SECRET_NAME}=)(?P<value>[^\s&;,#\"'<>]{{{MIN_SECRET_CHARS},}})"
)
_BEARER_TOKEN = re.compile(rf"(?i)\b(?P<head>bearer\s+)(?P<value>{_CREDENTIAL}{{{MIN_SECRET_CHARS},}})")
# Basic and Token schemes are words of prose too ("the token expired"): a credential only when `_credential` says so.
_SCHEME_CREDENTIAL = re.compile(rf"(?i)\b(?P<head>(?:basic|token)\s+)(?P<value>{_CREDENTIAL}{{{MIN_SECRET_CHARS},}})")
# A random value after a key-like name and `:` or `=` (`x-api-key: 4f1c...`, `aws_secret_access_key = wJalr...`):
# a secret only when `_random` says so (a sample key, a path, a word is not).
_SECRET_LABELLED = re.compile(
    rf"(?i)(?<![^\s,(\[{{])(?P<head>{_SECRET_NAME}\s*[:=]\s*)(?P<value>[A-Za-z0-9+/=_-]{{{MIN_RANDOM_CHARS},}})"
)
# Keys of the well-known forms, a prefix then at least 16 characters: OpenAI, Anthropic (`sk-ant-`), Stripe (`sk_`),
# OpenRouter (`sk-or-`); Hugging Face, GitHub, GitLab (personal, deploy, runner), Slack, Google; Groq, Replicate,
# xAI, Perplexity, NVIDIA, Cerebras, npm, PyPI. A key only when what follows the prefix is random (`_random_body`):
# `sk-learn-regression-baseline` and `npm_package_json_version_2` are names.
_KEY_FORM = re.compile(
    r"(?<![A-Za-z0-9_-])(?:sk[-_]|hf_|gh[oprsu]_|github_pat_|gl(?:pat|dt|rt)-|xox[abeprs]-|xapp-|AIza|gsk_|r8_|"
    r"xai-|pplx-|nvapi-|csk-|npm_|pypi-)(?P<body>[A-Za-z0-9_-]{16,})"
)
_ALPHANUMERIC_RUN = re.compile(rf"[A-Za-z0-9]{{{MIN_SECRET_CHARS},}}")
# Keys of a fixed form, whatever characters they hold: AWS access key ids, JSON web tokens (header.payload.signature),
# private keys in PEM (to their end, or to the end of a text that cuts them off).
_FIXED_KEY_FORM = re.compile(
    r"(?<![A-Za-z0-9_-])(?:(?:AKIA|ASIA)[A-Z0-9]{16}|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
    r"(?![A-Za-z0-9_-])|-----BEGIN[A-Z ]* PRIVATE KEY-----(?:.*?-----END[A-Z ]* PRIVATE KEY-----|.*)",
    re.S,
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEY_CHARACTERS = frozenset(string.ascii_letters + string.digits + "_-")
# The fields of a mapping that name the header or setting whose `value` it holds ({"name": "X-Api-Key", "value": ...}).
_NAMING_FIELDS = ("name", "key", "header")
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
    for pattern in (_SECRET_FIELD_VALUE, _SECRET_PAIR_VALUE, _SECRET_ASSIGNMENT, _BEARER_TOKEN):
        text = pattern.sub(rf"\g<head>{MASK}", text)
    text = _masked_where(_SCHEME_CREDENTIAL, _credential, text)
    text = _masked_where(_SECRET_LABELLED, _random, text)
    text = _FIXED_KEY_FORM.sub(MASK, text)
    return _KEY_FORM.sub(lambda found: MASK if _random_body(found["body"]) else found[0], text)


def _masked_where(pattern: re.Pattern[str], is_secret: Any, text: str) -> str:
    """`text` with each `value` that `pattern` finds and `is_secret` confirms as MASK."""
    return pattern.sub(lambda found: found["head"] + MASK if is_secret(found["value"]) else found[0], text)


def _credential(word: str) -> bool:
    """A credential rather than a word after `Basic` or `Token`: a digit, base64's `+/=`, or a capital after the
    first character in it."""
    return any(c.isdigit() or c in "+/=" for c in word) or any(c.isupper() for c in word[1:])


def _random(word: str) -> bool:
    """A generated secret rather than a name, a number or a path: digits and letters, either of both cases or
    hexadecimal (Azure's keys)."""
    return any(c.isdigit() for c in word) and (_mixed(word) or bool(_HEX.fullmatch(word)))


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


def _random_body(body: str) -> bool:
    """What follows a key's prefix is random: MIN_SECRET_CHARS letters and digits in a row with two of small
    letters, capitals and digits (a Hugging Face token has no digit, a GitLab one may have none). Words joined by
    `-` or `_` are a name's."""
    return any(_kinds(run) >= 2 for run in _ALPHANUMERIC_RUN.findall(body))


def _random_word(value: str) -> bool:
    """A word of MIN_RANDOM_CHARS or more key characters with small letters, capitals and digits: a key, whatever
    its form."""
    return len(value) >= MIN_RANDOM_CHARS and set(value) <= _KEY_CHARACTERS and _mixed(value)


def looks_like_key(name: str) -> bool:
    """A value given as the NAME of the environment variable that holds a key, which is more likely the key
    itself: not a variable's name (`sk-...` has dashes), a key of a well-known form, or long and random-looking
    (digits among 20 or more characters, no underscore)."""
    return (
        not _VARIABLE_NAME.fullmatch(name)
        or bool((form := _KEY_FORM.fullmatch(name)) and _random_body(form["body"]))
        or (len(name) >= 20 and "_" not in name and any(c.isdigit() for c in name))
    )


def quoted(value: Any) -> str:
    """A value the user gave, quoted for a message refusing it (`got 'abc'`): a key given to the wrong option
    (`--temperature sk-...`) is not repeated, nor a word that looks like one."""
    if isinstance(value, str) and (_random_word(value.strip()) or redact(value) != value):
        return repr(MASK)
    return repr(value)


def secrets_masked(value: Any, secret: bool = False) -> Any:
    """A JSON-like value (extra request fields and headers, model and engine arguments, a config file's
    options) with its secrets masked: every string of MIN_SECRET_CHARS or more in a field named like a key
    (`api_key`, `Authorization`, `x-api-key`, `clientSecret`...) or in a pair naming one, at any depth, and in every
    other string what `redact` masks. `secret`: `value` is itself such a field's."""
    if isinstance(value, Mapping):
        return {name: secrets_masked(item, hidden) for name, item, hidden in _items(value, secret)}
    if isinstance(value, (list, tuple)):
        return [secrets_masked(item, hidden) for _, item, hidden in _items(value, secret)]
    if isinstance(value, str):
        return MASK if secret and len(value) >= MIN_SECRET_CHARS else redact(value)
    return value


def register_named_secrets(value: Any, secret: bool = False) -> None:
    """Every word of a string `secrets_masked` masks by its field's name, registered (`register_secret`): an
    endpoint echoing the request's headers or body is masked wherever its message goes."""
    if isinstance(value, (Mapping, list, tuple)):
        for _, item, hidden in _items(value, secret):
            register_named_secrets(item, hidden)
    elif secret and isinstance(value, str):
        for word in value.split():  # `Bearer <key>`: the key
            register_secret(word)


def _items(value: Mapping[Any, Any] | list[Any] | tuple[Any, ...], secret: bool) -> list[tuple[Any, Any, bool]]:
    """Each (name or index, item, whether the item is a secret's) of a mapping or list. In a mapping a field
    named like a key is; in one naming a header or setting (`{"name": "X-Api-Key", "value": ...}`), its `value`.
    In a pair naming one (`["Authorization", "Bearer ..."]`, as headers are given as lists), the second item."""
    if isinstance(value, Mapping):
        named_by = next((f for f in _NAMING_FIELDS if "value" in value and _secret_name(value.get(f))), None)
        naming = {named_by: False, "value": True} if named_by else {}
        return [(name, item, secret or naming.get(name, _secret_name(name))) for name, item in value.items()]
    pair = len(value) == 2 and _secret_name(value[0])
    return [(i, item, secret or (pair and i == 1)) for i, item in enumerate(value)]


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
    """Every URL in `text` with `***@` for its user name and password, `***` for the values of the key-like
    parameters of its query or fragment (`#access_token=...`), and `***` for each path segment or fragment that
    looks like a key (`/t/<token>/`, `#<token>`: MIN_RANDOM_CHARS or more characters with small letters, capitals
    and digits; a commit's hexadecimal hash is no key). The host is kept."""
    text = _SECRET_QUERY_VALUE.sub(rf"\1{MASK}", _URL_USERINFO.sub(rf"\1{MASK}@", text))
    return _URL.sub(_path_tokens_masked, text)


def _path_tokens_masked(url: re.Match[str]) -> str:
    scheme, separator, rest = url[0].partition("://")
    host_end = min((at for at in map(rest.find, "/?#") if at >= 0), default=len(rest))
    path = _URL_TOKEN.sub(lambda token: MASK if _mixed(token[0]) else token[0], rest[host_end:])
    return scheme + separator + rest[:host_end] + path


def url_has_credentials(url: str) -> bool:
    """A user name or password before the host (`http://user:key@host`)."""
    return "@" in urlsplit(url).netloc


def _url_secrets(url: str) -> list[str]:
    """What `url_secrets_masked` masks in `url` but its user name and password."""
    parts = urlsplit(url)
    named = [v for part in (parts.query, parts.fragment) for n, v in parse_qsl(part, True) if _secret_name(n)]
    tokens = _URL_TOKEN.findall(f"{parts.path}#{parts.fragment}")
    return named + [token for token in tokens if _mixed(token)]


def register_url_secrets(url: str) -> None:
    """The secrets of a URL awbench sends requests to (key-like parameters, path segments and fragments that look
    like keys), so that an endpoint echoing one (without its URL around it) is masked too."""
    for value in _url_secrets(url):
        register_secret(value)


def url_holds_mask(url: str) -> bool:
    """A URL as a run recorded it, its key masked: requests with it would send `***`."""
    return MASK in url
